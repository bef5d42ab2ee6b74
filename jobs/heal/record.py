"""The healing record: one `healings` row per finding (jobs/heal/stage.py), and the alert run.

The row is keyed by `heal_id` (what is healed, never when), written last, once the outcome is
final: a healing that crashes before it leaves no row and heals when retried; one with a row
returns it. An alert also gets an MLflow run in the job's experiment (tagged
`reconf.healing.status=alert`, its note saying what and how to fix) and an ERROR line in the
stage's log, where operators look.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from jobs.lake.api import quote
from jobs.tracking.store import open_experiment, open_store
from schemas.attempts import PlanStatus
from schemas.health import HealthReport
from schemas.tables import HEALINGS
from schemas.tracking import Tag

if TYPE_CHECKING:
    from jobs.context import StageContext
    from jobs.lake import Lake
    from schemas.config import Paths

__all__ = ["last_healed", "record_outcome", "recorded", "records_of_report"]

_log = logging.getLogger(__name__)


def _where(job_id: str, heal_id: str) -> str:
    return f"job_id = {quote(job_id)} AND heal_id = {quote(heal_id)}"


def recorded(lake: Lake, job_id: str, heal_id: str) -> dict[str, Any] | None:
    """The finding's row, if it was handled before."""
    rows = lake.records(f"SELECT * FROM {{{HEALINGS.name}}} WHERE {_where(job_id, heal_id)}")
    return rows[0] if rows else None


def records_of_report(lake: Lake, job_id: str, report_id: str) -> list[dict[str, Any]]:
    """The rows of every finding recorded under a report id (one, unless it was rewritten)."""
    return lake.records(f"SELECT heal_id, status, version, nodes FROM {{{HEALINGS.name}}} "
                        f"WHERE job_id = {quote(job_id)} AND report_id = {quote(report_id)}")


def last_healed(lake: Lake, job_id: str) -> datetime | None:
    """When the job's newest published healing was published (UTC), or None."""
    rows = lake.records(f"SELECT max(healed_at) AS last FROM {{{HEALINGS.name}}} WHERE "
                        f"job_id = {quote(job_id)} AND status = {quote(PlanStatus.PUBLISHED)}")
    last = rows[0]["last"] if rows else None
    return None if last is None else (last if last.tzinfo else last.replace(tzinfo=UTC))


#: nodes an alert's MLflow tag and note list; the rest are counted (MLflow's values are bounded)
_LISTED = 50


def _listed(nodes: tuple[str, ...], sep: str) -> str:
    more = len(nodes) - _LISTED
    return sep.join(nodes[:_LISTED]) + (f"{sep}(+{more} more)" if more > 0 else "")


def _alert_run(paths: Paths, report: HealthReport, heal_id: str, nodes: tuple[str, ...],
               message: str) -> str:
    client = open_store(paths)
    experiment = open_experiment(client, paths, report.job_id)
    run = client.create_run(experiment, run_name=f"healing alert {report.report_id}", tags={
        Tag.HEALING_ID: heal_id, Tag.HEALING_REPORT: report.report_id,
        Tag.HEALING_NODES: _listed(nodes, ","), Tag.HEALING_STATUS: "alert",
        Tag.NOTE: f"**Healing alert** for report `{report.report_id}` "
                  f"(nodes {_listed(nodes, ', ')}): nothing was done.\n\n{message}"})
    client.set_terminated(run.info.run_id, "FINISHED")
    return str(run.info.run_id)


def record_outcome(ctx: StageContext, report: HealthReport, heal_id: str, nodes: tuple[str, ...],
                   status: str, message: str, *, version: int | None = None,
                   plan_id: str | None = None, moves: int = 0, mlflow_run_id: str | None = None
                   ) -> dict[str, Any]:
    """Write the finding's row (and, for an alert, its MLflow run and log line); the row."""
    if status == "alert":
        mlflow_run_id = _alert_run(ctx.paths, report, heal_id, nodes, message)
        _log.error("healing ALERT, job %s, report %s, nodes %s: %s (MLflow run %s)",
                   ctx.job_id, report.report_id, _listed(nodes, ", "), message, mlflow_run_id)
    row = {"job_id": ctx.job_id, "heal_id": heal_id, "report_id": report.report_id,
           "reported_at": report.at, "nodes": ",".join(nodes), "status": status,
           "version": version, "plan_id": plan_id, "moves": moves,
           "mlflow_run_id": mlflow_run_id, "message": message, "healed_at": datetime.now(UTC)}
    ctx.lake.write_records(HEALINGS, [row], _where(ctx.job_id, heal_id))
    return row
