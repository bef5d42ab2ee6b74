"""The figures of `reconf bench soak`: per-period rows, the summary and its targets
(500 periods, >= 150 faults of >= 12 kinds, 0 violations, <= 30 min; `--quick`: 60 periods in
<= 4 min, the faults scaled to its length), each match / beat / miss. Pure functions of the rows.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

__all__ = ["echo_row", "print_report", "replay_command", "summary", "targets"]

FULL = {"periods": 500, "faults": 150, "kinds": 12, "minutes": 30.0}
QUICK = {"periods": 60, "faults": 18, "kinds": 12, "minutes": 4.0}


def replay_command(seed: int, period: int, scheduled: bool = False,
                   kinds: Sequence[str] | None = None, job: str = "synthetic") -> str:
    """The command that runs the schedule up to the violation's period again (`scheduled`: a
    period of the slice through the real scheduler, bench/soak/scheduled.py)."""
    only = f" --kinds {','.join(kinds)}" if kinds else ""
    which = f" --job {job}" if job != "synthetic" else ""
    span = f"--periods 0 --scheduled {period}" if scheduled else f"--periods {period}"
    return f"reconf bench soak --seed {seed} {span} --workers 1{which}{only}"


def echo_row(row: dict[str, Any]) -> None:
    """A period's line as it ends (its faults, what each did when through the scheduler), then
    its violations."""
    marks = " ".join(f["kind"] + ("" if f["applied"] else "(-)") for f in row["faults"])
    bad = sum(1 for v in row["violations"] if not v["known"])
    known = len(row["violations"]) - bad
    sliced = row.get("scheduled")
    outcome = f"  run {row['run']}{' (published)' if row['published'] else ''}" if sliced else ""
    print(f"  seed {row['seed']} {'scheduled ' if sliced else ''}period {row['period']:>3} "
          f"{row['end']} {row['seconds']:5.1f} s{outcome}{'  ' + marks if marks else ''}"
          f"{f'  {bad} VIOLATION(S)' if bad else ''}"
          f"{f'  {known} known finding(s)' if known else ''}", flush=True)
    lines = [f"{f['kind']}: {f['detail']}" for f in row["faults"] if sliced] + [
        f"{'known' if v['known'] else 'VIOLATION'} [{v['invariant']}] {v['detail']}"
        for v in row["violations"]]
    for line in lines:
        print(f"      {line}", flush=True)


def summary(rows: Sequence[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    """The run in one row: faults injected per kind, recoveries, violations, time per period."""
    injected = Counter(f["kind"] for r in rows for f in r["faults"] if f["applied"])
    skipped = sum(1 for r in rows for f in r["faults"] if not f["applied"])
    violations = [v for r in rows for v in r["violations"] if not v["known"]]
    known = [v for r in rows for v in r["violations"] if v["known"]]
    recovered = sum(1 for r in rows for f in r["faults"]
                    if f["applied"] and not any(not v["known"] for v in r["violations"]))
    seconds = [r["seconds"] for r in rows]
    homes: dict[int, list[float]] = {}  # per soak (its seed): its home's size after each period
    for r in rows:
        homes.setdefault(r.get("seed", 0), []).append(r.get("home_mib", 0.0))
    growth = [(h[-1] - h[0]) / (len(h) - 1) for h in homes.values() if len(h) > 1]
    sliced = [r for r in rows if r.get("scheduled")]  # through the real scheduler
    return {"kind": "summary", "periods": len(rows), "faults": sum(injected.values()),
            "kinds": len(injected), "by_kind": dict(sorted(injected.items())),
            "not_injected": skipped, "recoveries": recovered, "violations": len(violations),
            "known_findings": len(known), "wall_s": round(wall_s, 1),
            "wall_s_per_period": round(wall_s / len(rows), 2) if rows else None,
            "period_s_mean": round(statistics.fmean(seconds), 2) if seconds else None,
            "period_s_p50": round(statistics.median(seconds), 2) if seconds else None,
            "period_s_max": round(max(seconds), 2) if seconds else None,
            "check_s_mean": round(statistics.fmean(r.get("check_s", 0.0) for r in rows), 2)
            if rows else None,
            "home_mib": round(sum(h[-1] for h in homes.values()), 2) if homes else None,
            "home_mib_per_period": round(statistics.fmean(growth), 3) if growth else None,
            "scheduled_periods": len(sliced),
            "scheduled_runs": dict(sorted(Counter(r["run"] for r in sliced).items())),
            "scheduled_published": sum(1 for r in sliced if r.get("published"))}


def _verdict(value: float, target: float, *, at_most: bool) -> str:
    """beat (10 % better than the target), match (meets it) or miss."""
    if at_most:
        return "beat" if value < 0.9 * target else "match" if value <= target else "miss"
    return "beat" if value > 1.1 * target else "match" if value >= target else "miss"


def targets(total: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
    goal = QUICK if quick else FULL
    minutes = total["wall_s"] / 60
    rows = [("periods", total["periods"], goal["periods"], False),
            ("faults injected", total["faults"], goal["faults"], False),
            ("fault kinds", total["kinds"], goal["kinds"], False),
            ("invariant violations", total["violations"], 0, True),
            ("wall minutes", round(minutes, 1), goal["minutes"], True)]
    return [{"kind": "target", "target": name, "value": value, "goal": limit,
             "verdict": (("match" if value == 0 else "miss") if limit == 0
                         else _verdict(float(value), float(limit), at_most=at_most))}
            for name, value, limit, at_most in rows]


def print_report(rows: Sequence[dict[str, Any]], total: dict[str, Any],
                 goals: Sequence[dict[str, Any]], kinds: Sequence[str] | None,
                 job: str = "synthetic") -> None:
    print(f"\nsoak: {total['periods']} periods, {total['wall_s']:.0f} s "
          f"({total['wall_s_per_period']} s of wall time a period; within its soak, a period: mean {total['period_s_mean']} s, p50 {total['period_s_p50']} s, "
          f"max {total['period_s_max']} s; the invariant check {total['check_s_mean']} s of it)")
    print(f"homes: {total['home_mib']} MiB at the end, each grown "
          f"{total['home_mib_per_period']} MiB a period")
    print(f"faults injected: {total['faults']} of {total['kinds']} kinds "
          f"({total['not_injected']} drawn but not applicable); recoveries {total['recoveries']}")
    for kind, n in total["by_kind"].items():
        print(f"  {kind:<20} {n:>4}")
    if total.get("scheduled_periods"):
        runs = ", ".join(f"{state} {n}" for state, n in total["scheduled_runs"].items())
        print(f"through the real scheduler: {total['scheduled_periods']} periods, runs {runs}, "
              f"{total['scheduled_published']} published")
    problems = [(r["seed"], r["period"], v, bool(r.get("scheduled"))) for r in rows
                for v in r["violations"]]
    print(f"invariant violations: {total['violations']}; known findings (defects already "
          f"filed): {total['known_findings']}")
    for seed, period, v, sliced in problems[:40]:
        mark = "known" if v["known"] else "VIOLATION"
        print(f"  {mark} seed {seed} {'scheduled ' if sliced else ''}period {period} "
              f"[{v['invariant']}] {v['detail']}")
        print(f"    replay: {replay_command(seed, period, sliced, kinds, job)}")
    if len(problems) > 40:
        print(f"  ... and {len(problems) - 40} more (the JSON has them all)")
    print(f"\n{'target':<22}{'value':>8}{'goal':>8}  verdict")
    for g in goals:
        sign = "<=" if g["target"] in ("invariant violations", "wall minutes") else ">="
        print(f"{g['target']:<22}{g['value']:>8}{sign:>4}{g['goal']:>4}  {g['verdict']}")
