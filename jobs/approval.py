"""Approval: a human approves a period's plan between plan and publish.

Cruise Control's two-step verification (a proposal is reviewed, then executed), inside Airflow:
a job with `approval = true` (schemas/config/job.py) gets an `approve` task before publish, an
Airflow human-in-the-loop `ApprovalOperator` (reconf/approval_step.py). This module is what that
task knows of reconf, kept out of the DAG file and importable without Airflow; like jobs/run.py
it sits above the stages (it reads the what-if and records on the plan), and the answers' data
is in schemas/approval.py, so publish reads it without importing this:

- `request_text`: what the approver reads, the plan's summary line (its objective first,
  schemas/headline.py), the what-if ranking of the other strategies on the same state
  (jobs/whatif/report.py `text_table`, ranked by the in-force objective) and the MLflow run;
- `record_decision`: the answer, on the plan. A rejection, or no answer within the job's
  `approval_timeout` ("timed_out", the documented default outcome: nothing is published),
  becomes the attempt's status in the `plans` table (with the reason appended to its message)
  and the tags `reconf.approval*` and `reconf.publish_status` on the period's MLflow run, where
  `reconf audit` reads them. An approval is recorded as tags only; publish then records the
  version as usual. A rejected attempt is never published (jobs/publish/stage.py refuses it):
  to change one's mind, plan the period again, which asks again.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from jobs.faults import failpoint
from schemas.approval import APPROVED, REJECTED, TIMED_OUT, Decision
from schemas.tracking import Tag

__all__ = ["APPROVED", "REJECTED", "TIMED_OUT", "Decision", "record_decision", "request_text"]

def request_text(job_id: str, planned: Mapping[str, Any], whatif: str | None,
                 timeout: timedelta, *, client: Any | None = None) -> tuple[str, str]:
    """(subject, Markdown body) of the approval request of the plan task's result `planned`
    (plan_id, summary, mlflow_run_id, mlflow_url); `whatif`: the what-if task's summary."""
    from jobs.whatif.report import text_table
    from jobs.whatif.stage import read_comparison

    pid = str(planned["plan_id"])
    subject = f"Publish plan {pid}? ({int(planned.get('migrations') or 0)} migration(s))"
    rows: list[dict[str, str]] = []
    run_id = planned.get("mlflow_run_id")
    if run_id:
        if client is None:
            from jobs.tracking.store import open_store
            from schemas.config import Paths

            client = open_store(Paths.from_env())
        rows = read_comparison(client, str(run_id))
    ranking = ("\n".join(["```", *text_table(rows, ""), "```"]) if rows else
               f"no comparison: {whatif or 'the what-if did not run'}")
    url = planned.get("mlflow_url")
    body = "\n\n".join([
        f"**Plan** {planned.get('summary') or pid}",
        "**What-if**: the other strategies on the same state and budget, ranked by the "
        f"in-force strategy's objective:\n\n{ranking}",
        f"**MLflow run**: [{run_id}]({url})" if url else f"**MLflow run**: {run_id or 'none'}",
        f"**Approve** publishes this plan as job {job_id}'s next assignment version. **Reject** "
        "(say why in *reason*) publishes nothing and records the reason on the plan. With no "
        f"answer within {timeout} the plan is rejected as *timed out*: nothing is published.",
    ])
    return subject, body


def record_decision(job_id: str, period_end: str, plan_id: str, mlflow_run_id: str | None,
                    decision: Decision) -> str:
    """Record `decision` on the plan (see the module's docstring); returns the log line."""
    from jobs.context import run_stage
    from jobs.lake import Scope
    from jobs.lake.api import quote
    from jobs.run import period_context
    from jobs.tracking.store import tag_run
    from schemas.tables import PLANS

    tags = {Tag.APPROVAL: decision.outcome, Tag.APPROVAL_REASON: decision.reason[:4900],
            Tag.APPROVAL_BY: decision.by or "", Tag.APPROVAL_AT: decision.at}
    if decision.outcome != APPROVED:
        tags[Tag.PUBLISH_STATUS] = decision.outcome

        def body(ctx: Any) -> None:
            scope = Scope(job_id, ctx.end, plan_id)
            rows = ctx.lake.period_rows(PLANS, job_id, ctx.end)
            message = next((str(r["message"] or "") for r in rows if r["plan_id"] == plan_id), "")
            note = f"{'; ' if message else ''}approval: {decision.line()}"
            ctx.lake.update(PLANS, {"status": quote(decision.outcome),
                                    "message": quote(message + note)}, scope)

        run_stage(period_context(job_id, period_end), "approval", body)
    failpoint("approval.record")  # the plan's status written, its run's tags not yet
    if mlflow_run_id:
        tag_run(period_context(job_id, period_end).paths, mlflow_run_id, tags)
    return f"approval of plan {plan_id}: {decision.line()}" + (
        "" if decision.outcome == APPROVED else "; nothing is published")
