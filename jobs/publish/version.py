"""A new version published outside the scheduled publish: a rollback's or a healing's.

Both are versions of their own (recorded by `record_plan` on the newest version's period's
statistics, plan id `…#<strategy>-v<N>`, never an attempt of that period) whose assignment becomes version N+1 at once: the manifest (immutable, checksummed, with
its move schedule), the version's `assignments` and `assignment_versions` rows, `LATEST` moved
last (so a reader never sees a version the lake does not hold), the plan row marked published and
its MLflow run tagged with the version. Versions only go up: the caller holds the job's lock and
has checked that N is still the newest.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.errors import StageError
from jobs.faults import failpoint
from jobs.lake import Scope
from jobs.tracking.store import tag_run
from schemas.attempts import PlanStatus
from schemas.canonical import chunked
from schemas.manifest import (
    Manifest,
    ManifestError,
    ScalingSection,
    manifest_path,
    read_latest_version,
    write_latest,
)
from schemas.manifest_stream import ManifestHead, write_manifest_streamed
from schemas.tables import ASSIGNMENT_VERSIONS, ASSIGNMENTS
from schemas.tracking import Tag

if TYPE_CHECKING:
    import pyarrow as pa

    from jobs.context import StageContext
    from schemas.schedule import Schedule

__all__ = ["assignment_rows", "finish_version", "publish_version"]


def assignment_rows(job_id: str, version: int, keys: list[str], nodes: list[str]) -> pa.Table:
    """A version's `assignments` rows as columns, in key-group order: O(units) without an
    object per row (a job of 10^5 units publishes 10^5 rows a version)."""
    import pyarrow as pa

    from jobs.lake.write import conform

    n = len(keys)
    return conform(pa.table({"job_id": pa.repeat(pa.scalar(job_id, pa.string()), n),
                             "version": pa.repeat(pa.scalar(version, pa.int64()), n),
                             "keygroup": pa.array(keys, pa.string()),
                             "node": pa.array(nodes, pa.string())}),
                   ASSIGNMENTS)


def publish_version(ctx: StageContext, version: int, plan_id: str, assignment: dict[str, str],
                    scaling: ScalingSection, schedule: Schedule, mlflow_run_id: str | None,
                    failpoint_name: str) -> Path:
    """Publish `assignment` as `version` of the job (the module docstring); the manifest's path."""
    job = ctx.job
    keys = sorted(assignment)
    nodes = [assignment[k] for k in keys]
    head = ManifestHead.create(job_id=job.job_id, version=version, period_end=ctx.end,
                               plan_id=plan_id, scaling=scaling, schedule=schedule,
                               created_at=datetime.now(UTC))
    try:  # streamed, as the scheduled publish writes (schemas/manifest_stream.py)
        path, checksum = write_manifest_streamed(ctx.paths.published, head,
                                                 chunked(keys, nodes))
    except ManifestError as exc:
        raise StageError(str(exc), where=str(ctx.paths.published / job.job_id),
                         fix="inspect the published directory; versions are immutable") from exc
    _record(ctx, version, plan_id, keys, nodes, checksum, path, mlflow_run_id, failpoint_name)
    return path


def finish_version(ctx: StageContext, manifest: Manifest, mlflow_run_id: str | None,
                   failpoint_name: str) -> Path:
    """Complete a version a killed run published part of: its manifest is written (and
    immutable), so the rows, LATEST, the plan's status and its run's tags are redone from the
    manifest as written; each step is idempotent, so it does not matter where the run died."""
    keys = sorted(manifest.assignment)
    path = manifest_path(ctx.paths.published, ctx.job_id, manifest.version)
    _record(ctx, manifest.version, manifest.plan_id, keys, [manifest.assignment[k] for k in keys],
            manifest.assignment_digest, path, mlflow_run_id, failpoint_name)
    return path


def _record(ctx: StageContext, version: int, plan_id: str, keys: list[str], nodes: list[str],
            checksum: str, path: Path, mlflow_run_id: str | None, failpoint_name: str) -> None:
    """After the manifest: the version's rows, LATEST last, the plan's status, the run's tags."""
    job, lake = ctx.job, ctx.lake
    where = Scope(job.job_id, version=version)
    lake.replace(ASSIGNMENTS, assignment_rows(job.job_id, version, keys, nodes), where)
    lake.write_records(ASSIGNMENT_VERSIONS, [{
        "job_id": job.job_id, "version": version, "plan_id": plan_id,
        "period_end": ctx.end, "checksum": checksum, "status": PlanStatus.PUBLISHED,
        "manifest_path": str(path), "published_at": datetime.now(UTC)}], where)
    failpoint(failpoint_name)
    if (read_latest_version(ctx.paths.published, job.job_id) or 0) < version:
        write_latest(ctx.paths.published, job.job_id, version)
    lake.set_plan_status(job.job_id, ctx.end, plan_id, PlanStatus.PUBLISHED)
    if mlflow_run_id:
        tag_run(ctx.paths, mlflow_run_id, {
            Tag.PUBLISH_STATUS: PlanStatus.PUBLISHED, Tag.PUBLISHED_VERSION: str(version),
            Tag.PUBLISHED_PLAN_ID: plan_id, Tag.ASSIGNMENT_VERSION: str(version),
            Tag.MANIFEST: str(path)})
