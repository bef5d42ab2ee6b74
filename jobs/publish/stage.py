"""publish: the period's plan -> the next immutable assignment version (Delta + JSON manifest).

Order of writes, each step idempotent, so a crash anywhere is mended by a rerun:
1. the manifest file `v<N>.json` (temp file + rename; never overwritten);
2. the `assignments` rows of version N (one Delta commit);
3. the `assignment_versions` row (one Delta commit) — the commit point of the version;
4. `LATEST` (temp file + rename), only ever forward.
A rerun of a published period finds its version row and publishes nothing new. A plan for a period
older than the newest published one is recorded as historical and never moves LATEST back.

A period may have several plan attempts (jobs/plan/attempts.py); publish publishes exactly one: the one
asked for by plan id, else the one this Airflow run's plan task made, else the newest. It checks
that the plans row, its plan JSON and its MLflow run agree on the plan id and the assignment's
checksum, so the manifest is what `reconf audit` shows; once the period is published, its other
attempts are `not_published` and asking to publish one is refused.

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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.context import StageContext, run_stage, stage_context
from jobs.errors import StageError
from jobs.faults import failpoint
from jobs.lake import Lake, Scope, VersionLog, concurrently
from jobs.plan.attempts import check_identity, choose_attempt
from jobs.publish.version import assignment_rows
from jobs.tracking.store import run_tags, tag_run
from schemas.attempts import REFUSED_AT_APPROVAL, PlanStatus, attempt_of, is_own_version
from schemas.canonical import OrderError, chunked, sorted_checksum
from schemas.config import JobConfig, Paths
from schemas.manifest import (
    Manifest,
    ManifestError,
    ScalingSection,
    Schedule,
    latest_path,
    manifest_path,
    read_latest_version,
    read_manifest,
    write_latest,
)
from schemas.manifest_stream import ManifestHead, write_manifest_streamed
from schemas.tables import ASSIGNMENT_VERSIONS, ASSIGNMENTS, PLANS
from schemas.tracking import Tag, delta_version_tag

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["PublishResult", "publish", "publish_period"]


@dataclass(frozen=True)
class PublishResult:
    job_id: str
    period_end: str
    version: int | None  # None: nothing published (historical or stale)
    status: PlanStatus  # PUBLISHED, ALREADY_PUBLISHED, HISTORICAL or STALE
    manifest: str | None
    reason: str = ""  # why nothing was published (a stale plan), or a note on other attempts
    plan_id: str | None = None  # the plan published (or refused, for a stale or historical one)


def _plan_arrays(plan_json: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The plan's assignment as two aligned arrays sorted by key group: what the manifest, its
    checksum and the `assignments` rows are written from, a chunk at a time. The plan JSON holds
    it sorted (placement/model.py `Plan.to_dict`), so the sort is one linear pass."""
    assignment = plan_json["assignment"]
    keys = sorted(str(k) for k in assignment)
    # one string per node, not per unit (the JSON parser makes a new one for every value): once
    # the plan's dict is dropped, 10^6 units on 10^3 nodes hold 10^3 node ids, not 10^6
    one: dict[str, str] = {}
    return keys, [one.setdefault(v, v) for v in map(str, map(assignment.__getitem__, keys))]


def _checksum(keys: list[str], nodes: list[str]) -> str | None:
    """The arrays' assignment checksum, hashed a chunk at a time; None if an id is empty (no
    manifest can hold that assignment)."""
    try:
        return sorted_checksum(chunked(keys, nodes))
    except OrderError:
        return None


