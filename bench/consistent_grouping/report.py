"""Verdicts, the summary table and the plots of `reconf bench consistent-grouping`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Check", "close", "plot", "print_checks", "tiny", "within", "yes"]


@dataclass(frozen=True)
class Check:
    """One paper number or claim next to ours: match / beat / miss (or n/c: not comparable)."""

    figure: str
    claim: str
    paper: str
    ours: str
    verdict: str

    def row(self) -> dict[str, Any]:
        return {"kind": "check", **self.__dict__}


def close(figure: str, claim: str, paper: float, ours: float, rel: float = 0.3) -> Check:
    """Lower is better: within ±rel of the paper's value matches, below beats, above misses."""
    if paper <= 0:
        verdict = "match" if ours <= 1e-9 else "miss"
    elif ours < paper / (1 + rel):
        verdict = "beat"
    elif ours <= paper * (1 + rel):
        verdict = "match"
    else:
        verdict = "miss"
    return Check(figure, claim, f"{paper:.3g}", f"{ours:.3g}", verdict)


def tiny(figure: str, claim: str, paper: float, ours: float, limit: float = 0.01) -> Check:
    """Both near zero (below `limit`) matches."""
    return Check(figure, claim, f"{paper:.2g}", f"{ours:.2g}", "match" if ours < limit else "miss")


def within(figure: str, claim: str, paper: float, ours: float, bound: float) -> Check:
    """A bound the paper states (e.g. ε): at or below it matches."""
    return Check(figure, claim, f"{paper:.3g}", f"{ours:.3g}",
                 "match" if ours <= bound * (1 + 1e-9) else "miss")


def yes(figure: str, claim: str, ok: bool, ours: str, paper: str = "yes") -> Check:
    """A qualitative claim of the paper, checked on our numbers."""
    return Check(figure, claim, paper, ours, "match" if ok else "miss")


def print_checks(checks: list[Check]) -> None:
    print(f"\n{'figure':<10}{'claim':<58}{'paper':>12}{'ours':>22}  verdict")
    for c in checks:
        print(f"{c.figure:<10}{c.claim[:57]:<58}{c.paper:>12}{c.ours[:21]:>22}  {c.verdict}")
    tally = {v: sum(c.verdict == v for c in checks) for v in ("match", "beat", "miss", "n/c")}
    print("summary: " + ", ".join(f"{v} {n}" for v, n in tally.items() if n))


def plot(path: str, rows: list[dict[str, Any]]) -> None:
    """Fig. 4-style imbalance/memory curves and the queue figures (7, 8, 11, 12) over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 3, figsize=(15, 12))
    f4 = [r for r in rows if r.get("figure") == "fig4" and r.get("bins") == 100]
    for ax, metric in zip(axes[0][:2], ("imbalance", "memory"), strict=True):
        for pol in sorted({r["policy"] for r in f4}):
            pts = sorted((r["z"], r[metric]) for r in f4 if r["policy"] == pol)
            ax.plot([p[0] for p in pts], [max(p[1], 1e-7) for p in pts], marker="o", label=pol)
        ax.set_yscale("log")
        ax.set_xlabel("zipf z (100 VWs)")
        ax.set_title(f"Fig. 4: normalized {metric}" if metric == "imbalance" else "Fig. 4: memory")
        ax.legend(fontsize=7)
    f5 = sorted((r["epsilon"], r["imbalance"], r["memory"]) for r in rows
                if r.get("figure") == "fig5" and r["policy"] == "porc")
    ax = axes[0][2]
    ax.plot([e for e, _, _ in f5], [i for _, i, _ in f5], marker="o", label="imbalance")
    ax2 = ax.twinx()
    ax2.plot([e for e, _, _ in f5], [m for _, _, m in f5], marker="s", color="C1", label="memory")
    ax.set_xscale("symlog", linthresh=1e-3)
    ax.set_title("Fig. 5: ε sweep (10 workers x 10 VWs)")
    series = [("fig7", "queue_spread"), ("fig8", "queue_spread"), ("fig8", "latency"),
              ("fig8", "util_spread"), ("fig11", "latency"), ("fig12", "latency")]
    for ax, (figname, metric) in zip([*axes[1], *axes[2]], series, strict=True):
        for r in rows:
            if r.get("figure") == figname and "series" in r:
                label = r["policy"] + (f" α={r['vws_per_worker']}" if figname == "fig11" else "")
                ax.plot(r["series"][metric], label=label)
        ax.set_yscale("symlog")
        ax.set_xlabel("period (t0)")
        ax.set_title(f"{figname}: {metric}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
