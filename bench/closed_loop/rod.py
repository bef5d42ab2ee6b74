"""The closed loop's ROD scenario (`reconf bench closed-loop --scenario rod`): Xing et al. 2006
Fig. 18 in spirit, through the pipeline's stages rather than in the planner only.

The job: the synthetic runtime with d declared input streams (runtime/synthetic_model.py), its
loads exactly linear in the rates, the rates on the load ramp with bursts (``ramp_periods``:
1x → 2.5x → 0.6x, each stream ×U[1.5, 3] with probability 0.2 per period, on top of the plain
U[0.5, 1.5] draw). Each strategy runs its own copy of the job from the same round-robin start,
configured as a job would be (`JobConfig` with ``load_model``, the migration budget), after
the same deployment (`deployment`: operator by operator, published as version 1); every period
goes

  runtime lands the period (keygroups/, nodes/, edges/, streams/)
  → collect: the rows aggregated as jobs/collect/stage.py does (bench/closed_loop/kit.py
    `landed_rows`), and collect's load-model fit over the last K periods (jobs/facets/load_model.py
    `fit_rows`: NNLS per key group, nothing until the rates span the streams)
  → plan: `build_state`, the plan stage's `with_streams` (rates, lower bounds, fitted model),
    then `jobs.plan.scaling.solve` (a strategy needing the model keeps the placement until it is
    fitted; every plan gets its resilience metrics from the registry)
  → publish a versioned manifest → the runtime applies it through the assignment client.

In-process and without Spark or Delta (as every `closed-loop` scenario): the stage functions are
the pipeline's own, fed the landed files instead of the lake; the Spark/Airflow path of the same
job is tests/e2e/test_rod_dag.py. Row n describes period n as the runtime lived it: the migrations
applied at its start, its nodes' utilisation under that period's rates, and F/F* of the placement
that ran it (under the fitted model; `None` before the fit).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from bench import write_rows
from bench.closed_loop.kit import Period, available, landed_rows, publish_and_apply

__all__ = ["RodRun", "deployment", "format_rod_table", "plot_rod", "rod_targets", "run_rod",
           "run_rod_cli"]

ROD_STRATEGIES = ("rod", "llf", "milp")
ROD_PERIODS, QUICK_ROD_PERIODS = 36, 18  # K warm-up periods are part of the count
FIT_PERIODS = 6


@dataclass(frozen=True)
class RodRun:
    strategy: str
    periods: int
    budget: int = 8
    time_limit_s: float = 1.0
    operators: int = 5
    keygroups_per_operator: int = 16
    nodes: int = 8
    streams: int = 5
    load_pct: float = 30.0  # mean node load at the mean rates (ramp 1x, no burst)
    seed: int = 18


def _spec(run: RodRun) -> Any:
    from runtime.synthetic import SyntheticSpec

    ramp = run.periods - FIT_PERIODS  # the ramp starts when the warm-up's fit is possible
    return SyntheticSpec(f"rod-{run.strategy}", operators=run.operators,
                         keygroups_per_operator=run.keygroups_per_operator, nodes=run.nodes,
                         mean_node_load=run.load_pct, varies=0.0, seed=run.seed,
                         streams=run.streams, ramp_periods=ramp)


def _start(period_s: int, ramp: int) -> datetime:
    """Aligned so that the ramp's first period follows the FIT_PERIODS warm-up (its low tail)."""
    cycle = ramp * period_s
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    first = epoch + timedelta(seconds=(20_000 * 86_400 // cycle) * cycle)
    return first - timedelta(seconds=FIT_PERIODS * period_s)


def deployment(keygroups: tuple[str, ...], nodes: tuple[str, ...]) -> dict[str, str]:
    """The job as first deployed, operator by operator: the key groups (operator-major) in
    contiguous blocks over the nodes, balanced at the mean rates but each node reading one or
    two streams, so little rate change is absorbed (the round-robin start would already be
    nearly ROD's ideal)."""
    m, n = len(keygroups), len(nodes)
    return {kg: nodes[i * n // m] for i, kg in enumerate(keygroups)}


def _deploy(runtime: Any, published: Path, job_id: str, end: datetime,
            assignment: dict[str, str]) -> int:
    """Publish the deployment as version 1 and let the runtime apply it (before period 1)."""
    from schemas.manifest import Manifest, write_latest, write_manifest

    write_manifest(published, Manifest.create(job_id=job_id, version=1, period_end=end,
                                              plan_id=f"{job_id}@deploy", assignment=assignment))
    write_latest(published, job_id, 1)
    result = runtime.apply_latest(published)
    if not result.applied:
        raise RuntimeError(f"the runtime did not apply the deployment: {result.reason}")
    return 1


def run_rod(run: RodRun, workdir: Path) -> list[dict[str, Any]]:
    """One strategy's closed loop on the ramp; one row per period."""
    import pandas as pd

    from jobs.facets.load_model import fit_rows, with_streams
    from jobs.plan.scaling import solve
    from jobs.plan.stage import build_state
    from placement.model import Budget
    from placement.rod.resilience import plan_resilience
    from runtime.synthetic import SyntheticJob, true_coefficients
    from runtime.synthetic_model import ramp_factor
    from schemas.config import JobConfig
    from schemas.streams import LoadModelConfig

    spec = _spec(run)
    config = JobConfig(spec.job_id, spl=timedelta(seconds=spec.period_s), strategy=run.strategy,
                       max_migrations=run.budget, solver_time_limit_s=run.time_limit_s,
                       load_model=LoadModelConfig(spec.stream_names, periods=FIT_PERIODS))
    runtime = SyntheticJob(spec, workdir / "runtime")
    budget, period_ms = Budget(max_migrations=run.budget), spec.period_s * 1000.0
    truth = true_coefficients(spec)
    start = _start(spec.period_s, spec.ramp_periods)
    loads, rates = pd.DataFrame(), pd.DataFrame()  # keygroup_stats, stream_stats (window K)
    rows: list[dict[str, Any]] = []
    version = _deploy(runtime, workdir / "published", spec.job_id, start,
                      deployment(spec.keygroups, spec.node_names))
    moved = 0
    for n in range(1, run.periods + 1):
        t0 = time.perf_counter()
        end = start + timedelta(seconds=n * spec.period_s)
        where = runtime.land_period(workdir / "landing", end)
        kg_rows, node_rows, edge_rows = landed_rows(where, period_ms)
        rate_rows = pq.read_table(where / "streams").to_pandas().groupby(
            "stream", as_index=False)["tuples_per_s"].mean().to_dict("records")
        since = end - FIT_PERIODS * config.spl
        loads = pd.concat([loads, pd.DataFrame(
            [{"period_end": end, "keygroup": r["keygroup"], "load_pct": r["load_pct"]}
             for r in kg_rows])])
        loads = loads[loads["period_end"] > since]
        rates = pd.concat([rates, pd.DataFrame(
            [{"period_end": end, **r} for r in rate_rows])])
        rates = rates[rates["period_end"] > since]
        fitted = fit_rows(config, end, loads, rates)  # collect
        state = build_state(config, kg_rows, node_rows, edge_rows, dict(runtime.assignment))
        state = with_streams(state, config, run.strategy, rate_rows, fitted.rows)  # plan
        running = (plan_resilience(state, state.assignment).get("feasible_set_ratio")
                   if state.load_model else None)
        solved = solve(state, budget, run.strategy, {}, run.time_limit_s, None)
        plan = solved.plan
        period = Period(n, end, state, node_rows, {}, t0)
        version = publish_and_apply(runtime, workdir / "published", spec.job_id, version,
                                    period, plan, run.strategy)
        error = max((abs(r["coefficient"] - truth[r["keygroup"]][r["stream"]])
                     / max(truth[r["keygroup"]].values()) for r in fitted.rows), default=None)
        util = max(float(r["utilisation_pct"]) for r in node_rows)
        rows.append({
            "scenario": "rod", "strategy": run.strategy, "period": n,
            "warmup": n <= FIT_PERIODS, "ramp": ramp_factor(spec, end),
            "rates": {str(r["stream"]): float(r["tuples_per_s"]) for r in rate_rows},
            "max_util_pct": util, "overloaded": util > 100.0, "migrations": moved,
            "fitted": bool(fitted.rows), "fit_error": error, "feasible_set_ratio": running,
            "planned_feasible_set_ratio": plan.facet_metrics.get("feasible_set_ratio"),
            "headroom_all": plan.facet_metrics.get("headroom_all"),
            "plan_migrations": plan.migrations, "plan_s": plan.wall_s, "version": version,
            "wall_s": time.perf_counter() - t0})
        moved = plan.migrations  # applied at the start of the next period
    return rows


def _stats(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name in dict.fromkeys(r["strategy"] for r in rows):
        ramp = [r for r in rows if r["strategy"] == name and not r["warmup"]]
        ffs = [r["feasible_set_ratio"] for r in ramp if r["feasible_set_ratio"] is not None]
        settled = next((i for i, r in enumerate(ramp) if r["fitted"]
                        and r["plan_migrations"] == 0), len(ramp))
        out[name] = {"overloaded": sum(r["overloaded"] for r in ramp),
                     "peak": max(r["max_util_pct"] for r in ramp),
                     "migrations": sum(r["migrations"] for r in rows if r["strategy"] == name),
                     "settled_at": ramp[settled]["period"] if settled < len(ramp) else -1,
                     "late_migrations": sum(r["plan_migrations"] for r in ramp[settled:]),
                     "ff": sum(ffs) / len(ffs) if ffs else float("nan"),
                     "periods": len(ramp)}
    return out


def _verdict(mine: float, others: list[float]) -> str:
    """Lower is better: beat = strictly best, match = tied best, miss otherwise."""
    if not others or mine < min(others):
        return "beat"
    return "match" if mine <= min(others) else "miss"


def rod_targets(rows: list[dict[str, Any]]) -> list[str]:
    """The issue's closed-loop question, ROD against the others, each line match/beat/miss."""
    stats = _stats(rows)
    if "rod" not in stats:
        return ["(rod not run: no targets)"]
    rod, others = stats["rod"], [v for k, v in stats.items() if k != "rod"]
    shown = ", ".join(f"{k} {v['overloaded']:.0f}/{v['peak']:.0f}%/{v['migrations']:.0f}/"
                      f"{v['ff']:.3f}" for k, v in stats.items())
    errors = [r["fit_error"] for r in rows if r["fit_error"] is not None]
    out = [f"per strategy, over the {rod['periods']:.0f} ramp periods: overloaded periods / peak "
           f"utilisation / migrations (all periods) / mean F/F* of the running placement: {shown}"]
    for label, key, higher in (("fewest periods with an overloaded node", "overloaded", False),
                               ("lowest peak utilisation", "peak", False),
                               ("fewest migrations", "migrations", False),
                               ("largest feasible set (mean F/F*)", "ff", True)):
        sign = -1.0 if higher else 1.0
        verdict = _verdict(sign * rod[key], [sign * o[key] for o in others])
        out.append(f"  [{verdict:<5}] ROD: {label}")
    settled = rod["settled_at"] > 0 and rod["late_migrations"] == 0
    out.append(f"  [{'match' if settled else 'miss':<5}] ROD: once at its target it never moves "
               f"again (the target does not depend on the rates): first plan without moves at "
               f"period {rod['settled_at']:.0f}, {rod['late_migrations']:.0f} moves after it")
    if errors:
        out.append(f"  [{'match' if max(errors) < 1e-6 else 'miss':<5}] collect's NNLS fit "
                   f"recovers the true coefficients: max error {max(errors):.1e} of the largest")
    return out


def format_rod_table(rows: list[dict[str, Any]]) -> str:
    names = list(dict.fromkeys(r["strategy"] for r in rows))
    head = f"{'period':>6}{'ramp':>6}{'max rate':>9}" + "".join(
        f"{n + ' util%':>12}{'migr':>5}{'F/F*':>7}" for n in names)
    lines = [head, "-" * len(head)]
    by = {(r["strategy"], r["period"]): r for r in rows}
    for p in sorted({r["period"] for r in rows}):
        first = by[(names[0], p)]
        line = (f"{p:>5}{'w' if first['warmup'] else ' '}{first['ramp']:>6.2f}"
                f"{max(first['rates'].values()):>9.0f}")
        for n in names:
            r = by[(n, p)]
            ff = "" if r["feasible_set_ratio"] is None else f"{r['feasible_set_ratio']:.3f}"
            mark = "*" if r["overloaded"] else " "
            line += f"{r['max_util_pct']:>11.0f}{mark}{r['migrations']:>5}{ff:>7}"
        lines.append(line)
    return "\n".join(lines)


def run_rod_cli(args: argparse.Namespace) -> list[dict[str, Any]]:
    """`reconf bench closed-loop --scenario rod`: the runs, the table, the targets, JSON, plot."""
    import tempfile

    from bench.closed_loop.kit import parse_strategies

    names = parse_strategies(args.strategy, 2) if args.strategy else list(ROD_STRATEGIES)
    _, missing = available(names)
    if missing or not set(names).isdisjoint(("potc", "none")):
        raise ValueError(f"--scenario rod needs registered planners, not {missing or names}")
    count = int(args.periods or (QUICK_ROD_PERIODS if args.quick else ROD_PERIODS))
    if count < FIT_PERIODS + 6:
        raise ValueError(f"--scenario rod needs --periods >= {FIT_PERIODS + 6} (a {FIT_PERIODS}-"
                         f"period warm-up for the fit, then a ramp of >= 6), got {count}")
    limit = args.time_limit or 1.0
    budget = 8 if args.budget is None else args.budget
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"closed-loop-rod-{name}-") as tmp:
            t0 = time.perf_counter()
            rows += run_rod(RodRun(name, count, budget, limit), Path(tmp))
            print(f"closed-loop rod: {name}: {count} periods in {time.perf_counter() - t0:.1f} s",
                  flush=True)
    print(format_rod_table(rows))
    print("(w: warm-up, the load model not yet fitted; *: a node above 100 %)\n")
    for line in rod_targets(rows):
        print(line)
    print(f"\nwall time {time.perf_counter() - started:.1f} s")
    if args.json is not None:
        print(f"rows written to {write_rows(args.json, rows)}")
    if args.plot is not None:
        plot_rod(rows, Path(args.plot))
        print(f"figure written to {args.plot}")
    return rows


def plot_rod(rows: list[dict[str, Any]], path: Path) -> None:
    """Two panels over the periods: the most utilised node, and F/F* of the running placement."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for name in dict.fromkeys(r["strategy"] for r in rows):
        mine = [r for r in rows if r["strategy"] == name]
        x = [r["period"] for r in mine]
        top.plot(x, [r["max_util_pct"] for r in mine], marker=".", label=name)
        bottom.plot(x, [r["feasible_set_ratio"] if r["feasible_set_ratio"] is not None
                        else float("nan") for r in mine], marker=".", label=name)
    top.axhline(100.0, color="grey", linestyle="--", linewidth=0.8)
    top.set_ylabel("most utilised node (%)")
    bottom.set_ylabel("F/F* of the running placement")
    bottom.set_xlabel("period (the first 6: warm-up)")
    top.legend()
    top.set_title("ROD vs LLF and the MILP, ramp with bursts (synthetic job, 5 streams)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