def _write_version(
    paths: Paths, head: ManifestHead, keys: list[str], nodes: list[str], checksum: str,
) -> Path:
    """The manifest of version N: the one already on disk for this plan (crash recovery), or new,
    written streamed (schemas/manifest_stream.py: chunks straight from the arrays to the temp
    file, the checksum hashed on the way and checked against the plan's, then the link).

    A `v<N>.json` of another plan with no version row is an orphan: a publisher crashed between
    writing it and committing its version (publishers of a job hold its lock, so none is in
    progress). LATEST never named it, so no runtime can have read it; it is moved aside to
    `.orphaned/` (kept for inspection) and version N is written afresh.
    """
    job_id, version = head.job_id, head.version
    path = manifest_path(paths.published, job_id, version)
    # a crashed publisher's temp files of this version (never linked, so never read): the job's
    # lock is held, so none is being written
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        stale.unlink(missing_ok=True)
    if path.is_file():
        try:
            existing: Manifest | None = read_manifest(paths.published, job_id, version)
        except ManifestError:
            existing = None  # torn or damaged: an orphan all the same
        if (existing is not None and existing.plan_id == head.plan_id
                and existing.assignment_digest == checksum and existing.schedule == head.schedule
                and existing.checksum == existing.actual_checksum):
            return path
        del existing
        aside = path.parent / ".orphaned" / f"{path.stem}.{uuid.uuid4().hex[:8]}.json"
        aside.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, aside)
        print(f"publish {job_id}: moved the uncommitted manifest of a crashed publish aside "
              f"({path} -> {aside})", file=sys.stderr, flush=True)
    written, _ = write_manifest_streamed(paths.published, head, _chunks(keys, nodes),
                                         expected_checksum=checksum)
    return written


def _chunks(keys: list[str], nodes: list[str]) -> Iterator[tuple[Sequence[str], Sequence[str]]]:
    """The arrays' chunks, with a fail point after each: a crash while the manifest's temp file
    holds part of the assignment (tests/jobs/test_faults.py)."""
    for chunk in chunked(keys, nodes):
        yield chunk
        failpoint("publish.manifest.chunk")


def _check_latest(lake: Lake, paths: Paths, job_id: str) -> int | None:
    """LATEST as it is, read before anything is written: garbage there stops publish."""
    try:
        return read_latest_version(paths.published, job_id)
    except ManifestError as exc:
        newest = lake.newest_version(job_id)
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
    job: JobConfig, period_end: datetime, *, paths: Paths, spark: SparkSession,
    plan_id: str | None = None,
) -> PublishResult:
    """`publish` for a caller holding a job and a session (the tests, the bench)."""
    return publish(stage_context(job, period_end, paths, spark), plan_id=plan_id)


def publish(ctx: StageContext, *, plan_id: str | None = None) -> PublishResult:
    """Publish the period's plan: `plan_id`, else the one this Airflow run planned, else the
    period's newest attempt (jobs/plan/attempts.py `choose_attempt`), inside the stage frame
    (jobs/context.py: the job's lock held throughout)."""
    return run_stage(ctx, "publish", lambda c: _publish(c, plan_id))


