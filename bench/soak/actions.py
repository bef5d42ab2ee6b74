"""Operator actions the CLI has no command for, run by the soak's fork server as a process of
their own (so a fail point inside one is a real kill -9): the approval task's answer.

`decide --job J --period-end T --outcome rejected|timed_out|approved` records the answer on the
period's newest waiting attempt exactly as the approve task does (jobs/approval.py
`record_decision`); run again after a kill, it records it again on the attempt it answered. Bad input ends as the CLI ends it: one message with where and fix, exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

__all__ = ["main"]


def _decide(args: argparse.Namespace) -> str:
    from jobs.approval import record_decision
    from jobs.errors import StageError
    from jobs.run import period_context
    from schemas.approval import Decision
    from schemas.attempts import PlanStatus
    from schemas.tables import PLANS

    ctx = period_context(args.job, args.period_end)
    # a waiting attempt, or one already given this answer: a rerun after a kill mends its tags
    waiting = [r for r in ctx.lake.period_rows(PLANS, args.job, ctx.end)
               if r["status"] in (PlanStatus.PLANNED, args.outcome)]
    if not waiting:
        raise StageError(f"no plan of {args.job}@{ctx.stamp} waits for an answer",
                         where=ctx.paths.table(PLANS.name),
                         fix=f"plan the period first (`reconf plan --job {args.job} "
                             f"--period-end {ctx.stamp}`)")
    row = max(waiting, key=lambda r: (len(str(r["plan_id"])), str(r["plan_id"])))
    decision = Decision(args.outcome, reason=args.reason,
                        by=None if args.outcome == "timed_out" else "soak",
                        at=datetime.now(UTC).isoformat(timespec="seconds"))
    return record_decision(args.job, ctx.stamp, str(row["plan_id"]), row["mlflow_run_id"],
                           decision)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="soak-action")
    sub = parser.add_subparsers(dest="action", required=True)
    decide = sub.add_parser("decide")
    decide.add_argument("--job", required=True)
    decide.add_argument("--period-end", required=True)
    decide.add_argument("--outcome", required=True, choices=("approved", "rejected", "timed_out"))
    decide.add_argument("--reason", default="the soak's operator said no")
    args = parser.parse_args(argv)
    from schemas.errors import ReconfError

    try:
        print(_decide(args))
        return 0
    except ReconfError as exc:
        print(f"soak-action {args.action}: error: {exc}", file=sys.stderr)
        return 2
