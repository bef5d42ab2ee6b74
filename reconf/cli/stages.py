"""The pipeline by hand: the runtime stand-in's land and apply, each stage, a whole cycle, the
what-if, the fleet, the jobs and the demo (`reconf land|collect|validate|plan|publish|apply|…`).

Every stage command takes a job id and the end of a statistics period; jobs/run.py is the one
entry point the DAG tasks share, so a command here only parses, calls it and prints.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from reconf.cli.command import Command, examples, job_option, job_period
from schemas.strategies import STRATEGIES

__all__ = ["COMMANDS", "print_plan"]


def _cmd_jobs(args: argparse.Namespace) -> int:
    from schemas.config import load_jobs

    def shown(value: object) -> object:  # an unset budget reads "n/a", as in `reconf audit`
        return "n/a" if value is None else value

    for job in load_jobs().values():
        budget = (f"max_migrations={shown(job.max_migrations)}, "
                  f"max_migration_cost={shown(job.max_migration_cost)}")
        print(f"{job.job_id}: every {job.spl}, strategy {job.strategy}, {budget}, source {dict(job.source)}")
    return 0


def _cmd_land(args: argparse.Namespace) -> int:
    from reconf.settings import make_source
    from schemas.config import Paths, resolve_job
    from schemas.landing import parse_period_end
    from schemas.periods import check_period_end

    paths = Paths.from_env()
    job = resolve_job(args.job)
    end = check_period_end(job, parse_period_end(args.period_end))
    where = make_source(job, paths).land_period(paths.landing, end)
    print(f"landed {where}")
    return 0


def _cmd_apply(args: argparse.Namespace) -> int:
    from reconf.settings import make_source
    from runtime.live import runtime_lock
    from schemas.config import Paths, resolve_job

    paths = Paths.from_env()
    job = resolve_job(args.job)
    with runtime_lock(paths.runtime, job.job_id):  # a live runtime applies each version itself
        result = make_source(job, paths).apply_latest(paths.published)
    print(f"{result.status}: {result.reason}")
    return 1 if result.status == "refused" else 0


def _cmd_collect(args: argparse.Namespace) -> int:
    from jobs.run import run_collect

    print(run_collect(args.job, args.period_end))
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from jobs.run import run_validate

    print(run_validate(args.job, args.period_end))
    return 0


def print_plan(result: Any, *, show_moves: bool) -> None:
    """A recorded plan as `reconf plan` and `reconf cycle` print it."""
    from placement.determinism import alarm
    from placement.objectives import as_run_metrics
    from schemas.headline import headline

    p = result.plan
    print(f"plan {result.plan_id} ({p.strategy}, solver {p.status.value}, {p.wall_s:.2f} s)")
    print(f"  current assignment: {'v' + str(result.base_version) if result.base_version else 'initial allocation'}")
    # the strategy's own objective first (its bound, where it has one), load distance second
    print(f"  {headline(p.strategy, as_run_metrics(p))}")
    print(f"  migrations {p.migrations}, migration cost {p.migration_cost:.4g}")
    if p.message:
        print(f"  note: {p.message}")
    if loud := alarm(p.determinism):  # placement/determinism.py: the clock cut this plan
        print(f"  {loud}")
    elif p.determinism:  # as `reconf audit` says it: why a dry run of it binds
        print(f"  reproducible: {p.determinism}")
    if p.phases:  # the solver's timed steps (Plan.phases)
        print("  phases: " + ", ".join(f"{ph.name} {ph.seconds:.2f} s"
                                       + (f" ({ph.outcome})" if ph.outcome else "")
                                       for ph in p.phases))
    if show_moves:
        for m in p.moves:
            print(f"  move {m.keygroup}: {m.src} -> {m.dst} (cost {m.cost:.4g})")
    if result.mlflow_run_id:
        print(f"  MLflow run {result.mlflow_run_id}")
    if result.published_as is not None:
        print(f"  {result.not_published_note()}; `reconf plan --dry-run` tries a plan without "
              "recording an attempt")


def _cmd_plan(args: argparse.Namespace) -> int:
    from jobs.run import run_plan

    result = run_plan(
        args.job, args.period_end, strategy=args.strategy, max_migrations=args.max_migrations,
        time_limit_s=args.time_limit, dry_run=args.dry_run,
    )
    print_plan(result, show_moves=True)
    if args.dry_run:
        print("  dry run: nothing written to the plans tables, nothing published")
    return 0


def _cmd_publish(args: argparse.Namespace) -> int:
    from jobs.run import run_publish
    from schemas.attempts import PlanStatus

    r = run_publish(args.job, args.period_end, plan_id=getattr(args, "plan_id", None))
    if r.status == PlanStatus.STALE:
        print(f"reconf publish: refused: the plan of {args.job}@{r.period_end} is stale: "
              f"{r.reason}\n  where: plans row {r.plan_id} (status stale)\n"
              f"  fix:   plan the period again (`reconf plan --job {args.job} --period-end "
              f"{r.period_end}`), then publish", file=sys.stderr)
        return 2
    if r.version is None:
        print(f"publish {args.job}@{r.period_end}: {r.status} (a newer version exists; LATEST unchanged)")
    else:
        print(f"publish {args.job}@{r.period_end}: {r.status}, version {r.version}, plan "
              f"{r.plan_id}, manifest {r.manifest}")
    if r.status == PlanStatus.ALREADY_PUBLISHED and r.reason:
        print(f"  note: {r.reason}")
    return 0


def _cmd_cycle(args: argparse.Namespace) -> int:
    for step in (_cmd_collect, _cmd_validate):
        step(args)
    from jobs.run import run_plan, run_whatif

    planned = run_plan(args.job, args.period_end)
    print_plan(planned, show_moves=False)
    args.plan_id = None if planned.published_as else planned.plan_id  # publish exactly this plan
    code = _cmd_publish(args)
    try:  # after publish: the what-if never changes the cycle's outcome
        print(run_whatif(args.job, args.period_end))
    except BrokenPipeError:  # the reader went away: main ends quietly, not "what-if not run"
        raise
    except Exception as exc:
        print(f"what-if {args.job}@{args.period_end}: not run ({type(exc).__name__}: {exc}); "
              "the cycle is unaffected", file=sys.stderr)
    return code


def _cmd_whatif(args: argparse.Namespace) -> int:
    from jobs.run import run_whatif

    print(run_whatif(args.job, args.period_end, force=args.force, planned=True))
    return 0


def _cmd_fleet(args: argparse.Namespace) -> int:
    from jobs.plan.fleet import run_fleet
    from jobs.spark.session import get_spark, resolve_master
    from schemas.config import Paths

    # an explicit master keeps the fleet on an in-process session (applyInPandas on executors),
    # also when RECONF_SPARK_REMOTE points the stages at Spark Connect; run_fleet reuses it
    get_spark(Paths.from_env(), master=resolve_master(args.master))
    result = run_fleet(args.period_end, job_ids=args.jobs.split(",") if args.jobs else None,
                       strategy=args.strategy, dry_run=args.dry_run)
    print(result.summary())
    return 1 if result.failed else 0


_FLEET_HELP = """plan one period of every configured job (or of --jobs) at once on Spark: one solver per job on
the executors (groupBy(job_id).applyInPandas), recorded exactly as `reconf plan` records a job.
Each job's period must have passed validation (a dry run excepted); jobs without statistics for
the period are skipped, unless named with --jobs.

