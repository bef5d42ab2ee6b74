"""The gate every cycle passes in its first task: the previous period's outcome (jobs/cycles.py).

`pass_gate` asks Airflow for the DAG's previous run (the Task SDK: no metadata-DB access from a
task) and this period's record for what became of it; it either records the period as started
and returns, or records it as held and fails the task with what / where / fix. A held cycle
ends at once, so it never holds the active-run slot that a re-run of the failed period needs
(the wedge of `depends_on_past` with `max_active_runs = 1`: docs/operations.md "When a cycle
fails").
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

__all__ = ["held_message", "pass_gate", "record_cycle"]

_STATES = ("success", "failed", "running", "queued")
_log = logging.getLogger("reconf.dag")


def record_cycle(job_id: str, context: Any, state: str, detail: str,
                 stage: str | None = None) -> None:
    """A task records the cycle's outcome for the next cycle's gate (jobs/cycles.py). A failure
    to record is logged, never raised: the run's own state still stops the next cycle (the
    record then says only `started`, which the gate reads as failed unless the run succeeded)."""
    try:
        from jobs.cycles import CycleState, record_outcome
        from schemas.config import Paths

        end = datetime.fromisoformat(context["logical_date"].isoformat()).astimezone(UTC)
        record_outcome(Paths.from_env(), job_id, end, CycleState(state), detail,
                       run_id=str(context.get("run_id")), stage=stage)
    except Exception as exc:  # the record is advice to the gate; the run's state is the truth
        _log.warning("could not record the cycle's outcome (%s): %s", state, exc)


def _airflow_state(dag_id: str, period: datetime) -> str | None:
    """Airflow's state of the run whose logical date is `period` (None: there is none)."""
    from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

    for state in _STATES:
        if RuntimeTaskInstance.get_dr_count(dag_id, logical_dates=[period], states=[state]):
            return state
    return None


def held_message(job_id: str, period_end: datetime, behind: datetime, why: str,
                 rerunning: bool) -> str:
    """What / where / fix of a held cycle: the two ways on, with this run's own dates."""
    from schemas.landing import format_period_end

    dag, first, this = f"reconfigure_{job_id}", behind.isoformat(), period_end.isoformat()
    if rerunning:
        fix = (f"nothing to do if you are re-running the periods in order; otherwise re-run "
               f"this one after it: `airflow tasks clear {dag} -s {this} -e {this} -y`")
    else:
        fix = (f"either fix that period's input and re-run it with every period held behind it, "
               f"in order: `airflow tasks clear {dag} -s {first} -e {this} -y`; or give it up: "
               f"`reconf period lost --job {job_id} --period-end {format_period_end(behind)} "
               f"--reason '...'` (the job's next period then goes on by itself; to run this "
               f"one too: `airflow tasks clear {dag} -s {this} -e {this} -y`)")
    return (f"held: period {format_period_end(period_end)} of job {job_id!r} is not run because "
            f"{why}; a cycle never plans past a failed one (nothing was collected or published "
            f"for this period; LATEST is unchanged and the runtime keeps its assignment)\n"
            f"  where: DAG {dag}, the run of {first}\n"
            f"  fix:   {fix} (docs/operations.md, \"When a cycle fails\")")


def pass_gate(context: Any, job_id: str, period_end: datetime) -> str:
    """Record the period as started and say why it may go on, or record it as held and fail
    the task (`AirflowFailException`, not retried)."""
    from jobs.cycles import CycleState, decide, read_outcome, record_outcome
    from schemas.config import Paths

    paths = Paths.from_env()
    dag_run = context.get("dag_run")
    dag_id = getattr(dag_run, "dag_id", None) or f"reconfigure_{job_id}"
    run_id = str(context.get("run_id") or getattr(dag_run, "run_id", ""))
    previous = context["ti"].get_previous_dagrun()
    before = getattr(previous, "logical_date", None)
    decision = decide(
        None if before is None else datetime.fromisoformat(before.isoformat()).astimezone(UTC),
        None if previous is None else str(getattr(previous.state, "value", previous.state)),
        lambda p: read_outcome(paths, job_id, p),
        lambda p: _airflow_state(dag_id, p))
    if decision.go:
        record_outcome(paths, job_id, period_end, CycleState.STARTED, decision.why,
                       run_id=run_id)
        return decision.why
    assert decision.behind is not None  # a hold always names the period it waits for
    message = held_message(job_id, period_end, decision.behind, decision.why, decision.rerunning)
    record_outcome(paths, job_id, period_end, CycleState.HELD, decision.why, run_id=run_id,
                   behind=decision.behind)
    raise AirflowFailException(message)
