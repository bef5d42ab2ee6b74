"""Recording a computed plan: its MLflow run, then (unless a dry run) its plans / plan_moves rows.

Shared by the per-job path (jobs/plan/stage.py) and fleet planning (jobs/plan/fleet.py), so both record the
same. Every call records a new attempt (jobs/plan/attempts.py): its own plan id, MLflow run and rows,
never another attempt's; an attempt of a period that already has a published version is recorded
as `not_published`, and the published attempt's row, run and manifest stay as they were.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jobs.faults import failpoint
from jobs.lake import Start, concurrently
from jobs.lake.write import records_table
from jobs.plan.applied import record_applied
from jobs.plan.attempts import PeriodRecord, attempt_predicate, period_record
from jobs.tracking.store import CycleRecord, log_cycle, logged_attempts, tag_run
from jobs.whatif.input import store_input
from placement.determinism import alarm
from placement.model import Budget, ClusterState, Plan
from placement.objectives import as_run_metrics
from placement.waves import plan_waves
from schemas.attempts import PlanStatus, own_version_id
from schemas.attempts import plan_id as attempt_id
from schemas.config import JobConfig
from schemas.headline import headline
from schemas.manifest import assignment_checksum
from schemas.tables import ASSIGNMENTS, COMM_STATS, KEYGROUP_STATS, NODE_STATS, PLAN_MOVES, PLANS
from schemas.tracking import Artifact, Tag, delta_version_tag

if TYPE_CHECKING:
    from jobs.context import StageContext

__all__ = ["Computed", "PlanResult", "Provenance", "job_budget", "plan_to_dict", "record_plan"]


@dataclass(frozen=True)
class Computed:
    """A computed plan of one period, as recording needs it: the strategy, the state to log the
    plan against (every unit where the runtime ran it), the plan, where it started, Algorithm 1's
    extra scaling fields and the run's extra artifacts (name -> text)."""

    strategy: str
    state: ClusterState
    plan: Plan
    start: Start
    scaling_extra: Mapping[str, Any] | None = None
    artifacts: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Provenance:
    """Where a plan came from: the validation report it was made under, extra run tags, a dry run,
    the collect it read and the Delta versions of the tables it read (table -> version; the
    rest are looked up)."""

    validation: Mapping[str, Any] | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    dry_run: bool = False
    collect_id: str | None = None
    read_versions: Mapping[str, int] = field(default_factory=dict)
    #: a rollback's or a healing's plan: the version it will be published as. It is a version of
    #: its own (plan id `…#<strategy>-v<N>`), never an attempt of the period it was planned on
    own_version: int | None = None


@dataclass(frozen=True)
class PlanResult:
    job_id: str
    period_end: str
    plan_id: str
    plan: Plan
    base_version: int | None
    mlflow_run_id: str | None
    plan_json: dict[str, Any]
    dry_run: bool = False
    #: (version, plan id) of the period's published version when this attempt was made after it:
    #: the attempt is recorded as not published and never will be
    published_as: tuple[int, str] | None = None

    def summary(self) -> str:
        """The one-line summary of a plan, as the DAG's log, the fleet and `reconf` print it."""
        p = self.plan
        loud = alarm(p.determinism)  # a plan the clock cut says so on its first line
        return (f"plan {self.plan_id}{' (dry run)' if self.dry_run else ''}: {p.strategy} "
                f"({p.status.value}) {headline(p.strategy, as_run_metrics(p))}, "
                f"{p.migrations} migrations, "
                f"MLflow run {self.mlflow_run_id}"
                + (f"; {self.not_published_note()}" if self.published_as else "")
                + (f"; {loud}" if loud else ""))

    def not_published_note(self) -> str:
        """Why this attempt is never published (for an attempt made after the period's publish)."""
        if self.published_as is None:
            return ""
        version, pid = self.published_as
        return (f"not published: the period was already published as v{version} (plan {pid}), "
                "whose plan row, MLflow run and manifest never change; this attempt is kept "
                "beside it as an attempt")


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    return plan.to_dict()


