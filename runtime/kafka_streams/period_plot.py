"""One loaded period as the job lived it, drawn: latency (p50 and p99 of each second) and the
backlog and consumer lag, second by second, from the period record's `series`
(loaded.per_second). The PNG goes on the MLflow run of the plan made from that period (the
pipeline's record of the period, `reconf audit` lists it), so that a p99 figure in the run's
metrics can be read against when in the period it happened: a rebalance pause, a hot spot, a
backlog building up.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from schemas.tracking import Artifact

__all__ = ["ARTIFACT", "period_plot"]

ARTIFACT = Artifact.KSTREAMS_LOAD_PNG


def _num(v: Any) -> float:
    return math.nan if v is None else float(v)


def period_plot(record: dict[str, Any], folder: Path) -> Path | None:
    """`folder/<ARTIFACT>` drawn from `record` (a periods/<period>.json under load); None when
    the record has no per-second series (a period without the open-loop load)."""
    series = record.get("series") or []
    if not series:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [float(s[0]) for s in series]
    fig, (ax_lat, ax_lag) = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    ax_lat.plot(t, [_num(s[1]) for s in series], marker=".", label="p50 of the second")
    ax_lat.plot(t, [_num(s[2]) for s in series], marker=".", label="p99 of the second")
    p99 = (record.get("latency_ms") or {}).get("p99")
    if p99 is not None:
        ax_lat.axhline(float(p99), color="grey", linestyle="--", label=f"period p99 {p99:.0f} ms")
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("latency (ms)")
    ax_lag.plot(t, [_num(s[3]) for s in series], label="backlog (no result yet)")
    ax_lag.plot(t, [_num(s[4]) for s in series], label="consumer lag (committed)")
    ax_lag.set_ylabel("records")
    ax_lag.set_xlabel("seconds into the period")
    loop = record.get("open_loop") or {}
    ax_lat.set_title(f"{record.get('period_end', '')}: {float(loop.get('rate', 0)):.0f} records/s "
                     f"in, {float(record.get('out_per_s', 0)):.0f}/s out, hot spot "
                     f"{loop.get('hot_spot', 0)}", fontsize=9)
    for ax in (ax_lat, ax_lag):
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ARTIFACT
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
