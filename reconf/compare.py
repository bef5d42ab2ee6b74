"""`reconf compare`: across periods, how each strategy's shadow plans compared with the plan in force.

After every publish the what-if (jobs/whatif/stage.py) plans the same state with the other strategies,
same budget, and logs one comparison per period (`whatif/comparison.csv` on the period's run).
This reads those rows back, never recomputes, and sums them up per strategy: in how many periods
it planned, its load distance after and migrations next to the plan in force's in the same
periods, how often it was better, equal or worse, and how often it failed or timed out, so an
operator can change a job's strategy on evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from statistics import fmean
from typing import Any

from jobs.whatif.report import num
from jobs.whatif.shadow import ShadowStatus
from reconf.audit import AuditError, job_experiment, open_store
from schemas.attempts import PlanStatus
from schemas.config import Paths
from schemas.headline import fmt, objective_for
from schemas.landing import format_period_end, parse_period_end
from schemas.strategies import LOAD_DISTANCE, OBJECTIVES, Objective
from schemas.tracking import Tag

__all__ = ["HELP", "TIE", "StrategySummary", "compare", "format_compare", "plot_compare", "summarise"]

TIE = 1e-6  # load distances this close count as equal
#: the statuses of a comparison row with a plan: a shadow's, or the plan in force (waiting, or
#: published)
_WITH_PLAN = (ShadowStatus.PLANNED, PlanStatus.PLANNED, PlanStatus.PUBLISHED)

HELP = """\
across the periods since T, how each strategy's shadow plans (the what-if, planned on the same
state with the same budget after every publish) compared with the plan in force: in how many
periods it planned, its mean load distance after and migrations next to the plan in force's,
how often it beat or matched it, and how often it failed or timed out. Read from the MLflow
runs' whatif/comparison.csv only.

examples:
  reconf compare --job flights2 --since 2026-01-01T00:00:00Z
  reconf compare --job flights2 --since 2026-01-01T00:00:00Z --plot compare.png