def _publish(ctx: StageContext, wanted: str | None) -> PublishResult:
    job, period_end, paths, lake, stamp = ctx.job, ctx.end, ctx.paths, ctx.lake, ctx.stamp
    # read, in one round of queries: the period's plan attempts, and what the version log says
    # about it (and the MLflow store opened meanwhile: the plan is checked against its run)
    attempts: list[dict[str, Any]]
    log: VersionLog
    attempts, log, _ = concurrently(
        lambda: lake.period_rows(PLANS, job.job_id, period_end),
        lambda: lake.version_log(job.job_id, period_end),
        lambda: ctx.tracker)
    # a rollback's or a healing's plan of this period is a version of its own, not an attempt
    attempts = [r for r in attempts if not is_own_version(str(r["plan_id"]))]
    if not attempts:
        raise StageError(
            f"no plan for job {job.job_id!r}, period ending {stamp}",
            where=paths.table(PLANS.name),
            fix=f"run `reconf plan --job {job.job_id} --period-end {stamp}` first",
        )
    # check: LATEST, the attempt asked for, its identity, its period's validation, its budget
    latest = _check_latest(lake, paths, job.job_id)
    if log.mine is not None:
        return _already_published(ctx, log.mine, attempts, wanted, latest)
    plan_row = choose_attempt(job.job_id, stamp, attempts, wanted,
                              os.environ.get("AIRFLOW_CTX_DAG_RUN_ID"))
    plan_json = json.loads(plan_row["plan_json"])
    pid, run_id = str(plan_row["plan_id"]), plan_row["mlflow_run_id"]
    if plan_row["status"] in REFUSED_AT_APPROVAL:  # a human said no (jobs/approval.py)
        raise StageError(
            f"plan {pid} was rejected at approval ({str(plan_row['status']).replace('_', ' ')})"
            " and is never published",
            where=f"plans row {pid}: {plan_row['message']}",
            fix=f"plan the period again (a new attempt, which asks again): `airflow tasks clear "
                f"reconfigure_{job.job_id} -s {stamp} -e {stamp} -y`, or `reconf plan --job "
                f"{job.job_id} --period-end {stamp}` then publish that")
    keys, nodes = _plan_arrays(plan_json)
    del plan_json["assignment"]  # from here on the arrays are the assignment: no second copy
    checksum = _checksum(keys, nodes)
    if checksum is None:
        raise StageError(
            f"plan {pid} places a unit with an empty id or on an empty node id; it is not "
            "published", where=f"plans row {pid}",
            fix="plan the period again; if this repeats, report the strategy and the plan JSON")
    check_identity(plan_row, plan_json, run_tags(paths, run_id) if run_id else {},
                   checksum=checksum)
    if log.newer:
        lake.set_plan_status(job.job_id, period_end, pid, PlanStatus.HISTORICAL)
        if run_id:
            tag_run(paths, run_id, {Tag.PUBLISH_STATUS: PlanStatus.HISTORICAL})
        return PublishResult(job.job_id, stamp, None, PlanStatus.HISTORICAL, None, plan_id=pid)
    ctx.check_validated(collect_id=plan_json.get("collect_id"))
    _check_budget(plan_row, plan_json, job.job_id, stamp)

    newest = log.newest
    planned_at = plan_json.get("newest_version", plan_row["base_version"])
    if newest != planned_at:
        lake.set_plan_status(job.job_id, period_end, pid, PlanStatus.STALE)
        if run_id:
            tag_run(paths, run_id, {Tag.PUBLISH_STATUS: PlanStatus.STALE})
        return PublishResult(
            job.job_id, stamp, None, PlanStatus.STALE, None,
            f"the plan was made when the newest version was "
            f"{'v' + str(planned_at) if planned_at else 'none'}, but v{newest} has been published "
            f"since; publishing it could undo v{newest}'s moves and break the budget. Plan the "
            f"period again (`reconf plan --job {job.job_id} --period-end {stamp}`), then publish",
            plan_id=pid)

    # compute: the version and its manifest, written streamed from the plan's arrays
    version = (newest or 0) + 1
    raw = plan_json.get("scaling", {})
    scaling = ScalingSection(
        nodes_to_add=tuple(raw.get("nodes_to_add", ())),
        nodes_to_mark=tuple(raw.get("nodes_to_mark", ())),
        nodes_to_terminate=tuple(raw.get("nodes_to_terminate", ())),
        reason=str(raw.get("reason", "")),
    )
    try:
        # the plan's move schedule (jobs/plan/record.py); a plan recorded before schedules has none
        schedule = (Schedule.from_dict(plan_json["schedule"], f"plans row {pid}")
                    if "schedule" in plan_json else None)
        head = ManifestHead.create(job_id=job.job_id, version=version, period_end=period_end,
                                   plan_id=pid, scaling=scaling, schedule=schedule)
        path = _write_version(paths, head, keys, nodes, checksum)
    except ManifestError as exc:
        raise StageError(str(exc), where=str(paths.published / job.job_id),
                         fix="inspect the published directory; versions are immutable") from exc
    failpoint("publish.manifest")
    # commit: the version's rows, then its version row (the commit point), then LATEST
    version_where = Scope(job.job_id, version=version)
    lake.replace(ASSIGNMENTS, assignment_rows(job.job_id, version, keys, nodes), version_where)
    failpoint("publish.assignments")
    lake.write_records(
        ASSIGNMENT_VERSIONS,
        [{"job_id": job.job_id, "version": version, "plan_id": pid, "period_end": period_end,
          "checksum": checksum, "status": PlanStatus.PUBLISHED, "manifest_path": str(path),
          "published_at": datetime.now(UTC)}],
        version_where,
    )
    committed = lake.table_version(ASSIGNMENT_VERSIONS.name)
    failpoint("publish.version")
    write_latest(paths.published, job.job_id, version)
    failpoint("publish.latest")
    # bookkeeping after the runtime can see the version: the plans' statuses and the runs' tags,
    # at once (a rerun mends either, see `_already_published`)
    concurrently(
        lambda: lake.settle_plan_statuses(job.job_id, period_end, pid,
                                          PlanStatus.NOT_PUBLISHED),
        lambda: _tag_published(lake, paths, run_id, version, str(path), committed),
        lambda: _tag_others(paths, attempts, pid, version))
    failpoint("publish.status")
    return PublishResult(job.job_id, stamp, version, PlanStatus.PUBLISHED, str(path),
                         plan_id=pid)


