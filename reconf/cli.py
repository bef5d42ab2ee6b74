"""`reconf`: run the reconfiguration pipeline's stages by hand, the demo, and the benchmarks.

Every stage command takes a job id (from the job config, config/jobs.toml or $RECONF_CONFIG) and
the end of a statistics period (ISO-8601 with a zone, e.g. 2026-01-01T00:05:00Z). Stores live
under $RECONF_HOME (default .reconf/ in the project).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reconf.cli_examples import EXAMPLES
from schemas.strategies import STRATEGIES

__all__ = ["main"]

_EPILOG = """\
a cycle by hand, for period ending T of job J:
  reconf land --job J --period-end T        # the runtime stand-in lands the period's metrics
  reconf collect --job J --period-end T     # landing zone -> Delta stats tables
  reconf validate --job J --period-end T    # Great Expectations checks; stops on bad stats
  reconf plan --job J --period-end T        # the job's strategy plans -> Delta + MLflow run
  reconf publish --job J --period-end T     # next assignment version + manifest + LATEST
  reconf apply --job J                      # the runtime applies the newest version
or the runtime live, landing each period at its end and applying each version as it appears:
  reconf runtime run --job J                # (make up runs it for the demo job)
or all four pipeline stages at once: reconf cycle --job J --period-end T
why the plan of a period moved what it moved (from its MLflow run):
  reconf audit --job J --period-end T [--key-group K] [--compare]
how other strategies would have planned (shadow plans after each publish, compared over time):
  reconf whatif --job J --period-end T      # by hand; the DAG runs it after every publish
  reconf compare --job J --since T [--plot PATH]
what became of each period's DAG cycle (published, failed at which stage, held, lost):
  reconf period show --job J                # and `reconf period lost` to give a failed one up
every job's plan for a period at once, on Spark:
  reconf fleet --period-end T [--jobs J1,J2]
"""


_JOB_HELP = "job id from the job config (e.g. demo; `reconf jobs` lists them)"


def _job_period(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", required=True, help=_JOB_HELP)
    parser.add_argument(
        "--period-end", required=True, metavar="T",
        help="end of the statistics period, ISO-8601 with a zone (e.g. 2026-01-01T00:05:00Z)",
    )


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


def _cmd_stop(args: argparse.Namespace) -> int:
    from runtime.execution import load_execution, request_stop
    from schemas.config import Paths, resolve_job

    paths = Paths.from_env()
    job = resolve_job(args.job)
    where = request_stop(paths.runtime, job.job_id, args.reason)
    last = load_execution(paths.runtime, job.job_id)
    if last is not None and last.status == "running":
        print(f"stop requested ({where}): the runtime of {job.job_id} finishes its current wave "
              "and stops; the partial assignment keeps running and the next plan starts from it")
        return 0
    # No wave runs: the flag waits for the next version the runtime applies, which it then
    # stops before its first wave and never resumes; an operator must know that it lingers.
    now = "nothing applied yet" if last is None else f"v{last.version} {last.status}"
    print(f"stop requested ({where}), but the runtime of {job.job_id} is executing nothing now "
          f"({now}): the flag waits and stops the next version it applies before its first "
          f"wave (that version is not resumed; the next plan starts from what runs). To "
          f"withdraw it: rm {where}")
    return 0


def _cmd_rollback(args: argparse.Namespace) -> int:
    from jobs.publish.rollback import rollback
    from schemas.config import Paths, resolve_job

    result = rollback(resolve_job(args.job), args.to_version, paths=Paths.from_env(),
                      reason=args.reason, override_budget=args.override_budget)
    print(result.summary())
    return 0


def _cmd_heal(args: argparse.Namespace) -> int:
    from jobs.heal.stage import heal
    from schemas.config import Paths, resolve_job
    from schemas.health import read_report

    paths = Paths.from_env()
    job = resolve_job(args.job)
    report = read_report(_report_path(paths.landing, job.job_id, args.report_id))
    result = heal(job, report, paths=paths)
    print(result.summary())
    return 1 if result.status == "alert" else 0


def _report_path(landing: Path, job_id: str, report_id: str) -> Path:
    """The file of health report `report_id` of the job: an id is a file name in the job's
    health folder (never a path out of it); an unknown one is refused naming the ids there."""
    from jobs.errors import StageError
    from schemas.health import health_dir, is_report_id, list_reports

    folder = health_dir(landing, job_id)
    path = folder / f"{report_id}.json"
    if is_report_id(report_id) and path.is_file():
        return path
    ids = [p.stem for p in list_reports(landing, job_id)]
    known = (f"its reports: {', '.join(ids[-5:])}" + (f" (the newest 5 of {len(ids)})"
                                                       if len(ids) > 5 else "")
             if ids else "it has no report yet")
    raise StageError(f"no health report {report_id!r} for job {job_id!r}", where=str(folder),
                     fix=f"give the id of a report in that folder (its file name without "
                     f".json); {known}")


def _cmd_collect(args: argparse.Namespace) -> int:
    from jobs.run import run_collect

    print(run_collect(args.job, args.period_end))
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from jobs.run import run_validate

    print(run_validate(args.job, args.period_end))
    return 0


def _print_plan(result: Any, *, show_moves: bool) -> None:
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
    _print_plan(result, show_moves=True)
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
    _print_plan(planned, show_moves=False)
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


def _cmd_compare(args: argparse.Namespace) -> int:
    from reconf.compare import compare, format_compare, plot_compare

    report = compare(args.job, args.since, until=args.until)
    print(format_compare(report))
    if args.plot:
        plot_compare(report, args.plot)
        print(f"plot: {args.plot}")
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


def _cmd_audit(args: argparse.Namespace) -> int:
    import json

    from reconf.audit import audit, format_report

    report = audit(args.job, args.period_end, args.key_group, dry_run=args.dry_run,
                   compare=args.compare, plan_id=args.plan_id, version=args.version)
    print(json.dumps(report, indent=2, sort_keys=True) if args.json else format_report(report))
    return 0


_AUDIT_HELP = """\
why a cycle's plan moved what it moved, read back from its MLflow run (never recomputed):
the run (id and UI link; RECONF_MLFLOW_URL sets the UI address), strategy, budget, load
distance before/after and lower bound, each migration with its load, state size and reason,
the scaling decision, the validation summary, the Delta table versions read and written,
the Airflow DAG run, and the published assignment version.

