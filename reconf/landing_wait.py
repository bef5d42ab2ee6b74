"""A run waits for its period to land: the DAG's first task, deferred to the triggerer.

`WaitForLanding` checks the landing's `_SUCCESS` marker once; if it is there the task ends at
once. If not, the task *defers* to `LandingTrigger`, which polls the marker in the triggerer's
event loop (no worker slot, no process per poke) until the marker appears or the deadline passes:
**the period end + the job's `landing_timeout`** (default one SPL), measured from the period end,
not from when the run started, so a late run never waits longer and a backfill of a period that
never landed gives up at once.

The trigger ends the task itself (Airflow's `TaskSuccessEvent` / `TaskSkippedEvent`): the task
is never resumed on a worker. A resumed attempt is what Airflow 3.3 can lose: when the trigger
fires before the scheduler has read the exit of the process that deferred (a landing a second
after the deferral, on a busy scheduler), the scheduler finds the resumed attempt queued or
running, takes the stale exit for it, and fails the task ("finished with state success, but the
task instance's state attribute is queued"; apache/airflow issues 67287 and 72716). A task the
trigger ended is success or skipped, which that check leaves alone, so a landing at any moment
is safe (tests/e2e/test_deferral_race.py).

On the deadline the task is *skipped* with the land message, so collect … publish are skipped
too; the DAG's `missed_period` task (trigger rule `all_skipped`) then fails the run with the same
message and records the period as lost, so the next cycle goes on (jobs/cycles.py).

Before any of this the task passes the cycle gate (reconf/cycle_gate.py): a cycle whose previous
period failed is held, and ends here (docs/operations.md, "Airflow DAGs").

The first task of a scheduled run also records the periods the catch-up policy skipped (no run
between the previous run's period and this one; reconf/timetable.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
from airflow.triggers.base import BaseTrigger, TaskSkippedEvent, TaskSuccessEvent, TriggerEvent

__all__ = ["LandingTrigger", "WaitForLanding", "missed_message", "poll_interval"]

#: how long the triggerer's deferral may outlive the trigger's own deadline (a backstop only)
_DEFER_GRACE = timedelta(minutes=2)


def poll_interval(spl: timedelta) -> float:
    """Seconds between two looks at the marker: SPL/20, within [1, 15] s."""
    return min(15.0, max(1.0, spl.total_seconds() / 20))


def missed_message(job_id: str, period_end: datetime, marker: Path, wait: timedelta) -> str:
    """What / where / fix when a period did not land in time."""
    from schemas.landing import format_period_end

    stamp = format_period_end(period_end)
    return (f"period {stamp} of job {job_id!r} did not land within {wait} of its end (no "
            f"_SUCCESS marker): nothing was collected or published for it; LATEST is unchanged "
            f"and the job's next period runs as usual\n"
            f"  where: {marker}\n"
            f"  fix:   if the runtime lands it later, re-run this cycle: `airflow tasks clear "
            f"reconfigure_{job_id} -s {period_end.isoformat()} -e {period_end.isoformat()} -y` "
            f"(or `reconf land --job {job_id} --period-end {stamp}` to land it by hand first)")


class LandingTrigger(BaseTrigger):
    """Ends the task once `marker` exists (success), or at `deadline` (ISO-8601, UTC) skips it
    after logging `missed` (the land message) to the task's log (the module docstring)."""

    def __init__(self, marker: str, deadline: str, poll_s: float, missed: str = "") -> None:
        super().__init__()
        self.marker, self.deadline, self.poll_s, self.missed = marker, deadline, poll_s, missed

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("reconf.landing_wait.LandingTrigger",
                {"marker": self.marker, "deadline": self.deadline, "poll_s": self.poll_s,
                 "missed": self.missed})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        deadline = datetime.fromisoformat(self.deadline)
        marker = Path(self.marker)
        while True:
            if marker.is_file():
                self.log.info("landed: %s", marker)
                yield TaskSuccessEvent()
                return
            left = (deadline - datetime.now(UTC)).total_seconds()
            if left <= 0:
                self.log.warning("%s", self.missed or f"no {marker} by {self.deadline}")
                yield TaskSkippedEvent()
                return
            await asyncio.sleep(min(self.poll_s, left))