def _already_published(ctx: StageContext, mine: dict[str, Any], attempts: list[dict[str, Any]],
                       wanted: str | None, latest: int | None) -> PublishResult:
    """A rerun for a published period: the version stands; a crash after its commit point is
    mended (LATEST, the statuses, the run's tags: each only if it is behind, so the published
    plan's row and run are never touched again once complete); another plan is never published."""
    job, period_end, paths, lake, stamp = ctx.job, ctx.end, ctx.paths, ctx.lake, ctx.stamp
    version, pid = int(mine["version"]), str(mine["plan_id"])
    if wanted is not None and wanted != pid:
        raise StageError(
            f"plan {wanted} is not published and never will be: the period ending {stamp} was "
            f"published as v{version} from plan {pid}, and a published period's record (plan "
            "row, MLflow run, manifest) never changes",
            where=f"assignment_versions, job {job.job_id!r} version {version}",
            fix=f"`reconf audit --job {job.job_id} --period-end {stamp}` shows v{version}; to "
                "change the assignment, plan and publish a later period",
        )
    if (latest or 0) < version:
        write_latest(paths.published, job.job_id, version)
    row = next((r for r in attempts if r["plan_id"] == pid), None)
    planned = None if row is None else _checksum(*_plan_arrays(json.loads(row["plan_json"])))
    if row is not None and planned == mine["checksum"]:
        if row["status"] != PlanStatus.PUBLISHED or any(
                r["status"] == PlanStatus.PLANNED for r in attempts):
            lake.settle_plan_statuses(job.job_id, period_end, pid, PlanStatus.NOT_PUBLISHED)
            _tag_others(paths, attempts, pid, version)
        tags = run_tags(paths, row["mlflow_run_id"]) if row["mlflow_run_id"] else {}
        if tags and tags.get(Tag.ASSIGNMENT_VERSION) != str(version):
            _tag_published(lake, paths, row["mlflow_run_id"], version, mine["manifest_path"])
    others = sorted((str(r["plan_id"]) for r in attempts if r["plan_id"] != pid), key=attempt_of)
    note = (f"the period's other plan(s) {', '.join(others)} are kept as attempts, not published"
            if others else "")
    return PublishResult(job.job_id, stamp, version, PlanStatus.ALREADY_PUBLISHED,
                         mine["manifest_path"], note, plan_id=pid)


def _tag_others(paths: Paths, attempts: list[dict[str, Any]], pid: str, version: int) -> None:
    """The runs of the period's attempts that were waiting learn they will never be published."""
    for row in attempts:
        if row["plan_id"] != pid and row["status"] == PlanStatus.PLANNED and row["mlflow_run_id"]:
            tag_run(paths, row["mlflow_run_id"], {
                Tag.PUBLISH_STATUS: PlanStatus.NOT_PUBLISHED, Tag.PUBLISHED_VERSION: str(version),
                Tag.PUBLISHED_PLAN_ID: pid})


def _tag_published(lake: Lake, paths: Paths, run_id: str | None, version: int,
                   manifest: str, log_version: int | None = None) -> None:
    """The plan's MLflow run learns its version (idempotent: a recovering rerun tags it again).
    `log_version`: the version log's Delta version after this publish's commit, if known."""
    if not run_id:
        return
    if log_version is None:
        log_version = lake.table_version(ASSIGNMENT_VERSIONS.name)
    # the plan tagged the tables it read and wrote; publish adds the version log's version
    tag_run(paths, run_id, {
        Tag.PUBLISH_STATUS: PlanStatus.PUBLISHED, Tag.ASSIGNMENT_VERSION: str(version),
        Tag.MANIFEST: manifest, delta_version_tag(ASSIGNMENT_VERSIONS.name):
        str(log_version),
    })