"""


@dataclass(frozen=True)
class StrategySummary:
    """One strategy over the compared periods (its own and the plan in force's, same periods)."""

    strategy: str
    periods: int  # periods whose comparison has a row of this strategy (any status)
    planned: int
    failed: int
    timed_out: int
    skipped: int
    ld_after: float | None  # mean over the periods it planned
    in_force_ld_after: float | None  # mean of the plan in force over the same periods
    better: int  # periods its LD after was lower than the plan in force's
    equal: int
    worse: int
    migrations: float | None
    in_force_migrations: float | None
    migration_cost: float | None
    wall_s: float | None
    #: the in-force strategy's objective (schemas/strategies.py) and this strategy's mean of it
    #: next to the plan in force's, over the same periods; better/equal/worse count in it
    objective: str = "load_distance"
    value_after: float | None = None
    in_force_value_after: float | None = None


def _mean(values: Sequence[float]) -> float | None:
    return fmean(values) if values else None


def objective_of(periods: Sequence[Mapping[str, Any]]) -> Objective:
    """The objective the comparison is judged in: the newest period's in-force strategy's."""
    for period in reversed(periods):
        force = next((r for r in period["rows"] if r.get("role") == "in force"), None)
        if force is not None:
            return objective_for(str(force["strategy"]))
    return objective_for(None)


def summarise(periods: Sequence[Mapping[str, Any]]) -> list[StrategySummary]:
    """Per strategy (the plan in force's strategies first), from each period's rows; better,
    equal or worse in the in-force strategy's objective (`objective_of`), LD alongside."""
    objective = objective_of(periods)
    column = f"{objective.name}_after"
    sign = 1.0 if objective.direction == "min" else -1.0
    by: dict[str, list[tuple[Mapping[str, str], Mapping[str, str]]]] = {}
    for period in periods:
        rows = period["rows"]
        force = next((r for r in rows if r.get("role") == "in force"), None)
        if force is None:
            continue
        by.setdefault(f"{force['strategy']} (in force)", []).append((force, force))
        for row in rows:
            if row.get("role") == "shadow":
                by.setdefault(str(row["strategy"]), []).append((row, force))
    out = []
    for name, pairs in by.items():
        done = [(r, f) for r, f in pairs if r.get("status") in _WITH_PLAN
                and num(r.get("load_distance_after")) is not None]
        judged = [(r, f) for r, f in done if num(r.get(column)) is not None
                  and num(f.get(column)) is not None]
        diffs = [sign * (float(num(r[column]) or 0) - float(num(f[column]) or 0))
                 for r, f in judged]
        count = {s: sum(1 for r, _ in pairs if r.get("status") == s)
                 for s in (ShadowStatus.FAILED, ShadowStatus.TIMED_OUT, ShadowStatus.SKIPPED)}
        out.append(StrategySummary(
            name, len(pairs), len(done), count[ShadowStatus.FAILED],
            count[ShadowStatus.TIMED_OUT], count[ShadowStatus.SKIPPED],
            _mean([float(num(r["load_distance_after"]) or 0) for r, _ in done]),
            _mean([float(num(f["load_distance_after"]) or 0) for _, f in done]),
            sum(1 for d in diffs if d < -TIE), sum(1 for d in diffs if abs(d) <= TIE),
            sum(1 for d in diffs if d > TIE),
            _mean([float(num(r["migrations"]) or 0) for r, _ in done]),
            _mean([float(num(f["migrations"]) or 0) for _, f in done]),
            _mean([float(num(r["migration_cost"]) or 0) for r, _ in done]),
            _mean([float(num(r["wall_s"]) or 0) for r, _ in done]), objective.name,
            _mean([float(num(r[column]) or 0) for r, _ in judged]),
            _mean([float(num(f[column]) or 0) for _, f in judged])))
    return sorted(out, key=lambda s: (not s.strategy.endswith("(in force)"), s.strategy))


def _when(text: str, flag: str) -> datetime:
    try:
        return parse_period_end(text)
    except ValueError as exc:
        raise AuditError(f"{flag}: {exc}") from exc


def compare(job_id: str, since: str, *, until: str | None = None,
            paths: Paths | None = None) -> dict[str, Any]:
    """The job's what-if comparisons of the periods in [since, until], summed up per strategy."""
    from jobs.tracking.store import find_runs
    from jobs.whatif.stage import read_comparison

    start = format_period_end(_when(since, "--since"))
    end = format_period_end(_when(until, "--until")) if until else None
    client = open_store(paths or Paths.from_env())
    experiment_id = job_experiment(client, job_id)
    runs = [r for r in find_runs(client, experiment_id, job_id)
            if start <= r.data.tags[Tag.PERIOD_END] and (
                end is None or r.data.tags[Tag.PERIOD_END] <= end)]
    if not runs:
        raise AuditError(f"job {job_id!r} has no cycle run for a period ending at or after "
                         f"{start}{f' and at or before {end}' if end else ''}; nothing to compare")
    periods = []
    for run in sorted(runs, key=lambda r: r.data.tags[Tag.PERIOD_END]):
        rows = read_comparison(client, run.info.run_id)
        periods.append({"period_end": run.data.tags[Tag.PERIOD_END],
                        "run_id": run.info.run_id, "rows": rows})
    with_whatif = [p for p in periods if p["rows"]]
    return {"job_id": job_id, "since": start, "until": end, "periods": periods,
            "periods_with_whatif": len(with_whatif), "strategies": summarise(with_whatif)}


def _f(value: float | None, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def format_compare(report: Mapping[str, Any]) -> str:
    """The summary as the lines an operator reads in a terminal."""
    periods = report["periods"]
    lines = [f"{report['job_id']}: {len(periods)} period(s) from {periods[0]['period_end']} to "
             f"{periods[-1]['period_end']}, {report['periods_with_whatif']} with a what-if "
             "comparison (shadow plans: same state, same budget)"]
    if not report["strategies"]:
        lines.append("  no what-if comparison in these periods (the whatif step runs after "
                     "publish; `reconf whatif` runs it by hand)")
        return "\n".join(lines)
    objective = next((o for o in OBJECTIVES if o.name == report["strategies"][0].objective),
                     LOAD_DISTANCE)
    is_ld = objective.name == "load_distance"
    head = ("strategy", "periods", "planned", f"{objective.label} after ({objective.direction})",
            "in force", "better/equal/worse", *(() if is_ld else ("LD after",)),
            "migrations", "in force", "migr. cost", "failed", "timed out", "wall s")
    table = [head] + [(
        s.strategy, str(s.periods), str(s.planned), fmt(s.value_after),
        fmt(s.in_force_value_after), f"{s.better}/{s.equal}/{s.worse}",
        *(() if is_ld else (_f(s.ld_after, ".3f"),)),
        _f(s.migrations, ".1f"), _f(s.in_force_migrations, ".1f"), _f(s.migration_cost, ".4g"),
        str(s.failed), str(s.timed_out), _f(s.wall_s, ".2f")) for s in report["strategies"]]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
              for row in table]
    lines.append(f"  {objective.label} after / migrations: means over the periods the strategy "
                 "planned; 'in force': the plan in force's means over the same periods; "
                 f"better/equal/worse: its {objective.label} after against the plan in force's, "
                 "period by period (the in-force strategy's own objective)")
    return "\n".join(lines)


def plot_compare(report: Mapping[str, Any], path: Path) -> None:
    """Load distance after (top) and migrations (bottom) of every strategy over the periods;
    the plan in force in black."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    periods = [p for p in report["periods"] if p["rows"]]
    names = sorted({r["strategy"] for p in periods for r in p["rows"] if r["role"] == "shadow"})
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6.5), dpi=110, sharex=True)
    xs = range(len(periods))
    for label, pick, style in ([("in force", lambda rows: next(
            (r for r in rows if r["role"] == "in force"), None), {"color": "black",
                                                                  "linewidth": 2.2})]
                               + [(n, lambda rows, n=n: next(
                                   (r for r in rows if r["strategy"] == n and r["role"] ==
                                    "shadow"), None), {"linewidth": 1.2}) for n in names]):
        chosen = [pick(p["rows"]) for p in periods]
        for ax, column in ((top, "load_distance_after"), (bottom, "migrations")):
            ys = [num(r.get(column)) if r is not None else None for r in chosen]
            ax.plot(list(xs), [float("nan") if y is None else y for y in ys], marker="o",
                    markersize=3, label=label, **style)
    top.set_ylabel("load distance after")
    bottom.set_ylabel("migrations")
    ticks = [p["period_end"].replace("T", " ").removesuffix(":00Z") for p in periods]
    step = max(1, len(ticks) // 12)
    bottom.set_xticks(list(xs)[::step], ticks[::step], rotation=30, ha="right", fontsize=7)
    top.legend(fontsize=7, ncol=3)
    top.set_title(f"{report['job_id']}: what-if over {len(periods)} period(s) (same state, same "
                  "budget per period)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
