"""publish: the period's plan -> the next immutable assignment version (Delta + JSON manifest).

Order of writes, each step idempotent, so a crash anywhere is mended by a rerun:
1. the manifest file `v<N>.json` (temp file + rename; never overwritten);
2. the `assignments` rows of version N (one Delta commit);
3. the `assignment_versions` row (one Delta commit) — the commit point of the version;
4. `LATEST` (temp file + rename), only ever forward.
A rerun of a published period finds its version row and publishes nothing new. A plan for a period
older than the newest published one is recorded as historical and never moves LATEST back.

Before the first write, publish checks everything: LATEST is readable, the period passed
validation for the collect the plan was made from, the plan keeps its budget, and no version was
published since the plan was made (else the plan is *stale*: recorded as such, never published).
Publishers of one job hold the job's lock (jobs/errors.py), so two of them never race for a
version number; the second finds the first's version and reports it.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from jobs.errors import StageError, job_lock
from jobs.faults import failpoint
from jobs.lake import (
    concurrently,
    ensure_tables,
    newest_version,
    period_predicate,
    quote,
    table_version,
    timestamp,
    update_rows,
    write_records,
)
from jobs.lake_read import fetch_records, rows_where
from jobs.markers import check_validated
from jobs.tracking import tag_run
from schemas.config import JobConfig, Paths
from schemas.landing import format_period_end
from schemas.manifest import (
    Manifest,
    ManifestError,
    ScalingSection,
    assignment_checksum,
    latest_path,
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
    version: int | None  # None: nothing published (historical or stale)
    status: str  # "published", "already_published", "historical" or "stale"
    manifest: str | None
    reason: str = ""  # why nothing was published, for a stale plan


def _manifest_for(
    paths: Paths, job_id: str, version: int, pid: str, period_end: datetime,
    assignment: dict[str, str], scaling: ScalingSection,
) -> Manifest:
    """The manifest of version N: the one already on disk for this plan (crash recovery), or new.

    A `v<N>.json` of another plan with no version row is an orphan: a publisher crashed between
    writing it and committing its version (publishers of a job hold its lock, so none is in
    progress). LATEST never named it, so no runtime can have read it; it is moved aside to
    `.orphaned/` (kept for inspection) and version N is written afresh.
    """
    path = manifest_path(paths.published, job_id, version)
    if path.is_file():
        try:
            existing: Manifest | None = read_manifest(paths.published, job_id, version)
        except ManifestError:
            existing = None  # torn or damaged: an orphan all the same
        if (existing is not None and existing.plan_id == pid
                and existing.checksum == assignment_checksum(assignment)):
            return existing
        aside = path.parent / ".orphaned" / f"{path.stem}.{uuid.uuid4().hex[:8]}.json"
        aside.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, aside)
        print(f"publish {job_id}: moved the uncommitted manifest of a crashed publish aside "
              f"({path} -> {aside})", file=sys.stderr, flush=True)
    return Manifest.create(
        job_id=job_id, version=version, period_end=period_end, plan_id=pid,
        assignment=assignment, scaling=scaling, created_at=datetime.now(UTC),
    )


def _check_latest(spark: SparkSession, paths: Paths, job_id: str) -> int | None:
    """LATEST as it is, read before anything is written: garbage there stops publish."""
    try:
        return read_latest_version(paths.published, job_id)
    except ManifestError as exc:
        newest = newest_version(spark, paths, job_id)
        path = latest_path(paths.published, job_id)
        # rm first: LATEST may be a FIFO or a symbolic link, which `>` would block on or follow
        restore = (f"rm {path}; printf '{newest}\\n' > {path}" if newest is not None
                   else f"rm {path}")
        raise StageError(
            f"LATEST is unreadable ({exc}); the runtime ignores it and keeps its assignment",
            where=str(latest_path(paths.published, job_id)),
            fix=f"restore it from the version table (newest published version: "
                f"{'v' + str(newest) if newest else 'none'}): `{restore}`, then publish again",
        ) from None


def _check_budget(plan_row: Any, plan_json: dict[str, Any], job_id: str, stamp: str) -> None:
    """The plan keeps the budget it was made under (a planner bug must not reach the runtime)."""
    moves = plan_json.get("moves", [])
    limit, cost_limit = plan_row["max_migrations"], plan_row["max_migration_cost"]
    cost = sum(float(m.get("cost", 0.0)) for m in moves)
    if (limit is not None and len(moves) > limit) or (
            cost_limit is not None and cost > cost_limit * (1 + 1e-9) + 1e-12):
        raise StageError(
            f"the plan of {stamp} breaks its budget ({len(moves)} moves of cost {cost:.6g}; "
            f"allowed {limit} moves, cost {cost_limit}); it is not published",
            where=f"plans row {job_id}@{stamp}",
            fix="plan the period again; if this repeats, report the strategy and the plan JSON",
        )


def publish_period(
    job: JobConfig, period_end: datetime, *, paths: Paths, spark: SparkSession
) -> PublishResult:
    ensure_tables(spark, paths)
    with job_lock(paths, job.job_id, "publish"):
        return _publish(job, period_end, paths, spark)


def _publish(job: JobConfig, period_end: datetime, paths: Paths, spark: SparkSession
             ) -> PublishResult:
    stamp = format_period_end(period_end)
    # one round of queries: the plan row, and what the version log says about this period
    plan_row: Any
    log: dict[str, Any]
    plan_row, log = concurrently(
        lambda: next(iter(rows_where(spark, paths, PLANS.name,
                                     period_predicate(job.job_id, period_end))), None),
        lambda: _version_log(spark, paths, job.job_id, period_end))
    if plan_row is None:
        raise StageError(
            f"no plan for job {job.job_id!r}, period ending {stamp}",
            where=paths.table(PLANS.name),
            fix=f"run `reconf plan --job {job.job_id} --period-end {stamp}` first",
        )
    plan_json = json.loads(plan_row["plan_json"])
    pid = plan_row["plan_id"]
    latest = _check_latest(spark, paths, job.job_id)
    mine = log["mine"]
    if mine is not None:  # a rerun: make sure the steps after the commit point happened
        version = int(mine["version"])
        if (latest or 0) < version:
            write_latest(paths.published, job.job_id, version)
        # A crash after the commit point, or a rerun of `plan` (which rewrites the plan row as
        # "planned"), leaves the plan's status and its run's tags behind; mend them while the
        # plan row still is the published assignment.
        published = {str(k): str(v) for k, v in plan_json["assignment"].items()}
        if assignment_checksum(published) == mine["checksum"]:
            if plan_row["status"] != "published":
                _set_plan_status(spark, paths, job.job_id, period_end, "published")
            _tag_published(spark, paths, plan_row["mlflow_run_id"], version, mine["manifest_path"])
        return PublishResult(job.job_id, stamp, version, "already_published", mine["manifest_path"])
    if log["newer"]:
        _set_plan_status(spark, paths, job.job_id, period_end, "historical")
        if plan_row["mlflow_run_id"]:
            tag_run(paths, plan_row["mlflow_run_id"], {"reconf.publish_status": "historical"})
        return PublishResult(job.job_id, stamp, None, "historical", None)
    check_validated(paths, job, period_end, collect_id=plan_json.get("collect_id"))
    _check_budget(plan_row, plan_json, job.job_id, stamp)

    newest = None if log["newest"] is None else int(log["newest"])
    planned_at = plan_json.get("newest_version", plan_row["base_version"])
    if newest != planned_at:
        _set_plan_status(spark, paths, job.job_id, period_end, "stale")
        if plan_row["mlflow_run_id"]:
            tag_run(paths, plan_row["mlflow_run_id"], {"reconf.publish_status": "stale"})
        return PublishResult(
            job.job_id, stamp, None, "stale", None,
            f"the plan was made when the newest version was "
            f"{'v' + str(planned_at) if planned_at else 'none'}, but v{newest} has been published "
            f"since; publishing it could undo v{newest}'s moves and break the budget. Plan the "
            f"period again (`reconf plan --job {job.job_id} --period-end {stamp}`), then publish")

    version = (newest or 0) + 1
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
    failpoint("publish.manifest")
    version_where = f"job_id = {quote(job.job_id)} AND version = {version}"
    write_records(
        spark,
        [{"job_id": job.job_id, "version": version, "keygroup": kg, "node": node}
         for kg, node in sorted(assignment.items())],
        paths, ASSIGNMENTS, version_where,
    )
    failpoint("publish.assignments")
    write_records(
        spark,
        [{"job_id": job.job_id, "version": version, "plan_id": pid, "period_end": period_end,
          "checksum": manifest.checksum, "status": "published", "manifest_path": str(path),
          "published_at": datetime.now(UTC)}],
        paths, ASSIGNMENT_VERSIONS, version_where,
    )
    committed = table_version(spark, paths, ASSIGNMENT_VERSIONS.name)
    failpoint("publish.version")
    write_latest(paths.published, job.job_id, version)
    failpoint("publish.latest")
    # bookkeeping after the runtime can see the version: the plan row's status and the run's
    # tags, at once (a rerun mends either, see above)
    concurrently(
        lambda: _set_plan_status(spark, paths, job.job_id, period_end, "published"),
        lambda: _tag_published(spark, paths, plan_row["mlflow_run_id"], version, str(path),
                               committed))
    failpoint("publish.status")
    return PublishResult(job.job_id, stamp, version, "published", str(path))


def _version_log(spark: SparkSession, paths: Paths, job_id: str, period_end: datetime
                 ) -> dict[str, Any]:
    """What publish needs of the job's version log, in one round: this period's version row
    (`mine`, or None), how many versions are of later periods (`newer`), the newest version."""
    table = "{" + ASSIGNMENT_VERSIONS.name + "}"
    job, when = quote(job_id), timestamp(period_end)
    counts, mine = concurrently(
        lambda: fetch_records(spark, paths, "SELECT max(version) AS newest, count(CASE WHEN "
                              f"period_end > {when} THEN 1 END) AS newer FROM {table} "
                              f"WHERE job_id = {job}"),
        lambda: fetch_records(spark, paths, "SELECT version, checksum, manifest_path FROM "
                              f"{table} WHERE job_id = {job} AND period_end = {when} "
                              "ORDER BY version DESC LIMIT 1"))
    return {"newest": counts[0]["newest"], "newer": int(counts[0]["newer"]),
            "mine": mine[0] if mine else None}


def _tag_published(spark: SparkSession, paths: Paths, run_id: str | None, version: int,
                   manifest: str, log_version: int | None = None) -> None:
    """The plan's MLflow run learns its version (idempotent: a recovering rerun tags it again).
    `log_version`: the version log's Delta version after this publish's commit, if known."""
    if not run_id:
        return
    if log_version is None:
        log_version = table_version(spark, paths, ASSIGNMENT_VERSIONS.name)
    # the plan tagged the tables it read and wrote; publish adds the version log's version
    tag_run(paths, run_id, {
        "reconf.publish_status": "published", "reconf.assignment_version": str(version),
        "reconf.manifest": manifest, f"reconf.delta.{ASSIGNMENT_VERSIONS.name}.version":
        str(log_version),
    })


def _set_plan_status(spark: SparkSession, paths: Paths, job_id: str, period_end: datetime, status: str) -> None:
    update_rows(spark, paths, PLANS, {"status": quote(status)},
                period_predicate(job_id, period_end))
