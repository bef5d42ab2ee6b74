"""A loaded job's own figures from the latency probe's series (LatencyProbe.java): end-to-end
latency percentiles, consumer lag, output rate, per window of time; and each instance's
utilisation from its statistics snapshots.

The probe writes, every second and per arm, the exact histogram of the latencies it saw (whole
milliseconds: production → result read from the output topic), the records read, the input
topic's end offsets and the application's committed offsets. Percentiles are therefore exact
over any window (the histograms add up), never an average of per-second percentiles. Two lags:
`lag` is Kafka's consumer lag (end offsets − committed offsets, which trail by the commit
interval); `backlog` is end offsets − results read, records taken in that have no result yet
(the application writes one result per record), exact to one poll. Pure functions on recorded
series, so they are tested without a broker.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ProbeLine", "Window", "lag_slope", "merge", "percentile", "read_probe",
           "utilisation", "window"]


@dataclass(frozen=True)
class ProbeLine:
    """One second of one arm as the probe saw it."""

    ts_ms: int
    arm: str
    out: int  # results read in this second
    out_total: int  # since the probe started
    lat: Mapping[int, int]  # latency ms -> records
    end: int  # Σ input end offsets (-1: not known this second)
    committed: int
    lag: int
    out_at_end: int | None = None  # results read when `end` was sampled (None: out_total)
    ends: tuple[int, ...] = ()  # the input's end offset per partition (empty: not known)

    @property
    def backlog(self) -> int:
        """Records produced to the input that have no result read yet (-1: not known)."""
        read = self.out_total if self.out_at_end is None else self.out_at_end
        return -1 if self.end < 0 else max(0, self.end - read)


def _line(raw: Mapping[str, Any]) -> ProbeLine:
    return ProbeLine(int(raw["ts_ms"]), str(raw["arm"]), int(raw["out"]),
                     int(raw.get("out_total", 0)),
                     {int(k): int(v) for k, v in dict(raw.get("lat", {})).items()},
                     int(raw.get("end", -1)), int(raw.get("committed", -1)),
                     int(raw.get("lag", -1)),
                     int(raw["out_at_end"]) if "out_at_end" in raw else None,
                     tuple(int(v) for v in raw.get("ends", ())))


def read_probe(path: Path) -> list[ProbeLine]:
    """The probe's lines so far (a line being written, the last, is skipped)."""
    if not path.is_file():
        return []
    out: list[ProbeLine] = []
    for text in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(_line(json.loads(text)))
        except (ValueError, KeyError):
            continue
    return out


def merge(hists: Iterable[Mapping[int, int]]) -> dict[int, int]:
    out: dict[int, int] = {}
    for h in hists:
        for ms, n in h.items():
            out[ms] = out.get(ms, 0) + n
    return out


def percentile(hist: Mapping[int, int], q: float) -> float | None:
    """The q-th percentile (0 < q ≤ 100, nearest rank) of a latency histogram; None if empty."""
    if not 0 < q <= 100:
        raise ValueError(f"percentile q must be in (0, 100], got {q}")
    total = sum(hist.values())
    if total == 0:
        return None
    rank = max(1, -(-total * q // 100))  # ceil(total * q / 100)
    seen = 0
    for ms in sorted(hist):
        seen += hist[ms]
        if seen >= rank:
            return float(ms)
    return float(max(hist))


def lag_slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope (units per second) of (seconds, value) points; 0 with fewer than 2."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    if var == 0:
        return 0.0
    return sum((t - mx) * (v - my) for t, v in points) / var


@dataclass(frozen=True)
class Window:
    """One arm over [start_ms, end_ms): latency percentiles (ms; None when nothing came out),
    results per second, lag and backlog (mean, max, slope in records/s, last)."""

    arm: str
    start_ms: int
    end_ms: int
    results: int
    out_per_s: float
    p50: float | None
    p95: float | None
    p99: float | None
    max_ms: float | None
    lag_mean: float
    lag_max: float
    backlog_mean: float
    backlog_max: float
    backlog_last: float
    backlog_slope: float
    samples: int

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def window(lines: Sequence[ProbeLine], arm: str, start_ms: int, end_ms: int) -> Window:
    """The arm's figures over the probe's seconds stamped in [start_ms, end_ms)."""
    if end_ms <= start_ms:
        raise ValueError(f"window end {end_ms} must be after its start {start_ms}")
    mine = [ln for ln in lines if ln.arm == arm and start_ms <= ln.ts_ms < end_ms]
    hist = merge(ln.lat for ln in mine)
    results = sum(ln.out for ln in mine)
    known = [ln for ln in mine if ln.end >= 0]
    lags = [float(ln.lag) for ln in known]
    backlog = [float(ln.backlog) for ln in known]
    slope = lag_slope([((ln.ts_ms - start_ms) / 1000.0, float(ln.backlog)) for ln in known])
    top = max(hist) if hist else None
    return Window(arm, start_ms, end_ms, results, results * 1000.0 / (end_ms - start_ms),
                  percentile(hist, 50), percentile(hist, 95), percentile(hist, 99),
                  float(top) if top is not None else None,
                  sum(lags) / len(lags) if lags else 0.0, max(lags, default=0.0),
                  sum(backlog) / len(backlog) if backlog else 0.0, max(backlog, default=0.0),
                  backlog[-1] if backlog else 0.0, slope, len(mine))


def utilisation(before: Mapping[str, Mapping[str, Any]],
                after: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Each instance's busy time / wall time between two of its statistics snapshots
    (FlightsApp's stats/<node>.json): the processing time of its tasks (measured compute plus
    the service cost waited, ServiceCost.java) over the time between the snapshots. An
    instance that restarted in between (another pid) or has no earlier snapshot is left out."""
    out: dict[str, float] = {}
    for node, snap in after.items():
        prior = before.get(node)
        if prior is None or prior.get("pid") != snap.get("pid"):
            continue
        wall_ns = (int(snap["ts_ms"]) - int(prior["ts_ms"])) * 1_000_000
        if wall_ns <= 0:
            continue
        old = prior.get("tasks", {})
        busy = sum(int(c["proc_ns"]) - int(old.get(t, {}).get("proc_ns", 0))
                   for t, c in snap.get("tasks", {}).items())
        out[node] = busy / wall_ns
    return out
