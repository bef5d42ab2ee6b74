"""One healing DAG per job whose `[jobs.<id>.healing]` is enabled: out-of-schedule cycles for a
node the runtime reports dead or far over capacity (docs/operations.md, "Healing between periods").

Event-driven (Airflow 3 assets): the DAG `heal_<job_id>` is scheduled on the asset
`reconf://<job_id>/health`, whose `AssetWatcher` runs `HealthReportTrigger` in the triggerer; each
new health report the runtime writes (schemas/health.py) becomes an asset event and a run of this
DAG (reconf/health_watch.py). The job's scheduled DAG (dags/reconfigure.py) keeps its period grid
and logical dates: healing runs are runs of their own DAG. One run at a time; `wait_for_gap` defers
until `min_gap` after the last healing; `heal` heals each report of the run's events, keyed by the
report (a report delivered twice heals once), publishes a normal versioned manifest and updates the
job's assignment asset; a report beyond the cap or budget is an alert (a failed task, a lake row,
an MLflow run) and changes nothing. Thin: nothing heavy is imported at parse time.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, Asset, AssetWatcher, task
from airflow.sdk.exceptions import AirflowFailException

from reconf.assets import assignment_asset
from reconf.health_watch import HealthReportTrigger, WaitForGap
from schemas.config import JobConfig, valid_jobs

_log = logging.getLogger("reconf.heal")


def health_asset(job_id: str) -> Asset:
    """The asset a job's health reports update (watched in the triggerer)."""
    return Asset(uri=f"reconf://{job_id}/health", name=f"reconf_{job_id}_health", group="reconf",
                 watchers=[AssetWatcher(name=f"reconf_{job_id}_health_reports",
                                        trigger=HealthReportTrigger(job_id=job_id))])


def report_ids(context: dict[str, Any]) -> list[str]:
    """The report ids of the run's triggering asset events, each once, in name order."""
    found: set[str] = set()
    for events in (context.get("triggering_asset_events") or {}).values():
        for event in events:
            payload = (getattr(event, "extra", None) or {}).get("payload") or {}
            if isinstance(payload, dict) and payload.get("report_id"):
                found.add(str(payload["report_id"]))
    return sorted(found)


def _heal(job_id: str, asset: Asset) -> Any:
    @task(task_id="heal", outlets=[asset], retries=2, retry_delay=timedelta(seconds=20))
    def heal(job_id: str, **context: Any) -> list[dict[str, Any]]:
        from jobs.heal.stage import heal as heal_report
        from reconf.health_watch import done_marker
        from schemas.config import Paths, resolve_job
        from schemas.errors import ReconfError
        from schemas.health import health_dir, read_report

        job, paths = resolve_job(job_id), Paths.from_env()
        ids = report_ids(context)
        if not ids:
            raise AirflowFailException(
                f"this run of heal_{job_id} names no health report\n  where: its triggering "
                "asset events\n  fix:   runs come from the runtime's reports (schemas/health.py); "
                f"to heal by hand: reconf heal --job {job_id} --report-id <id>")
        done, alerts = [], []
        paths_of = {r: health_dir(paths.landing, job_id) / f"{r}.json" for r in ids}
        try:  # the reports in the order they were made
            reports = sorted((read_report(p) for p in paths_of.values()),
                             key=lambda r: (r.at, r.report_id))
        except ValueError as exc:  # a malformed report: not retried
            raise AirflowFailException(str(exc)) from None
        for report in reports:
            report_id, path = report.report_id, paths_of[report.report_id]
            print(f"reconf-stage heal start {report_id}", flush=True)
            try:
                result = heal_report(job, report, paths=paths)
            except ReconfError as exc:  # refused input, the gap: not retried
                raise AirflowFailException(str(exc)) from None
            _log.info("%s", result.summary())
            print(result.summary(), flush=True)
            done_marker(path).touch()
            done.append({"report_id": report_id, "status": result.status,
                         "version": result.version, "heal_id": result.heal_id})
            if result.status == "alert":
                alerts.append(result.summary())
        context["outlet_events"][asset].extra = {"job_id": job_id, "healings": done}
        if alerts:
            raise AirflowFailException("healing alert(s), nothing done for them:\n" +
                                       "\n".join(alerts))
        return done

    return heal


def build_dag(job: JobConfig) -> DAG:
    with DAG(
        dag_id=f"heal_{job.job_id}",
        description=f"Heal stream job {job.job_id} between periods (dead or hot nodes)",
        schedule=[health_asset(job.job_id)],
        start_date=job.start_date,
        catchup=False,
        max_active_runs=1,
        default_args={"depends_on_past": False, "retries": 0},
        tags=["reconf", "healing", job.job_id],
    ) as dag:
        gap = WaitForGap(task_id="wait_for_gap", job_id=job.job_id,
                         execution_timeout=job.healing.min_gap + timedelta(minutes=10))
        healed = _heal(job.job_id, assignment_asset(job.job_id))(job.job_id)
        gap >> healed
    return dag


for _job in valid_jobs().values():
    if _job.healing.enabled:
        globals()[f"heal_{_job.job_id}"] = build_dag(_job)