examples:
  reconf fleet --period-end 2026-01-01T00:05:00Z
  reconf fleet --jobs demo,flights2 --period-end 2026-01-01T00:05:00Z --master spark://127.0.0.1:7077

The master: --master, else $RECONF_SPARK_MASTER, else local[2] (infra/spark-cluster.sh up starts
a standalone cluster). Exit 0: all planned; 1: a job was not planned (the others are recorded);
2: bad input (nothing written).
"""


def _cmd_demo(args: argparse.Namespace) -> int:
    from reconf.demo import run_demo

    return run_demo(args.job, args.periods)


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", default="flights2",
                        help="job id (default: flights2, the replay of the paper's Real Job 2; "
                        "demo is the synthetic job)")
    parser.add_argument("--periods", type=int, default=4, help="how many periods (default: 4)")


def _plan_arguments(parser: argparse.ArgumentParser) -> None:
    job_period(parser)
    parser.add_argument("--strategy", help="override the job's strategy (default: the job's "
                        f"`strategy`): one of {', '.join(sorted(STRATEGIES))}")
    parser.add_argument("--max-migrations", type=int, help="override the job's migration budget "
                        "(default: the job's `max_migrations`)")
    parser.add_argument("--time-limit", type=float, metavar="S",
                        help="solver time limit in seconds (default: the job's "
                        "`solver_time_limit_s`; for a MILP only a safety net: its work budget "
                        "decides, docs/algorithms.md \"Deterministic plans\")")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan and log it to MLflow as a dry run; write no plans "
                        "tables and publish nothing")


def _publish_arguments(parser: argparse.ArgumentParser) -> None:
    job_period(parser)
    parser.add_argument("--plan-id", help="the plan attempt to publish (default: the period's "
                        "newest; `reconf plan` prints its id)")


def _fleet_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--period-end", required=True, metavar="T",
                        help="end of the statistics period, ISO-8601 with a zone")
    parser.add_argument("--jobs", help="a comma list of job ids (default: every configured job)")
    parser.add_argument("--strategy", help="override every job's strategy")
    parser.add_argument("--dry-run", action="store_true",
                        help="log MLflow runs tagged dry_run; write no plans tables")
    parser.add_argument("--master", help="Spark master URL (default $RECONF_SPARK_MASTER or "
                        "local[2])")


def _whatif_arguments(parser: argparse.ArgumentParser) -> None:
    job_period(parser)
    parser.add_argument("--force", action="store_true",
                        help="also for a plan that is not (or no longer) the published one")


COMMANDS = (
    Command("demo", "land, reconfigure (through the real Airflow DAG) and apply a few "
            "consecutive periods of a job, printing one line per period", _cmd_demo,
            _demo_arguments, epilog=examples("demo"), uses_home=True),
    Command("jobs", "list the configured jobs", _cmd_jobs, epilog=examples("jobs")),
    Command("land", "the runtime stand-in lands one period of metrics", _cmd_land, job_period,
            epilog=examples("land"), uses_home=True),
    Command("apply", "the runtime stand-in applies the newest published assignment "
            "(refusals keep the current one; exit 1)", _cmd_apply, job_option,
            epilog=examples("apply"), uses_home=True),
    Command("collect", "collect one landed period into the Delta stats tables", _cmd_collect,
            job_period, epilog=examples("collect"), uses_home=True),
    Command("validate", "check one collected period with the GE suites", _cmd_validate,
            job_period, epilog=examples("validate"), uses_home=True),
    Command("plan", "plan a new assignment for one period: a new attempt with its own plan id, "
            "plans / plan_moves rows and MLflow run (an attempt of a published period is kept "
            "as not published; the published record never changes)", _cmd_plan,
            _plan_arguments, epilog=examples("plan"), uses_home=True),
    Command("publish", "publish the period's plan as the next assignment version", _cmd_publish,
            _publish_arguments, epilog=examples("publish"), uses_home=True),
    Command("cycle", "collect, validate, plan and publish one period in-process", _cmd_cycle,
            job_period, epilog=examples("cycle"), uses_home=True),
    Command("fleet", "plan one period of every job at once on Spark", _cmd_fleet,
            _fleet_arguments, description=_FLEET_HELP, uses_home=True),
    Command("whatif", "shadow-plan a published period with the other strategies (same state, "
            "same budget) and log the comparison to its MLflow run (the DAG's whatif task does "
            "this after every publish)", _cmd_whatif, _whatif_arguments,
            epilog=examples("whatif"), uses_home=True),
)
