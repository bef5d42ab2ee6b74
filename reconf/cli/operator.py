"""An operator's actions on a running job: stop its schedule between waves, roll back to an
earlier version, heal a health report by hand (`reconf stop|rollback|heal`).

Each takes a reason or a report, never a plan: what it publishes is planned and audited like any
other version (docs/operations.md, "Executing a plan" and "Healing between periods").
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reconf.cli.command import Command, examples, job_option

__all__ = ["COMMANDS"]


def _cmd_stop(args: argparse.Namespace) -> int:
    from runtime.execution import load_execution, request_stop
    from schemas.config import Paths, resolve_job

    paths = Paths.from_env()
    job = resolve_job(args.job)
    where = request_stop(paths.runtime, job.job_id, args.reason)
    last = load_execution(paths.runtime, job.job_id)
    if last is not None and last.status == "running":
        print(f"stop requested ({where}): the runtime of {job.job_id} finishes its "
              "current wave and stops; the partial assignment keeps running and the next plan "
              "starts from it")
        return 0
    # No wave runs: the flag waits for the next version the runtime applies, which it then
    # stops before its first wave and never resumes; an operator must know that it lingers.
    now = "nothing applied yet" if last is None else f"v{last.version} {last.status}"
    print(f"stop requested ({where}), but the runtime of {job.job_id} is executing "
          f"nothing now ({now}): the flag waits and stops the next version it applies before "
          f"its first wave (that version is not resumed; the next plan starts from what runs). "
          f"To withdraw it: rm {where}")
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


def _stop_arguments(parser: argparse.ArgumentParser) -> None:
    job_option(parser)
    parser.add_argument("--reason", default="", help="why (kept in the stop flag; default: none)")


def _rollback_arguments(parser: argparse.ArgumentParser) -> None:
    job_option(parser)
    parser.add_argument("--to-version", type=int, required=True, metavar="V",
                        help="the earlier version whose assignment to publish again (1 .. the "
                        "newest - 1; published/<job>/v<V>.json)")
    parser.add_argument("--reason", required=True, help="why (kept on the rollback's MLflow run)")
    parser.add_argument("--override-budget", metavar="REASON",
                        help="publish even if the moves break the job's migration budget, and "
                        "why")


def _heal_arguments(parser: argparse.ArgumentParser) -> None:
    job_option(parser)
    parser.add_argument("--report-id", required=True, metavar="ID",
                        help="the report's id (landing/<job>/_health/<ID>.json)")


COMMANDS = (
    Command("stop", "ask the job's runtime to finish its current wave of moves and stop (the "
            "partial assignment keeps running; the next plan starts from it)", _cmd_stop,
            _stop_arguments, epilog=examples("stop"), uses_home=True),
    Command("rollback", "publish a new version whose assignment is an earlier version's, as a "
            "plan of its own (moves, budget check, MLflow run, reason)", _cmd_rollback,
            _rollback_arguments, epilog=examples("rollback"), uses_home=True),
    Command("heal", "heal one health report of the runtime by hand (as the job's healing DAG "
            "does): re-place a dead or far-over-capacity node's units within the healing budget "
            "and publish a version (exit 1: an alert, nothing done)", _cmd_heal,
            _heal_arguments, epilog=examples("heal"), uses_home=True),
)