class WaitForLanding(BaseOperator):
    """The DAG's first task: the period's `_SUCCESS` is there, or the wait ends the cycle."""

    def __init__(self, *, job_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.job_id = job_id

    def _period(self, context: Any) -> tuple[Any, datetime, Path]:
        from schemas.config import Paths, resolve_job
        from schemas.landing import SUCCESS_MARKER, period_dir
        from schemas.periods import PeriodError, check_period_end

        logical = context.get("logical_date")
        if logical is None:
            raise AirflowFailException(
                "this run has no logical date, so it names no statistics period\n"
                f"  where: DAG run {context.get('run_id')}\n"
                "  fix:   trigger it with a logical date = the period end (CLI: `airflow dags "
                "trigger <dag> --logical-date 2026-01-01T00:05:00+00:00`)")
        job = resolve_job(self.job_id)
        end = datetime.fromisoformat(logical.isoformat()).astimezone(UTC)
        try:
            check_period_end(job, end)
        except PeriodError as exc:
            raise AirflowFailException(str(exc)) from None
        return job, end, period_dir(Paths.from_env().landing, job.job_id, end) / SUCCESS_MARKER

    def execute(self, context: Any) -> None:
        job, end, marker = self._period(context)
        from reconf.cycle_gate import pass_gate

        self.log.info("previous cycle: %s", pass_gate(context, job.job_id, end))
        self._note_skipped_periods(context, job, end)
        if marker.is_file():
            self.log.info("period %s of job %s has landed (%s)", end.isoformat(), job.job_id, marker)
            return
        deadline = end + job.landing_wait
        now = datetime.now(UTC)
        if now >= deadline:
            raise AirflowSkipException(missed_message(job.job_id, end, marker, job.landing_wait))
        self.log.info("waiting for period %s of job %s to land, until %s (landing_timeout %s): "
                      "deferred to the triggerer, watching %s", end.isoformat(), job.job_id,
                      deadline.isoformat(), job.landing_wait, marker)
        missed = missed_message(job.job_id, end, marker, job.landing_wait)
        self.defer(trigger=LandingTrigger(str(marker), deadline.isoformat(), poll_interval(job.spl),
                                          missed),
                   method_name="execute_complete", timeout=deadline - now + _DEFER_GRACE)

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> None:
        """Only for a trigger that resumes the task (one deferred by an older release, whose
        events are plain): today's trigger ends the task itself."""
        job, end, marker = self._period(context)
        if event is not None and event.get("status") == "landed":
            self.log.info("period %s of job %s has landed (%s)", end.isoformat(), job.job_id, marker)
            return
        raise AirflowSkipException(missed_message(job.job_id, end, marker, job.landing_wait))

    def _note_skipped_periods(self, context: Any, job: Any, end: datetime) -> None:
        """A scheduled run whose previous run is more than one period back: say which periods
        got no run (the catch-up policy, or a pause), and how to run them."""
        dag_run = context.get("dag_run")
        run_type = getattr(dag_run, "run_type", None)
        if getattr(run_type, "value", run_type) != "scheduled":
            return
        try:
            previous = context["ti"].get_previous_dagrun()
        except Exception:  # the record is a courtesy; the cycle does not depend on it
            return
        if previous is None or previous.logical_date is None:
            return
        before = datetime.fromisoformat(previous.logical_date.isoformat()).astimezone(UTC)
        missing = (end - before) // job.spl - 1
        if missing <= 0:
            return
        first, last = before + job.spl, end - job.spl
        self.log.warning(
            "catch-up policy (catchup_periods=%d): %d period(s) of job %s got no run and are "
            "skipped: %s … %s; to run them: airflow backfill create --dag-id reconfigure_%s "
            "--from-date %s --to-date %s --reprocess-behavior failed --max-active-runs 1",
            job.catchup_periods, missing, job.job_id, first.isoformat(), last.isoformat(),
            job.job_id, first.isoformat(), last.isoformat())
