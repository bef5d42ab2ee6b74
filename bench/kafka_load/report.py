"""The load benchmark's table, its targets (match / beat / miss) and its plot.

Targets (measured in one run, 3 instances, 12 tasks, skewed keys):
- equal capacities: a reconf arm's maximum sustainable rate ≥ 1.3× the default assignor's;
- capacities 1, 1, 2: ≥ 1.5×;
- at 90 % of the default's maximum: a reconf arm's p99 ≤ ½ the default's (before the shift);
- after the hot-spot shift: the arm holds again within 2 periods;
- migrations within the budget every period.
`beat` on a ratio: beyond the target by more than one rate step (the ramp's resolution); on p99:
≤ ¼ of the default's; on the shift: within 1 period.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.kafka_load.series import Target, differs, ratio_target

__all__ = ["measured_lines", "p99_target", "plot", "table", "targets"]

RATIO_TARGETS = {"equal": 1.3, "hetero": 1.5}


def _fmt(v: float | None, unit: str = "") -> str:
    return "-" if v is None else f"{v:,.0f}{unit}"


def table(results: Sequence[dict[str, Any]]) -> list[str]:
    """One line per configuration and arm."""
    out = ["config   arm      max rate/s   x default | at 90 % of default's max: p50 ms  p99 ms  "
           "lag mean  lag max  util per instance   | moves/period  restore ms | shift: periods "
           "to stable"]
    for res in results:
        base = res["max_rate"].get("default")
        for arm, best in res["max_rate"].items():
            ratio = "-" if not best or not base else f"{best / base:.2f}"
            at_least = ">=" if res["censored"].get(arm) else "  "
            fixed = res.get("fixed", {}).get(arm, {}).get("before_shift", {})
            prows = [r for r in res["rows"] if r["arm"] == arm and r["phase"] == "fixed"]
            pre = [r for r in prows if r["hot_spot"] == 0]
            util: dict[str, list[float]] = {}
            for r in pre:
                for n, u in r["utilisation"].items():
                    util.setdefault(n, []).append(u)
            utils = " ".join(f"{sum(v) / len(v):.2f}" for _, v in sorted(util.items())) or "-"
            moves = [len(r["moved"]) for r in res["rows"] if r["arm"] == arm]
            restore = [r["restore_ms"] for r in res["rows"] if r["arm"] == arm]
            stable = res.get("stable_after_shift", {}).get(arm, "-")
            out.append(
                f"{res['config']:8} {arm:7} {at_least}{_fmt(best):>9}   {ratio:>6}    | "
                f"{_fmt(fixed.get('p50')):>22}  {_fmt(fixed.get('p99')):>6}  "
                f"{_fmt(fixed.get('lag_mean')):>8}  {_fmt(fixed.get('lag_max')):>7}  {utils:18} | "
                f"{(sum(moves) / len(moves)) if moves else 0:4.2f} (max {max(moves, default=0)})"
                f"  {max(restore, default=0):>6}   | {'-' if stable is None else stable}")
    return out


def targets(results: Sequence[dict[str, Any]], budget: int, step_pct: float) -> list[Target]:
    """The issue's targets for every reconf arm of every configuration run."""
    out: list[Target] = []
    for res in results:
        kind = "equal" if len(set(res["capacities"])) == 1 else "hetero"
        base = res["max_rate"].get("default")
        for arm, best in res["max_rate"].items():
            if arm == "default":
                continue
            caps = ",".join(f"{c:g}" for c in res["capacities"])
            out.append(ratio_target(f"{arm}: max rate vs default, capacities {caps}", best, base,
                                    RATIO_TARGETS[kind], 1 + step_pct / 100,
                                    bool(res["censored"].get(arm)), res.get("bound")))
            fixed = res.get("fixed", {})
            if arm in fixed and "default" in fixed:
                out.append(p99_target(f"{arm}: p99 at 90 % of default's max ({caps})",
                                      fixed[arm]["before_shift"]["p99"],
                                      fixed["default"]["before_shift"]["p99"],
                                      res.get("floor", {}), arm, res.get("warm_rate")))
            if arm in res.get("stable_after_shift", {}):
                k = res["stable_after_shift"][arm]
                out.append(Target(f"{arm}: lag stable after the hot-spot shift ({caps})",
                                  "not stable by the end" if k is None else f"{k} period(s)",
                                  "<= 2 periods",
                                  "miss" if k is None or k > 2 else "beat" if k <= 1 else "match"))
            mine_rows = [r for r in res["rows"] if r["arm"] == arm]
            worst_plan = max((r["planned_moves"] for r in mine_rows if r["published"]), default=0)
            worst_run = max((len(r["moved"]) for r in mine_rows), default=0)
            out.append(Target(f"{arm}: migrations within the budget every period ({caps})",
                              f"plans <= {worst_plan}, moved in a period <= {worst_run}",
                              f"<= {budget}",
                              "match" if max(worst_plan, worst_run) <= budget else "miss"))
    return out


