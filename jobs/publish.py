"""publish: the period's plan -> the next immutable assignment version (Delta + JSON manifest).

Order of writes, each step idempotent, so a crash anywhere is mended by a rerun:
1. the manifest file `v<N>.json` (temp file + rename; never overwritten);
2. the `assignments` rows of version N (one Delta commit);
3. the `assignment_versions` row (one Delta commit) — the commit point of the version;
4. `LATEST` (temp file + rename), only ever forward.
A rerun of a published period finds its version row and publishes nothing new. A plan for a period
older than the newest published one is recorded as historical and never moves LATEST back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from jobs.errors import StageError
from jobs.lake import (
    delta_path,
    ensure_tables,
    period_predicate,
    quote,
    read_table,
    replace_rows,
    table_version,
)
from jobs.tracking import tag_run
from schemas.config import JobConfig, Paths
from schemas.landing import format_period_end
from schemas.manifest import (
    Manifest,
    ManifestError,
    ScalingSection,
    assignment_checksum,
    manifest_path,
    read_latest_version,
    read_manifest,
    write_latest,
    write_manifest,
)
from schemas.tables import ASSIGNMENT_VERSIONS, ASSIGNMENTS, PLANS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["PublishResult", "publish_period"]


@dataclass(frozen=True)
class PublishResult:
    job_id: str
    period_end: str
    version: int | None  # None: historical plan, nothing published
    status: str  # "published", "already_published" or "historical"
    manifest: str | None


def _manifest_for(
    paths: Paths, job_id: str, version: int, pid: str, period_end: datetime,
    assignment: dict[str, str], scaling: ScalingSection,
) -> Manifest:
    """The manifest of version N: the one already on disk for this plan (crash recovery), or new."""
    if manifest_path(paths.published, job_id, version).is_file():
        existing = read_manifest(paths.published, job_id, version)
        if existing.plan_id == pid and existing.checksum == assignment_checksum(assignment):
            return existing
        raise StageError(
            f"version {version} is on disk for plan {existing.plan_id!r}, "
            f"but the version table does not know it",
            where=str(manifest_path(paths.published, job_id, version)),
            fix="another publisher wrote this version; investigate before publishing again",
        )
    return Manifest.create(
        job_id=job_id, version=version, period_end=period_end, plan_id=pid,
        assignment=assignment, scaling=scaling, created_at=datetime.now(UTC),
    )


def publish_period(
    job: JobConfig, period_end: datetime, *, paths: Paths, spark: SparkSession
) -> PublishResult:
    from pyspark.sql import functions as F

    ensure_tables(spark, paths)
    stamp = format_period_end(period_end)
    plan_row = read_table(spark, paths, PLANS).where(period_predicate(job.job_id, period_end)).first()
    if plan_row is None:
        raise StageError(
            f"no plan for job {job.job_id!r}, period ending {stamp}",
            where=paths.table(PLANS.name),
            fix=f"run `reconf plan --job {job.job_id} --period-end {stamp}` first",
        )
    plan_json = json.loads(plan_row["plan_json"])
    pid = plan_row["plan_id"]
    versions = read_table(spark, paths, ASSIGNMENT_VERSIONS).where(F.col("job_id") == job.job_id)
    mine = versions.where(F.col("period_end") == F.lit(period_end)).first()
    if mine is not None:  # a rerun: make sure the steps after the commit point happened
        version = int(mine["version"])
        if (read_latest_version(paths.published, job.job_id) or 0) < version:
            write_latest(paths.published, job.job_id, version)
        # A crash after the commit point, or a rerun of `plan` (which rewrites the plan row as
        # "planned"), leaves the plan's status behind; mend it while the plan row still is the
        # published assignment.
        published = {str(k): str(v) for k, v in plan_json["assignment"].items()}
        if plan_row["status"] != "published" and assignment_checksum(published) == mine["checksum"]:
            _set_plan_status(spark, paths, job.job_id, period_end, "published")
        return PublishResult(job.job_id, stamp, version, "already_published", mine["manifest_path"])
    newer = versions.where(F.col("period_end") > F.lit(period_end)).count()
    if newer:
        _set_plan_status(spark, paths, job.job_id, period_end, "historical")
        if plan_row["mlflow_run_id"]:
            tag_run(paths, plan_row["mlflow_run_id"], {"reconf.publish_status": "historical"})
        return PublishResult(job.job_id, stamp, None, "historical", None)

    top = versions.agg(F.max("version")).first()
    version = int(top[0]) + 1 if top is not None and top[0] is not None else 1
    assignment = {str(k): str(v) for k, v in plan_json["assignment"].items()}
    raw = plan_json.get("scaling", {})
    scaling = ScalingSection(
        nodes_to_add=tuple(raw.get("nodes_to_add", ())),
        nodes_to_mark=tuple(raw.get("nodes_to_mark", ())),
        nodes_to_terminate=tuple(raw.get("nodes_to_terminate", ())),
        reason=str(raw.get("reason", "")),
    )
    try:
        manifest = _manifest_for(paths, job.job_id, version, pid, period_end, assignment, scaling)
        path = write_manifest(paths.published, manifest)
    except ManifestError as exc:
        raise StageError(str(exc), where=str(paths.published / job.job_id),
                         fix="inspect the published directory; versions are immutable") from exc
    version_where = f"job_id = {quote(job.job_id)} AND version = {version}"
    replace_rows(
        spark.createDataFrame(
            [{"job_id": job.job_id, "version": version, "keygroup": kg, "node": node}
             for kg, node in sorted(assignment.items())],
            ASSIGNMENTS.ddl,
        ),
        paths, ASSIGNMENTS, version_where,
    )
    replace_rows(
        spark.createDataFrame(
            [{"job_id": job.job_id, "version": version, "plan_id": pid, "period_end": period_end,
              "checksum": manifest.checksum, "status": "published", "manifest_path": str(path),
              "published_at": datetime.now(UTC)}],
            ASSIGNMENT_VERSIONS.ddl,
        ),
        paths, ASSIGNMENT_VERSIONS, version_where,
    )
    write_latest(paths.published, job.job_id, version)
    _set_plan_status(spark, paths, job.job_id, period_end, "published")
    if plan_row["mlflow_run_id"]:
        # the plan tagged the tables it read and wrote; publish adds the version log's version
        tag_run(paths, plan_row["mlflow_run_id"], {
            "reconf.publish_status": "published", "reconf.assignment_version": str(version),
            "reconf.manifest": str(path), f"reconf.delta.{ASSIGNMENT_VERSIONS.name}.version":
            str(table_version(spark, paths, ASSIGNMENT_VERSIONS.name)),
        })
    return PublishResult(job.job_id, stamp, version, "published", str(path))


def _set_plan_status(spark: SparkSession, paths: Paths, job_id: str, period_end: datetime, status: str) -> None:
    # SQL, not DeltaTable (py4j): the same statement runs in-process and over Spark Connect.
    spark.sql(f"UPDATE {delta_path(paths.table(PLANS.name))} SET status = {quote(status)} "
              f"WHERE {period_predicate(job_id, period_end)}").collect()
