"""The approval step of a job with `approval = true`: plan -> whatif -> approve -> publish.

Airflow 3's human-in-the-loop `ApprovalOperator` (apache-airflow-providers-standard) does the
asking: on Airflow 3.3 the task parks in the state *awaiting_input* (no worker slot, no
triggerer) until someone answers in the UI (the run's task -> "Required actions", or the
"Required actions" page) or through the REST API the UI uses
(`PATCH /api/v2/dags/{dag}/dagRuns/{run}/taskInstances/approve/-1/hitlDetails`), or until the
job's `approval_timeout` passes, when the scheduler applies the operator's default, *Reject*.
`ApprovePlan` adds what reconf needs around that and nothing else:

- before asking, the request's subject and body are the plan's (jobs/approval.py
  `request_text`: summary line, what-if ranking, MLflow run link);
- after the answer, the decision is recorded on the plan (`record_decision`): approved, rejected
  with the approver's reason, or timed out. Reject (or a timeout) makes the operator skip
  publish, so nothing is published and the run still ends *success*: the cycle did its job;
- a dry run asks nothing (there is nothing to publish; publish logs the dry run as usual).

The what-if runs before the question (`whatif_before_approval`, task id `whatif`), not as the
teardown after publish it is for other jobs, so that the approver sees the ranking; its failure
never blocks the question, which then says the what-if did not run.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime, timedelta
from typing import Any

from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk import Param, task

from reconf.mlflow_link import MlflowRunLink, remember_url

__all__ = ["REASON", "ApprovePlan", "whatif_before_approval"]

_log = logging.getLogger("reconf.dag")
#: the form field of the request: why the plan is rejected (recorded on the plan)
REASON = "reason"


def _period_end(context: Any) -> str:
    return str(context["logical_date"].isoformat())  # plan already refused a run without one


@task(task_id="whatif", retries=0)
def whatif_before_approval(job_id: str, **context: Any) -> str:
    """The shadows plan the period's state before the approver decides (the plan is not
    published yet, hence `force`); any failure is reported in the request, never raised."""
    if context["params"]["dry_run"]:
        return "dry run: no what-if"
    print("reconf-stage whatif start", flush=True)
    try:
        from jobs.run import run_whatif

        summary = run_whatif(job_id, _period_end(context), force=True)
    except Exception as exc:  # the approval must still be asked: the what-if is advice
        summary = f"the what-if failed ({type(exc).__name__}: {exc})"
        _log.warning("%s", summary)
    _log.info("%s", summary)
    print("reconf-stage whatif done", flush=True)
    return summary


class ApprovePlan(ApprovalOperator):
    """Approve or reject the period's plan before publish (see the module's docstring)."""

    operator_extra_links = (MlflowRunLink(),)

    def __init__(self, *, job_id: str, timeout: timedelta, **kwargs: Any) -> None:
        # the DAG's params come in too (Airflow's default args); the operator keeps only the
        # task's own as the request's form
        params = kwargs.pop("params", None) or {}
        params[REASON] = Param("", type="string", title="Reason",
                               description="why the plan is rejected (recorded on the plan and "
                                           "shown by `reconf audit`)")
        super().__init__(subject=f"Publish the plan of job {job_id}?", body=None,
                         defaults=ApprovalOperator.REJECT, response_timeout=timeout,
                         params=params, **kwargs)
        self.job_id = job_id

    def execute(self, context: Any) -> Any:
        planned = context["ti"].xcom_pull(task_ids="plan") or {}
        if not planned or planned.get("dry_run"):
            self.log.info("dry run: nothing is published, so nothing to approve")
            return None
        remember_url(context, planned.get("mlflow_url"))
        from jobs.approval import request_text

        assert self.response_timeout is not None  # set by __init__
        self.subject, self.body = request_text(
            self.job_id, planned, context["ti"].xcom_pull(task_ids="whatif"),
            self.response_timeout)
        with contextlib.suppress(ValueError):  # no [api] base_url: no link to log
            self.log.info("approve or reject it here: %s",
                          self.generate_link_to_ui_from_context(context=context))
        return super().execute(context)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
        # Recorded first: on Reject the operator skips publish by raising (the SDK's
        # DownstreamTasksSkipped), so nothing after it would run.
        if "error" not in event:
            self._record(context, event)
        return super().execute_complete(context=context, event=event)

    def _record(self, context: Any, event: dict[str, Any]) -> None:
        from jobs.approval import (
            APPROVED,
            REJECTED,
            TIMED_OUT,
            Decision,
            record_decision,
        )

        planned = context["ti"].xcom_pull(task_ids="plan") or {}
        remember_url(context, planned.get("mlflow_url"))
        approved = list(event.get("chosen_options") or []) == [self.APPROVE]
        outcome = APPROVED if approved else TIMED_OUT if event.get("timedout") else REJECTED
        reason = str((event.get("params_input") or {}).get(REASON) or "").strip()
        if outcome == TIMED_OUT:
            reason = f"no answer within {self.response_timeout}, rejected by default"
        elif outcome == REJECTED and not reason:
            reason = "no reason given"
        user = event.get("responded_by_user") or {}
        at = event.get("responded_at")
        line = record_decision(
            self.job_id, _period_end(context), str(planned["plan_id"]),
            planned.get("mlflow_run_id"),
            Decision(outcome, reason, user.get("name") or user.get("id") or None,
                     at.isoformat() if isinstance(at, datetime) else str(at or "")))
        print(line, flush=True)
        if outcome != APPROVED:  # publish is skipped: the record says why, for the next cycle
            from jobs.cycles import CycleState
            from reconf.cycle_gate import record_cycle

            record_cycle(self.job_id, context, CycleState.NOT_PUBLISHED, f"{outcome}: {reason}")
