"""The healing DAG's Airflow parts: the health-report watcher and the wait for the minimum gap.

`HealthReportTrigger` is an event trigger (Airflow 3's `BaseEventTrigger`): an `AssetWatcher` of
the job's asset `reconf://<job_id>/health` runs it in the triggerer, where it polls the job's
health reports (schemas/health.py) and fires one event per report not handled yet, its payload
the report's id; each event is an asset event, and the healing DAG, scheduled on the asset, runs
for it (dags/healing.py). A report is handled once the heal task wrote its `<report_id>.done`
marker next to it, after the lake holds its outcome: a triggerer restart re-fires only reports
not handled yet, and the heal is keyed by the report anyway (jobs/heal/stage.py), so a report
fired twice heals once.

`WaitForGap` is the DAG's first task: if the job's last healing was published less than
`min_gap` ago it defers to a `DateTimeTrigger` until the gap has passed (no worker slot held),
which ends the task itself (`end_from_trigger`: no resumed attempt for Airflow 3.3 to lose,
reconf/landing_wait.py); then the heal task runs. Scheduled runs of the job keep their own DAG and grid.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator
from airflow.triggers.base import BaseEventTrigger, TriggerEvent

__all__ = ["DONE_SUFFIX", "HealthReportTrigger", "WaitForGap", "done_marker", "pending_reports"]

DONE_SUFFIX = ".done"


def done_marker(report: Path) -> Path:
    return report.with_suffix(DONE_SUFFIX)


def pending_reports(landing: Path, job_id: str) -> list[str]:
    """The ids of the job's reports without a done marker, in name order."""
    from schemas.health import list_reports

    return [p.stem for p in list_reports(landing, job_id) if not done_marker(p).exists()]


class HealthReportTrigger(BaseEventTrigger):
    """Fires `{"job_id", "report_id"}` once per pending health report of the job."""

    def __init__(self, job_id: str, poll_s: float = 2.0) -> None:
        super().__init__()
        self.job_id, self.poll_s = job_id, poll_s

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("reconf.health_watch.HealthReportTrigger",
                {"job_id": self.job_id, "poll_s": self.poll_s})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from schemas.config import Paths

        landing = Paths.from_env().landing
        fired: set[str] = set()
        while True:
            for report_id in pending_reports(landing, self.job_id):
                if report_id not in fired:
                    fired.add(report_id)
                    self.log.info("health report %s of job %s: healing", report_id, self.job_id)
                    yield TriggerEvent({"job_id": self.job_id, "report_id": report_id})
            await asyncio.sleep(self.poll_s)


class WaitForGap(BaseOperator):
    """Ends at once, or defers until the job's last healing + `min_gap` (the module docstring)."""

    def __init__(self, *, job_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.job_id = job_id

    def execute(self, context: Any) -> None:
        from airflow.providers.standard.triggers.temporal import DateTimeTrigger

        from jobs.heal.stage import next_allowed
        from schemas.config import Paths, resolve_job

        job = resolve_job(self.job_id)
        until = next_allowed(job, Paths.from_env())
        now = datetime.now(UTC)
        if until is None or until <= now:
            self.log.info("job %s: no healing within min_gap %s; healing now", self.job_id,
                          job.healing.min_gap)
            return
        self.log.info("job %s: the last healing published less than min_gap %s ago; waiting "
                      "until %s, deferred to the triggerer", self.job_id, job.healing.min_gap,
                      until.isoformat())
        # the trigger ends the task itself: a resumed attempt could be failed by Airflow 3.3 when
        # the moment comes before the scheduler read this process's exit (reconf/landing_wait.py)
        self.defer(trigger=DateTimeTrigger(moment=until, end_from_trigger=True),
                   method_name="execute_complete")

    def execute_complete(self, context: Any, event: Any = None) -> None:
        self.log.info("job %s: min_gap has passed; healing now", self.job_id)