examples:
  reconf audit --job flights2 --period-end 2026-01-01T00:10:00Z
  reconf audit --job flights2 --period-end 2026-01-01T00:10:00Z --key-group 17
  reconf audit --job flights2 --period-end 2026-01-01T00:10:00Z --json | jq .moves
  reconf audit --job flights2 --version 6      # the plan published as v6 (e.g. a rollback)
"""


def _cmd_demo(args: argparse.Namespace) -> int:
    from reconf.demo import run_demo

    return run_demo(args.job, args.periods)


def _add_benchmarks(bench: argparse.ArgumentParser) -> None:
    import importlib

    from bench import BENCHMARKS, default_json_path

    names = bench.add_subparsers(dest="benchmark", required=True, metavar="NAME")
    for name, module_name in BENCHMARKS.items():
        module = importlib.import_module(module_name)
        p = names.add_parser(name, help=module.DESCRIPTION, description=module.DESCRIPTION)
        p.add_argument("--quick", action="store_true", help="the small configuration (about a minute)")
        p.add_argument("--json", metavar="PATH", type=Path,
                       help=f"where to write the JSON rows (default {default_json_path(name, False)}, "
                       "or -quick.json with --quick)")
        module.add_arguments(p)
        p.set_defaults(func=lambda args, m=module, n=name: _run_benchmark(m, n, args))


def _run_benchmark(module: Any, name: str, args: argparse.Namespace) -> int:
    from bench import default_json_path

    if args.json is None:
        args.json = default_json_path(name, args.quick)
    return int(module.main(args))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reconf", description=__doc__, epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, fn: Callable[[argparse.Namespace], int], help_text: str) -> argparse.ArgumentParser:
        # the description wrapped here, so the examples below it keep their lines
        p = sub.add_parser(name, help=help_text, description=textwrap.fill(help_text, 79),
                           epilog="examples:\n" + "\n".join(f"  {e}" for e in EXAMPLES[name]),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(func=fn)
        return p

    demo = add("demo", _cmd_demo, "land, reconfigure (through the real Airflow DAG) and apply a few "
               "consecutive periods of a job, printing one line per period")
    demo.add_argument("--job", default="flights2",
                      help="job id (default: flights2, the replay of the paper's Real Job 2; "
                      "demo is the synthetic job)")
    demo.add_argument("--periods", type=int, default=4, help="how many periods (default: 4)")
    add("jobs", _cmd_jobs, "list the configured jobs")
    _job_period(add("land", _cmd_land, "the runtime stand-in lands one period of metrics"))
    add("apply", _cmd_apply, "the runtime stand-in applies the newest published assignment "
        "(refusals keep the current one; exit 1)").add_argument("--job", required=True,
                                                              help=_JOB_HELP)
    stop = add("stop", _cmd_stop, "ask the job's runtime to finish its current wave of moves and "
               "stop (the partial assignment keeps running; the next plan starts from it)")
    stop.add_argument("--job", required=True, help=_JOB_HELP)
    stop.add_argument("--reason", default="", help="why (kept in the stop flag; default: none)")
    back = add("rollback", _cmd_rollback, "publish a new version whose assignment is an earlier "
               "version's, as a plan of its own (moves, budget check, MLflow run, reason)")
    back.add_argument("--job", required=True, help=_JOB_HELP)
    back.add_argument("--to-version", type=int, required=True, metavar="V",
                      help="the earlier version whose assignment to publish again (1 .. the "
                      "newest - 1; published/<job>/v<V>.json)")
    back.add_argument("--reason", required=True, help="why (kept on the rollback's MLflow run)")
    back.add_argument("--override-budget", metavar="REASON",
                      help="publish even if the moves break the job's migration budget, and why")
    mend = add("heal", _cmd_heal, "heal one health report of the runtime by hand (as the job's "
               "healing DAG does): re-place a dead or far-over-capacity node's units within the "
               "healing budget and publish a version (exit 1: an alert, nothing done)")
    mend.add_argument("--job", required=True, help=_JOB_HELP)
    mend.add_argument("--report-id", required=True, metavar="ID",
                      help="the report's id (landing/<job>/_health/<ID>.json)")
    from reconf.live_cli import add_parsers

    add_parsers(sub)  # reconf runtime run, reconf health report
    _job_period(add("collect", _cmd_collect, "collect one landed period into the Delta stats tables"))
    _job_period(add("validate", _cmd_validate, "check one collected period with the GE suites"))
    plan = add("plan", _cmd_plan, "plan a new assignment for one period: a new attempt with its "
               "own plan id, plans / plan_moves rows and MLflow run (an attempt of a published "
               "period is kept as not published; the published record never changes)")
    _job_period(plan)
    plan.add_argument("--strategy", help="override the job's strategy (default: the job's "
                      f"`strategy`): one of {', '.join(sorted(STRATEGIES))}")
    plan.add_argument("--max-migrations", type=int, help="override the job's migration budget "
                      "(default: the job's `max_migrations`)")
    plan.add_argument("--time-limit", type=float, metavar="S",
                      help="solver time limit in seconds (default: the job's "
                      "`solver_time_limit_s`; for a MILP only a safety net: its work budget "
                      "decides, docs/algorithms.md \"Deterministic plans\")")
    plan.add_argument("--dry-run", action="store_true",
                      help="print the plan and log it to MLflow as a dry run; write no plans "
                      "tables and publish nothing")
    publish = add("publish", _cmd_publish, "publish the period's plan as the next assignment "
                  "version")
    _job_period(publish)
    publish.add_argument("--plan-id", help="the plan attempt to publish (default: the period's "
                         "newest; `reconf plan` prints its id)")
    _job_period(add("cycle", _cmd_cycle, "collect, validate, plan and publish one period in-process"))
    fleet = sub.add_parser("fleet", help="plan one period of every job at once on Spark",
                           description=_FLEET_HELP,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    fleet.set_defaults(func=_cmd_fleet)
    fleet.add_argument("--period-end", required=True, metavar="T",
                       help="end of the statistics period, ISO-8601 with a zone")
    fleet.add_argument("--jobs", help="a comma list of job ids (default: every configured job)")
    fleet.add_argument("--strategy", help="override every job's strategy")
    fleet.add_argument("--dry-run", action="store_true",
                       help="log MLflow runs tagged dry_run; write no plans tables")
    fleet.add_argument("--master", help="Spark master URL (default $RECONF_SPARK_MASTER or "
                       "local[2])")
    whatif = add("whatif", _cmd_whatif, "shadow-plan a published period with the other "
                 "strategies (same state, same budget) and log the comparison to its MLflow run "
                 "(the DAG's whatif task does this after every publish)")
    _job_period(whatif)
    whatif.add_argument("--force", action="store_true",
                        help="also for a plan that is not (or no longer) the published one")
    from reconf.compare import HELP as compare_help

    cmp = sub.add_parser("compare", help="how each strategy's shadow plans compared with the "
                         "plan in force, across periods", description=compare_help,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    cmp.set_defaults(func=_cmd_compare)
    cmp.add_argument("--job", required=True, help="job id")
    cmp.add_argument("--since", required=True, metavar="T",
                     help="first period end to include, ISO-8601 with a zone")
    cmp.add_argument("--until", metavar="T", help="last period end to include (default: all)")
    cmp.add_argument("--plot", metavar="PATH", type=Path,
                     help="write a PNG: each strategy's load distance after, over the periods")
    audit = sub.add_parser("audit", help="explain one cycle's plan from its MLflow run",
                           description=_AUDIT_HELP,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    audit.set_defaults(func=_cmd_audit)
    audit.add_argument("--job", required=True, help=_JOB_HELP)
    audit.add_argument("--period-end", metavar="T", help="end of the statistics period, ISO-8601 "
                       "with a zone (e.g. 2026-01-01T00:05:00Z); or give --version")
    audit.add_argument("--version", type=int, metavar="N",
                       help="audit the plan published as version N (a period's plan, a rollback "
                       "or a healing: each is a version of its own)")
    audit.add_argument("--key-group", metavar="K",
                       help="also say whether key group K moved, from/to, its load, state size "
                       "and why (full id, or its number when unambiguous, e.g. 17)")
    audit.add_argument("--compare", action="store_true",
                       help="also print the what-if comparison: each shadow strategy's plan of "
                       "the same state (LD after, lower bound, migrations, cost, wall time, "
                       "status)")
    audit.add_argument("--json", action="store_true", help="print the report as JSON")
    audit.add_argument("--plan-id", help="audit this attempt of the period (default: its "
                       "published plan, else its newest attempt; the report lists the others)")
    audit.add_argument("--dry-run", action="store_true",
                       help="audit the period's dry run instead of its real cycle")
    from reconf import periods, services

    periods.add_parser(sub)
    for action, text in (("up", "start the local Airflow services and MLflow server (make up)"),
                         ("down", "stop exactly the services `up` started, by pid (make down)"),
                         ("status", "which local services run and answer (make status)")):
        svc = sub.add_parser(action, help=text, description=text, epilog=services.EPILOG,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
        svc.set_defaults(func=services.run, action=action)
        services.add_arguments(svc)
    bench = sub.add_parser("bench", help="run a benchmark: prints a table and writes JSON rows",
                           description="paper reproductions and performance benchmarks",
                           epilog="examples:\n" + "\n".join(f"  {e}" for e in EXAMPLES["bench"]),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_benchmarks(bench)
    return parser


#: Commands that write the stores under RECONF_HOME (checked, and created, before they start).
_USES_HOME = {"land", "apply", "collect", "validate", "plan", "publish", "cycle", "fleet", "demo",
              "whatif", "stop", "rollback", "heal", "period", "runtime", "health"}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    import os

    from jobs.errors import check_home
    from reconf.cli_errors import bad_input, check_reasons, closed_stdout, internal_error
    from schemas.config import Paths
    from schemas.errors import ReconfError

    try:
        check_reasons(args)  # before anything is written: one rule for every reason taken
        if args.command in _USES_HOME:
            check_home(Paths.from_env())
        code = int(args.func(args))
        sys.stdout.flush()  # here, not at exit: a reader that went away is seen below
        return code
    except BrokenPipeError:  # `reconf audit … | head -1`: the reader stopped, reconf did not fail
        return closed_stdout()
    # refused input, of every kind (schemas/errors.py); a bare ValueError is a value check of the
    # runtime stand-in or a planner that has not been given that type yet
    except (ReconfError, ValueError) as exc:
        print(f"reconf {args.command}: error: {bad_input(args, exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"reconf {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("RECONF_DEBUG") == "1":
            raise
        return internal_error(args.command, exc)


if __name__ == "__main__":
    sys.exit(main())
