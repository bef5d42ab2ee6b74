"""One manual rollback DAG per configured job: `rollback_<job_id>`, triggered with params.

It runs the very code of `reconf rollback` (jobs/publish/rollback.py): version N+1 is published
with an earlier version's assignment, as a plan of its own (its moves, schedule, budget check or
an explicit override, MLflow run and reason). Thin by design: at import time it only reads the
small TOML job config; the task imports the lake, the planner and MLflow when it runs.

No schedule: an operator triggers it from the UI (the form lists the params with their
descriptions) or with `airflow dags trigger rollback_<job> --conf '{"to_version": 1, "reason":
"…"}'` (docs/operations.md, "Rollback through Airflow"). `to_version` has no default, so a trigger
without it is refused before any run exists; every other refusal (an unknown or not older version,
a missing reason, a broken budget without override) fails the run at once, not retried, with the
same what / where / fix as the CLI, and nothing is published. On success the task emits the job's
assignment Asset like the reconfigure DAG's publish, so a deployer scheduled on it sees the new
version. Idempotent per run: a cleared run whose rollback was already published returns that
version instead of publishing another.
"""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk import DAG, Asset, Param, task
from airflow.sdk.exceptions import AirflowFailException

from reconf.assets import assignment_asset
from schemas.config import JobConfig, valid_jobs
from schemas.errors import ReconfError
from schemas.reasons import REASON_MAX_CHARS

_log = logging.getLogger("reconf.dag")


def rollback_params() -> dict[str, Param]:
    """The trigger form: what to enter, checked by Airflow before the run starts."""
    return {
        "to_version": Param(type="integer", minimum=1, title="Roll back to version",
                            description="the earlier published version whose assignment the new "
                            "version gets (see `reconf audit`; must be older than the newest)"),
        "reason": Param("", type="string", title="Reason", maxLength=REASON_MAX_CHARS,
                        description="required: why roll back (kept on the rollback's MLflow run "
                        f"and shown by `reconf audit`; at most {REASON_MAX_CHARS} characters)"),
        "override_budget": Param(None, type=["null", "string"], title="Override budget",
                                 maxLength=REASON_MAX_CHARS,
                                 description="leave empty to keep the job's migration budget; "
                                 "a reason here publishes the rollback even if its moves break "
                                 "the budget (kept on the MLflow run)"),
    }


def _rollback_task(job_id: str, asset: Asset) -> Any:
    @task(task_id="rollback", retries=0, outlets=[asset])
    def rollback(**context: Any) -> dict[str, Any]:
        params = context["params"]
        print("reconf-stage rollback start", flush=True)
        try:
            from jobs.publish.rollback import rollback as publish_rollback
            from jobs.publish.rollback import trigger_spelling
            from schemas.attempts import PlanStatus
            from schemas.config import Paths, resolve_job

            # the fixes name this DAG's params (its trigger's --conf keys), not the CLI's flags
            result = publish_rollback(
                resolve_job(job_id), int(params["to_version"]), paths=Paths.from_env(),
                reason=str(params["reason"] or ""),
                override_budget=params.get("override_budget") or None,
                asked=trigger_spelling(f"rollback_{job_id}"))
        except ReconfError as exc:  # bad input: the CLI's message, nothing published, no retry
            print("rollback refused: bad input, not retried; nothing was published (LATEST is "
                  "unchanged)", flush=True)
            raise AirflowFailException(str(exc)) from None
        _log.info("%s", result.summary())
        print(result.summary(), flush=True)
        context["outlet_events"][asset].extra = {
            "job_id": job_id, "version": result.version, "status": str(PlanStatus.PUBLISHED),
            "manifest": result.manifest, "mlflow_run_id": result.mlflow_run_id,
            "rollback_to": result.to_version}
        return {"version": result.version, "to_version": result.to_version,
                "plan_id": result.plan_id, "mlflow_run_id": result.mlflow_run_id}

    return rollback


def build_rollback_dag(job: JobConfig) -> DAG:
    with DAG(
        dag_id=f"rollback_{job.job_id}",
        description=f"Roll job {job.job_id} back to an earlier assignment version (manual)",
        schedule=None,
        start_date=job.start_date,
        catchup=False,
        max_active_runs=1,
        params=rollback_params(),
        tags=["reconf", job.job_id, "rollback"],
        doc_md=__doc__,
    ) as dag:
        _rollback_task(job.job_id, assignment_asset(job.job_id))()
    return dag



for _job in valid_jobs().values():
    globals()[f"rollback_{_job.job_id}"] = build_rollback_dag(_job)