def job_budget(job: JobConfig) -> Budget:
    return Budget(max_migration_cost=job.max_migration_cost, max_migrations=job.max_migrations)


def record_plan(ctx: StageContext, computed: Computed, provenance: Provenance) -> PlanResult:
    """Log a computed plan to MLflow and (unless a dry run) write it to plans / plan_moves.

    Shared by the per-job path and fleet planning (jobs/plan/fleet.py), so both record the same.
    The rows are built (and their types checked by Spark) before the MLflow run is logged, so a
    value no table can hold fails before anything is written. Callers that write (not a dry run)
    hold the job's lock, so the attempt number is theirs alone.
    """
    lake, paths, job, period_end, stamp = ctx.lake, ctx.paths, ctx.job, ctx.end, ctx.stamp
    strategy, state, plan, start = (computed.strategy, computed.state, computed.plan,
                                    computed.start)
    scaling_extra, artifacts = computed.scaling_extra, computed.artifacts
    validation, tags, dry_run = provenance.validation, provenance.tags, provenance.dry_run
    collect_id = provenance.collect_id
    base_version = start.version
    read = dict(provenance.read_versions)
    missing = [t.name for t in (KEYGROUP_STATS, COMM_STATS, NODE_STATS, ASSIGNMENTS)
               if t.name not in read]
    # one round: the period's attempts and version (not for a dry run: it writes no rows), the
    # attempts MLflow holds, the versions of the tables read not known yet
    record, logged, versions = concurrently(
        lambda: PeriodRecord() if dry_run else period_record(lake, job.job_id, period_end),
        lambda: logged_attempts(paths, job.job_id, stamp, dry_run),
        lambda: lake.table_versions(missing))
    read.update(versions)
    own = provenance.own_version
    attempt = record.next_attempt(logged)
    pid = (attempt_id(job.job_id, period_end, attempt, dry_run=dry_run) if own is None
           else own_version_id(job.job_id, period_end, strategy, own))
    published = (None if own is not None or record.published_version is None
                 or record.published_plan is None
                 else (record.published_version, record.published_plan))
    plan_json = {"job_id": job.job_id, "period_end": stamp, "plan_id": pid,
                 "attempt": attempt if own is None else None, "own_version": own,
                 "base_version": base_version, "newest_version": start.newest,
                 "collect_id": collect_id, **plan_to_dict(plan)}
    if scaling_extra is not None:
        plan_json["scaling"].update(scaling_extra)
    # what publish checks the plan against (jobs/publish/stage.py): the assignment's checksum, and the
    # Airflow run that made the plan (its publish task publishes this run's plan)
    plan_json["checksum"] = assignment_checksum(
        {str(k): str(v) for k, v in plan_json["assignment"].items()})
    plan_json["airflow_run_id"] = os.environ.get("AIRFLOW_CTX_DAG_RUN_ID") or None
    # the move schedule publish puts in the manifest (placement/waves.py), under the job's limits
    schedule = plan_waves(state, plan.moves, job.execution.limits,
                          {str(k): str(v) for k, v in plan_json["assignment"].items()})
    plan_json["schedule"] = schedule.to_dict()
    artifacts = {**artifacts, Artifact.SCHEDULE_JSON: json.dumps(schedule.summary(), indent=1)}
    # the measured execution of the schedule the runtime ran last (its period report, kept by
    # collect): per wave the units moved, state bytes, seconds and failures
    marker = ctx.marker
    if marker is not None and marker.runtime is not None and marker.runtime.execution:
        artifacts[Artifact.EXECUTION_JSON] = json.dumps(dict(marker.runtime.execution), indent=1)
    status = PlanStatus.PLANNED if published is None else PlanStatus.NOT_PUBLISHED
    if not dry_run:  # the rows' types checked before anything is logged or written
        for rows, table in zip(_plan_rows(ctx, pid, strategy, plan, base_version, "", plan_json,
                                          status), (PLAN_MOVES, PLANS), strict=True):
            records_table(rows, table)
    read_tags = {delta_version_tag(name): str(version) for name, version in sorted(
        read.items())}
    attempt_tags = {Tag.PLAN_ID: pid,
                    **({Tag.ATTEMPT: str(attempt)} if own is None else {Tag.OWN_VERSION: str(own)}),
                    Tag.CHECKSUM: plan_json["checksum"],
                    Tag.SCHEDULE_WAVES: str(len(schedule.waves)),
                    Tag.SCHEDULE_OVER_CEILING: str(sum(w.over_ceiling for w in schedule.waves))}
    if published is not None:
        attempt_tags.update({Tag.PUBLISH_STATUS: PlanStatus.NOT_PUBLISHED,
                             Tag.PUBLISHED_VERSION: str(published[0]),
                             Tag.PUBLISHED_PLAN_ID: published[1]})
    # the what-if only ever compares a publishable plan; its input is a file keyed by the plan
    # id, which the run's tags name (jobs/whatif/input.py): O(units + edges), never an artifact
    whatif_tags = (store_input(paths, pid, job, stamp, strategy, state, plan, job_budget(job))
                   if not dry_run and published is None and own is None else {})
    run_id = log_cycle(
        paths,
        CycleRecord(job, stamp, strategy, plan_json, validation,
                    {**read_tags, Tag.BASE_VERSION: str(base_version), **attempt_tags,
                     **whatif_tags, **tags}, dry_run, dict(artifacts)),
        state,
        plan,
    )
    if not dry_run:
        if marker is not None and marker.runtime is not None and marker.runtime.execution:
            record_applied(ctx, marker.runtime.execution)  # on the applied version's own run
        moves, row = _plan_rows(ctx, pid, strategy, plan, base_version, run_id, plan_json,
                                status)
        where = attempt_predicate(job.job_id, period_end, pid)
        # Moves first, plan row last: publish reads the plan row, so it only ever sees a plan
        # whose moves are already written. Only this attempt's rows: never another attempt's.
        lake.write_records(PLAN_MOVES, moves, where)
        failpoint("plan.moves")
        lake.write_records(PLANS, row, where)
        failpoint("plan.row")
        written = lake.table_versions((PLAN_MOVES.name, PLANS.name))
        tag_run(paths, run_id, {delta_version_tag(name): str(version)
                                for name, version in written.items()})  # the versions holding this plan
    return PlanResult(job.job_id, stamp, pid, plan, base_version, run_id, plan_json, dry_run,
                      published)


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def _plan_rows(
    ctx: StageContext,
    pid: str,
    strategy: str,
    plan: Plan,
    base_version: int | None,
    run_id: str,
    plan_json: dict[str, Any],
    status: PlanStatus = PlanStatus.PLANNED,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The plan_moves rows and the plans row of a plan (not yet written: `records_table` checks
    their types before anything is logged)."""
    job, period_end = ctx.job, ctx.end
    # DOUBLE columns get floats: Spark refuses an int (e.g. the migration cost of a plan with no
    # moves is sum(()) == 0, or a time limit of 2) in a DoubleType field.
    plan_row = {
        "job_id": job.job_id, "period_end": period_end, "plan_id": pid, "strategy": strategy,
        "status": status, "solver_status": plan.status.value,
        "max_migrations": job.max_migrations,
        "max_migration_cost": _float(job.max_migration_cost),
        "time_limit_s": _float(job.solver_time_limit_s),
        "load_distance_before": _float(plan.before.load_distance),
        "load_distance_after": _float(plan.after.load_distance),
        "lower_bound": _float(plan.lower_bound),
        "migrations": plan.migrations, "migration_cost": _float(plan.migration_cost),
        "solve_s": _float(plan.wall_s), "base_version": base_version, "mlflow_run_id": run_id,
        "message": plan.message, "plan_json": json.dumps(plan_json, sort_keys=True),
    }
    move_rows = [
        {"job_id": job.job_id, "period_end": period_end, "plan_id": pid, "keygroup": m.keygroup,
         "src_node": m.src, "dst_node": m.dst, "cost": _float(m.cost)}
        for m in plan.moves
    ]
    return move_rows, [plan_row]
