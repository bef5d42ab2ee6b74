"""Plan attempts: every plan of a period is a new attempt, with its own plan id and MLflow run.

A published version is a promise to the runtime *and* to the auditor: its plan row, its MLflow
run and its manifest must say the same thing forever. So nothing ever rewrites a plan: planning a
period again (by hand, by `reconf fleet`, by a cleared Airflow task, by a backfill that redoes a
range) records one more attempt beside the earlier ones. An attempt of a period that already has
a published version is recorded with status `not_published` and is never published; before
that, publish publishes exactly one attempt of the period (jobs/publish/stage.py), and the others
become `not_published` then.

The ids and the statuses are schemas/attempts.py's (`plan_id`, `PlanStatus`). The attempt number
is one more than the highest the period has in either store, the `plans` table or MLflow (the run
is logged before the rows are written, so a crash in between must not hand its number out twice);
writers of one job hold its lock (jobs/errors.py), so two attempts never race for a number.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobs.errors import StageError
from jobs.lake import Scope, concurrently
from schemas.attempts import PlanStatus, attempt_of
from schemas.manifest import assignment_checksum
from schemas.tracking import Tag

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from jobs.lake import Lake
    from schemas.config import Paths

__all__ = [
    "PeriodRecord",
    "attempt_predicate",
    "check_identity",
    "choose_attempt",
    "period_record",
    "settle_statuses",
]


def attempt_predicate(job_id: str, period_end: datetime, pid: str) -> Scope:
    """The rows of one attempt (of `plans` or `plan_moves`)."""
    return Scope(job_id, period_end, pid)


@dataclass(frozen=True)
class PeriodRecord:
    """What the tables hold of one period's plans: its attempts, and its published version."""

    attempts: tuple[str, ...] = ()  # plan ids in the `plans` table, oldest attempt first
    published_version: int | None = None
    published_plan: str | None = None  # the plan id of the published version

    def next_attempt(self, logged: int = 0) -> int:
        """One more than the highest attempt in the table and in MLflow (`logged`)."""
        return max([logged, *map(attempt_of, self.attempts)]) + 1


def period_record(lake: Lake, job_id: str, period_end: datetime) -> PeriodRecord:
    """The period's attempts and its published version, in one round of queries."""
    plans, version = concurrently(lambda: lake.plan_ids(job_id, period_end),
                                  lambda: lake.period_version(job_id, period_end))
    ids = tuple(sorted(plans, key=attempt_of))
    if version is None:
        return PeriodRecord(ids)
    return PeriodRecord(ids, int(version["version"]), str(version["plan_id"]))


def choose_attempt(job_id: str, stamp: str, attempts: list[dict[str, Any]], wanted: str | None,
                   airflow_run: str | None) -> dict[str, Any]:
    """The attempt publish publishes: `wanted` (a plan id), else the newest made by this Airflow
    run (its plan task's), else the period's newest. `attempts`: the period's plans rows."""
    ordered = sorted(attempts, key=lambda r: attempt_of(str(r["plan_id"])))
    if wanted is not None:
        row = next((r for r in ordered if r["plan_id"] == wanted), None)
        if row is None:
            raise StageError(
                f"job {job_id!r} has no plan {wanted!r} for the period ending {stamp}",
                where=f"table plans, job {job_id!r}, period ending {stamp}",
                fix=f"publish one of the period's plans ({', '.join(r['plan_id'] for r in ordered)}),"
                    " or leave out --plan-id to publish the newest",
            )
        return row
    own = [r for r in ordered
           if airflow_run and json.loads(r["plan_json"]).get("airflow_run_id") == airflow_run]
    return (own or ordered)[-1]


def check_identity(row: Mapping[str, Any], plan_json: Mapping[str, Any],
                   run_tags: Mapping[str, str], *, checksum: str | None = None) -> str:
    """The checksum of the plan's assignment, after checking that the plans row, its plan JSON
    and its MLflow run (what `reconf audit` shows) name the same plan and the same assignment.

    A plans row is never rewritten (each attempt has its own); a row that disagrees with its run
    was edited by hand or by an older writer, and publishing it would publish something the audit
    trail does not show. `checksum`: the assignment's, when the caller has already hashed it
    (publish, from the plan's arrays); else it is computed from the plan JSON's assignment.
    """
    pid = str(row["plan_id"])
    if checksum is None:
        checksum = assignment_checksum(
            {str(k): str(v) for k, v in plan_json["assignment"].items()})
    recorded = [("its plan JSON", "plan_id", plan_json.get("plan_id"), pid),
                ("its plan JSON", "checksum", plan_json.get("checksum"), checksum),
                (f"its MLflow run {row['mlflow_run_id']}", "plan_id",
                 run_tags.get(Tag.PLAN_ID), pid),
                (f"its MLflow run {row['mlflow_run_id']}", "checksum",
                 run_tags.get(Tag.CHECKSUM), checksum)]
    for source, what, value, expected in recorded:
        if value is not None and value != expected:  # plans of older releases lack some
            raise StageError(
                f"plan {pid} does not match what was planned: {source} records {what} {value}, "
                f"the plans row holds {expected}; it is not published",
                where=f"plans row {pid}",
                fix="plans rows are written once and never edited: plan the period again (a new "
                    "attempt, `reconf plan`) and publish that",
            )
    return checksum


def settle_statuses(spark: SparkSession, paths: Paths, job_id: str, period_end: datetime,
                    published: str) -> None:
    """After the period's version is committed: its plan `published`, the period's other attempts
    that were waiting (`planned`) `not_published`, in one commit."""
    from jobs.lake import open_lake

    open_lake(paths, spark).settle_plan_statuses(job_id, period_end, published,
                                                 PlanStatus.NOT_PUBLISHED)