def p99_target(name: str, mine: float | None, theirs: float | None,
               floor: Mapping[str, Mapping[str, Any]], arm: str,
               warm_rate: float | None) -> Target:
    """p99 ≤ ½ the default's (beat: ≤ ¼). A miss is `differs` when the run's floor explains
    it: above each arm's own floor (its p99 at the warm-up's low rate), the arm's p99 is within
    ½ of the default's — the part placement can change meets the target, the part every arm
    pays (batching, the wire, the machine) does not shrink with placement."""
    if mine is None or not theirs:
        return Target(name, "n/a", "<= 0.5x default", "n/a")
    r = mine / theirs
    measured = f"{mine:.0f} vs {theirs:.0f} ms ({r:.2f}x)"
    verdict = "beat" if r <= 0.25 else "match" if r <= 0.5 else "miss"
    f_mine = floor.get(arm, {}).get("p99")
    f_theirs = floor.get("default", {}).get("p99")
    if f_mine is None or f_theirs is None:
        return Target(name, measured, "<= 0.5x default", verdict)
    wire = floor.get("wire", {}).get("p99")
    above_mine, above_theirs = mine - f_mine, theirs - f_theirs
    measured += (f"; floor p99 at {warm_rate or 0:.0f}/s {f_mine:.0f} vs {f_theirs:.0f} ms"
                 + ("" if wire is None else f" (wire {wire:.0f})"))
    if above_theirs > 0:
        q = max(0.0, above_mine) / above_theirs
        measured += f", above it {above_mine:.0f} vs {above_theirs:.0f} ms ({q:.2f}x)"
        if verdict == "miss" and q <= 0.5:
            verdict = differs(
                f"the floor every arm pays (p99 {f_mine:.0f}/{f_theirs:.0f} ms at "
                f"{warm_rate or 0:.0f}/s) is {100 * f_theirs / theirs:.0f} % of the default's "
                f"p99; above it {arm}'s p99 is {q:.2f}x the default's")
    return Target(name, measured, "<= 0.5x default", verdict)


def measured_lines(results: Sequence[dict[str, Any]]) -> list[str]:
    """What explains the targets, from the same run: per configuration the floor (each arm's
    latency at the warm-up's rate, periods without moves; the wire) and the data's bound on the
    maximum-rate ratio (bench/kafka_load/floor.py)."""
    out: list[str] = []
    for res in results:
        caps = ",".join(f"{c:g}" for c in res["capacities"])
        floor = res.get("floor") or {}
        if floor:
            parts = [f"{arm} {_fmt(f.get('p50'))}/{_fmt(f.get('p99'))}" for arm, f in floor.items()]
            out.append(f"floor ({caps}), p50/p99 ms at {res.get('warm_rate') or 0:.0f}/s, "
                       f"warm-up periods without moves: {', '.join(parts)}")
        b = res.get("bound")
        if b:
            shares = " ".join(f"{v:.1f}" for v in b["task_share_pct"].values())
            out.append(f"data's bound ({caps}, {b.get('source', 'task loads')}): shares % "
                       f"[{shares}]; the default's busiest "
                       f"instance {b['baseline_peak_pct']:.1f} %, the best placement's "
                       f"{b['best_peak_pct']:.1f} %: max rate ratio <= {b['bound']:.2f}x")
    return out


def plot(results: Sequence[dict[str, Any]], path: Path) -> Path:
    """Per configuration: the offered rate and each arm's results/s, p99 per period (log), and
    the backlog per second (records without a result yet)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, len(results), figsize=(7 * len(results), 9), squeeze=False,
                             sharex="col")
    for col, res in enumerate(results):
        rows = res["rows"]
        t0 = min(r["start_ms"] for r in rows)
        arms = list(res["max_rate"])
        ax_rate, ax_p99, ax_back = axes[0][col], axes[1][col], axes[2][col]
        first = [r for r in rows if r["arm"] == arms[0]]
        ax_rate.step([(r["start_ms"] - t0) / 1000 for r in first], [r["rate"] for r in first],
                     where="post", color="black", linestyle="--", label="offered")
        for arm in arms:
            mine = [r for r in rows if r["arm"] == arm]
            mid = [((r["start_ms"] + r["end_ms"]) / 2 - t0) / 1000 for r in mine]
            ax_rate.plot(mid, [r["out_per_s"] for r in mine], marker=".", label=arm)
            ax_p99.plot(mid, [r["p99"] or float("nan") for r in mine], marker=".", label=arm)
            series = [s for s in res.get("series", []) if s[1] == arm and s[2] >= 0]
            ax_back.plot([(s[0] - t0) / 1000 for s in series], [s[2] for s in series], label=arm)
        caps = ",".join(f"{c:g}" for c in res["capacities"])
        ax_rate.set_title(f"capacities {caps}: records/s")
        ax_p99.set_yscale("log")
        ax_p99.set_ylabel("p99 latency per period (ms)")
        ax_back.set_ylabel("backlog (records)")
        ax_back.set_xlabel("seconds")
        for ax in (ax_rate, ax_p99, ax_back):
            ax.legend(fontsize=7)
            ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def from_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The per-configuration results back from a run's JSON rows (summary + period rows), so
    its targets can be judged again by today's rules (`python -m bench.kafka_load.report`)."""
    out = []
    for summary in (r for r in rows if r.get("kind") == "summary"):
        res = {k: v for k, v in summary.items() if k != "kind"}
        res["rows"] = [r for r in rows if r.get("kind") == "period"
                       and r["config"] == summary["config"]]
        out.append(res)
    return out


if __name__ == "__main__":
    import argparse
    import json

    parser = argparse.ArgumentParser(description="a kafka-load run's measurements and targets, "
                                                 "judged again from its JSON rows")
    parser.add_argument("json", type=Path)
    parser.add_argument("--budget", type=int, default=3)
    parser.add_argument("--step-pct", type=float, required=True, help="the run's ramp step")
    ns = parser.parse_args()
    results = from_rows(json.loads(ns.json.read_text(encoding="utf-8")))
    for line in [*table(results), "", *measured_lines(results), ""]:
        print(line)
    for t in targets(results, ns.budget, ns.step_pct):
        print(f"target {t.name}: {t.measured} (wanted {t.wanted}): {t.verdict}")
