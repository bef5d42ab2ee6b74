"""`reconf period`: what became of each period's cycle, and giving a failed period up.

`reconf period show` lists the job's periods with their cycle's outcome (jobs/cycles.py:
published, not published and why, failed at which stage, lost, held behind which period), the
operator's view of what the runs list shows only as colours. `reconf period lost` is the
deliberate human step after a period whose statistics will never be right: it records the period
as lost, so the job's next cycle goes on by itself (the gate looks through the runs held behind
it); nothing is published for it and its run stays *failed* in Airflow, visibly not published.
"""

from __future__ import annotations

import argparse
import getpass
import json

from reconf.cli.command import Command, examples
from schemas.reasons import shown_reason

__all__ = ["COMMANDS"]

_NOTE = """\
A period's cycle is held when the period before it failed (docs/operations.md, "When a cycle
fails"): fix the failed period and re-run it with the held ones (`airflow tasks clear`), or give
it up with `reconf period lost`; the job's next period then goes on by itself."""


_EPILOG = examples("period") + "\n\n" + _NOTE


def _show(args: argparse.Namespace) -> int:
    from jobs.cycles import Outcome
    from schemas.config import Paths, resolve_job

    job = resolve_job(args.job)
    if args.last < 1:
        raise ValueError(f"--last {args.last}: give a positive number of periods")
    root = Paths.from_env().reports / job.job_id
    found: list[Outcome] = []
    for path in sorted(root.glob("*/cycle.json"))[-args.last:]:
        try:
            outcome = Outcome.from_json(json.loads(path.read_text()).get("current"))
        except (OSError, ValueError, AttributeError):
            outcome = None
        if outcome is not None:
            found.append(outcome)
    if not found:
        print(f"job {job.job_id}: no cycle has run yet (no record under {root})")
        return 0
    print(f"{'period end':21} {'outcome':14} detail")
    for o in found:
        detail = (f"behind {o.behind}: {o.detail}" if o.behind
                  else f"{o.stage}: {o.detail}" if o.stage else o.detail)
        # a reason's later lines under the detail column (period end 21 + outcome 14 + 2)
        print(f"{o.period_end:21} {o.state:14} {shown_reason(detail, ' ' * 37)}"
              + (f"  [{o.run_id}]" if o.run_id else ""))
    return 0


def _lost(args: argparse.Namespace) -> int:
    from jobs.cycles import CycleState, read_outcome, record_outcome
    from jobs.errors import StageError
    from jobs.run import period_context

    # the job, and a period end on its grid that has ended (refused otherwise, naming the nearest)
    ctx = period_context(args.job, args.period_end)
    reason = args.reason.strip()
    if not reason:
        raise StageError("--reason is empty", where="the command line",
                         fix="say why the period is given up (it is kept in its record)")
    before = read_outcome(ctx.paths, ctx.job.job_id, ctx.end)
    if before is not None and before.state is CycleState.PUBLISHED:
        raise StageError(f"period {ctx.stamp} of job {ctx.job.job_id!r} was published "
                         f"({before.detail}): it is not lost",
                         where=f"its record (reports/{ctx.job.job_id}/{ctx.stamp}/cycle.json)",
                         fix="to undo a published version, roll back: `reconf rollback --job "
                             f"{ctx.job.job_id} --to-version V --reason ...`")
    user = getpass.getuser()
    record_outcome(ctx.paths, ctx.job.job_id, ctx.end, CycleState.LOST,
                   f"given up by {user}: {reason}")
    was = "no record" if before is None else f"was {before.state}"
    print(f"period {ctx.stamp} of job {ctx.job.job_id} recorded as lost ({was}): nothing is "
          f"published for it, and the job's next cycle goes on by itself. Its run stays failed "
          f"in Airflow. Runs held behind it stay failed too; to run the newest of them: "
          f"`airflow tasks clear reconfigure_{ctx.job.job_id} -s <its period end> -e <its "
          f"period end> -y`")
    return 0


def _show_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", required=True, help="job id from the job config (e.g. demo)")
    parser.add_argument("--last", type=int, default=20, metavar="N",
                        help="how many of the newest periods (default: 20)")


def _lost_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", required=True, help="job id from the job config (e.g. demo)")
    parser.add_argument("--period-end", required=True, metavar="T",
                        help="end of the period to give up, ISO-8601 with a zone")
    parser.add_argument("--reason", required=True, help="why (kept in the period's record)")


COMMANDS = (
    Command("period", "what became of each period's cycle; give a failed period up (`lost`) so "
            "the job's next cycle goes on", description=__doc__.split("\n\n")[0],
            epilog=_EPILOG, uses_home=True, actions=(
                Command("show", "list the newest periods' cycle outcomes", _show,
                        _show_arguments, epilog=_EPILOG),
                Command("lost", "record a failed period as lost: nothing is published for it "
                        "and the job's next cycle goes on", _lost, _lost_arguments,
                        epilog=_EPILOG),
            )),
)
