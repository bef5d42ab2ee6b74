"""plan: the period's stats + the current assignment -> a Plan (placement/) -> plans, plan_moves.

The current allocation is what the runtime ran at the period's end (the version in its report,
jobs/lake.py `starting_point`): normally the last version published for an *earlier* period, so a
rerun of a period plans from the same starting point and gives the same plan; before anything was
published, where the runtime reports its key groups (its initial allocation). A plan for
publishing is made only from a period that passed validation for its current collect
(jobs/markers.py); a dry run may plan any collected period and writes nothing but its MLflow run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobs.dynamic_units import prepare_units
from jobs.errors import StageError, job_lock, lake_rows_refused
from jobs.facet_tables import read_facet_rows
from jobs.faults import failpoint
from jobs.lake import (
    Start,
    concurrently,
    ensure_tables,
    period_predicate,
    starting_point,
    table_version,
    table_versions,
    write_records,
)
from jobs.lake_read import rows_where
from jobs.lake_write import records_table
from jobs.load_model import with_load_model
from jobs.markers import check_validated, read_collect_marker, runtime_of
from jobs.network_facet import attach_network
from jobs.network_links import read_link_rows
from jobs.scaling import earlier_sections, solve
from jobs.tracking import CycleRecord, log_cycle, prepare_client, tag_run
from jobs.whatif import keep_input
from placement.model import Budget, ClusterState, Edge, KeyGroup, Node, Plan
from placement.registry import check_params, strategy_names
from schemas.config import MAX_MIGRATIONS, JobConfig, Paths
from schemas.landing import format_period_end
from schemas.tables import (
    ASSIGNMENTS,
    COMM_STATS,
    KEYGROUP_STATS,
    NODE_STATS,
    PLAN_MOVES,
    PLANS,
    Table,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "PlanResult",
    "build_state",
    "check_budget",
    "job_budget",
    "no_stats_error",
    "plan_id",
    "plan_period",
    "plan_to_dict",
    "record_plan",
    "resolve_strategy",
    "with_note",
]


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

    def summary(self) -> str:
        """The one-line summary of a plan, as the DAG's log, the fleet and `reconf` print it."""
        p = self.plan
        return (f"plan {self.plan_id}{' (dry run)' if self.dry_run else ''}: {p.strategy} "
                f"({p.status.value}) load distance {p.before.load_distance:.3f} -> "
                f"{p.after.load_distance:.3f}, {p.migrations} migrations, "
                f"MLflow run {self.mlflow_run_id}")


def plan_id(job_id: str, period_end: datetime) -> str:
    """Deterministic, so a rerun of a period overwrites its plan instead of adding one."""
    return f"{job_id}@{format_period_end(period_end)}"


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    return {
        "strategy": plan.strategy,
        "status": plan.status.value,
        "lower_bound": plan.lower_bound,
        "wall_s": plan.wall_s,
        "message": plan.message,
        "before": asdict(plan.before),
        "after": asdict(plan.after),
        "migrations": plan.migrations,
        "migration_cost": plan.migration_cost,
        "moves": [asdict(m) for m in plan.moves],
        "scaling": asdict(plan.scaling),
        "assignment": dict(sorted(plan.assignment.items())),
    }


def build_state(
    job: JobConfig,
    keygroups: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    current: dict[str, str],
) -> ClusterState:
    """The planner's model of one period: loads from the stats, placement from `current`.

    Validation refuses missing or non-finite values; a dry run of an unvalidated period meets
    them here and gets the same kind of message instead of a TypeError deep in the planner.
    """
    _check_finite(job, keygroups, ("load_pct", "state_bytes"), "keygroup", KEYGROUP_STATS.name)
    _check_finite(job, nodes, ("capacity",), "node", NODE_STATS.name)
    _check_finite(job, edges, ("tuples_per_s",), "src_keygroup", COMM_STATS.name)
    capacity = {n["node"]: float(n["capacity"]) for n in nodes}
    assignment = {k["keygroup"]: current.get(k["keygroup"], k["node"]) for k in keygroups}
    node_ids = sorted(set(capacity) | set(assignment.values()))
    return ClusterState(
        nodes=tuple(Node(n, capacity.get(n, 1.0)) for n in node_ids),
        keygroups=tuple(
            KeyGroup(
                id=k["keygroup"],
                operator=k["operator"],
                load=float(k["load_pct"]),
                state_bytes=float(k["state_bytes"]),
                migration_cost=job.alpha * float(k["state_bytes"]),
            )
            for k in sorted(keygroups, key=lambda row: row["keygroup"])
        ),
        assignment=assignment,
        edges=tuple(
            Edge(e["src_keygroup"], e["dst_keygroup"], float(e["tuples_per_s"])) for e in edges
        ),
    )


def _check_finite(job: JobConfig, rows: list[dict[str, Any]], columns: tuple[str, ...], key: str,
                  table: str) -> None:
    for row in rows:
        for column in columns:
            value = row.get(column)
            if value is None or not math.isfinite(float(value)):
                raise StageError(
                    f"{table}.{column} of {row.get(key)!r} is {value!r}; the planner needs a "
                    "finite number",
                    where=f"job {job.job_id!r}, table {table}",
                    fix="run `reconf validate` on the period: it names every bad value; fix the "
                        "runtime's metrics and land the period again",
                )


def check_budget(job: JobConfig) -> None:
    """The budget fits every table that stores it (checked before anything is written)."""
    if job.max_migrations is not None and not 0 <= job.max_migrations <= MAX_MIGRATIONS:
        raise StageError(
            f"max_migrations {job.max_migrations} is out of range",
            where=f"job {job.job_id!r}",
            fix=f"give a whole number from 0 to {MAX_MIGRATIONS} (any number above the job's "
                "key-group count allows every move)",
        )


def plan_period(
    job: JobConfig,
    period_end: datetime,
    *,
    paths: Paths,
    spark: SparkSession,
    strategy: str | None = None,
    dry_run: bool = False,
    validation: dict[str, Any] | None = None,
    tags: dict[str, str] | None = None,
) -> PlanResult:
    """Plan one period. A dry run computes and returns the plan but writes nothing."""
    strategy, params = resolve_strategy(job, strategy)
    check_budget(job)
    ensure_tables(spark, paths)
    if dry_run:
        return _plan(job, period_end, paths, spark, strategy, params, dry_run, validation, tags)
    with job_lock(paths, job.job_id, "plan"):
        check_validated(paths, job, period_end)
        return _plan(job, period_end, paths, spark, strategy, params, dry_run, validation, tags)


def _plan(job: JobConfig, period_end: datetime, paths: Paths, spark: SparkSession, strategy: str,
          params: dict[str, Any], dry_run: bool, validation: dict[str, Any] | None,
          tags: dict[str, str] | None) -> PlanResult:
    where = period_predicate(job.job_id, period_end)
    stamp = format_period_end(period_end)
    marker = read_collect_marker(paths, job.job_id, period_end)
    runtime = runtime_of(marker) if marker is not None else None

    def rows(table: Table) -> Callable[[], list[dict[str, Any]]]:
        # in key order: the plan must not depend on how a writer laid out the table's files
        ordered = f"{where} ORDER BY {', '.join(table.key)}"
        return lambda: rows_where(spark, paths, table.name, ordered)

    def start_or_error() -> Start | StageError:
        try:
            return starting_point(spark, paths, job.job_id, period_end, runtime)
        except StageError as exc:  # raised after the check of the stats, as before
            return exc

    # one round of queries (the period's tables, the starting point) while MLflow is imported
    kg_rows: list[dict[str, Any]]
    node_rows: list[dict[str, Any]]
    edge_rows: list[dict[str, Any]]
    start: Start | StageError
    kg_rows, node_rows, edge_rows, start, assignments_version, _ = concurrently(
        rows(KEYGROUP_STATS), rows(NODE_STATS), rows(COMM_STATS), start_or_error,
        lambda: table_version(spark, paths, ASSIGNMENTS.name), lambda: prepare_client(paths))
    everyone_left = job.dynamic and ((marker or {}).get("rows") or {}).get(
        KEYGROUP_STATS.name) == 0  # a dynamic job's units may all have left: an empty plan
    if not kg_rows and not everyone_left:
        raise no_stats_error(paths, job.job_id, stamp)
    if isinstance(start, StageError):
        raise start
    with lake_rows_refused(job.job_id, stamp, "keygroup_stats, node_stats, comm_stats and the "
                           "job's facet tables"):
        state = build_state(job, kg_rows, node_rows, edge_rows, start.assignment)
        state, params = attach_network(job, state, strategy, params,  # with the measured links
                                       read_link_rows(spark, paths, job, period_end, marker))
        state = with_load_model(spark, paths, job, period_end, strategy, state)  # its streams
        # a dynamic job's sources, subscriptions and arrivals (jobs/dynamic_units.py)
        prepared = prepare_units(job, strategy, state, kg_rows,
                                 read_facet_rows(spark, paths, job, period_end, marker),
                                 start.assignment, start.version)
    sections = (earlier_sections(spark, paths, job.job_id, period_end)
                if job.scaling is not None else ())
    solved = solve(prepared.state, job_budget(job), strategy, params, job.solver_time_limit_s,
                   job.scaling, sections, None if runtime is None else frozenset(runtime.nodes))
    plan, logged, artifacts = prepared.finish(with_note(solved.plan, start), solved.state)
    # the versions the plan read: the stats tables' from the collect that wrote the period (the
    # validation gate ties the plan to that collect), the assignments' from the round above
    read = {**((marker or {}).get("versions") or {}), ASSIGNMENTS.name: assignments_version}
    return record_plan(spark, paths, job, period_end, strategy, logged,
                       plan, solved.scaling_extra, start, artifacts=artifacts,
                       validation=validation, tags=tags, dry_run=dry_run,
                       collect_id=None if marker is None else marker.get("collect_id"),
                       read_versions=read)


def with_note(plan: Plan, start: Start) -> Plan:
    """The plan, its message saying why it does not start from the newest version (if so)."""
    if not start.note:
        return plan
    return replace(plan, message=f"{plan.message}; {start.note}" if plan.message else start.note)


def resolve_strategy(job: JobConfig, strategy: str | None) -> tuple[str, dict[str, Any]]:
    """The strategy that runs (`strategy` or the job's) and its checked per-job parameters."""
    strategy = strategy or job.strategy
    if strategy not in strategy_names():
        raise StageError(
            f"unknown strategy {strategy!r}",
            where=f"job {job.job_id!r}",
            fix=f"use one of: {', '.join(strategy_names())}",
        )
    params = dict(job.strategy_params.get(strategy, {}))
    try:
        check_params(strategy, params)
    except ValueError as exc:
        raise StageError(
            str(exc),
            where=f"job {job.job_id!r}: strategy_params.{strategy}",
            fix=f"correct [jobs.{job.job_id}.strategy_params.{strategy}] in the job config "
                "(docs/algorithms.md lists each strategy's parameters)",
        ) from exc
    return strategy, params


def job_budget(job: JobConfig) -> Budget:
    return Budget(max_migration_cost=job.max_migration_cost, max_migrations=job.max_migrations)


def no_stats_error(paths: Paths, job_id: str, stamp: str) -> StageError:
    return StageError(
        f"no statistics collected for job {job_id!r}, period ending {stamp}",
        where=paths.table(KEYGROUP_STATS.name),
        fix=f"run `reconf collect --job {job_id} --period-end {stamp}` first",
    )


def record_plan(
    spark: SparkSession,
    paths: Paths,
    job: JobConfig,
    period_end: datetime,
    strategy: str,
    state: ClusterState,
    plan: Plan,
    scaling_extra: dict[str, Any] | None,
    start: Start,
    *,
    validation: dict[str, Any] | None = None,
    tags: dict[str, str] | None = None,
    dry_run: bool = False,
    collect_id: str | None = None,
    artifacts: Mapping[str, str] | None = None,
    read_versions: dict[str, int] | None = None,
) -> PlanResult:
    """Log a computed plan to MLflow and (unless a dry run) write it to plans / plan_moves.

    Shared by the per-job path and fleet planning (jobs/fleet.py), so both record the same.
    `read_versions`: table -> Delta version the plan read, where the caller knows it (the rest
    are looked up). The
    rows are built (and their types checked by Spark) before the MLflow run is logged, so a value
    no table can hold fails before anything is written.
    """
    stamp = format_period_end(period_end)
    pid = plan_id(job.job_id, period_end)
    base_version = start.version
    plan_json = {"job_id": job.job_id, "period_end": stamp, "plan_id": pid,
                 "base_version": base_version, "newest_version": start.newest,
                 "collect_id": collect_id, **plan_to_dict(plan)}
    if scaling_extra is not None:
        plan_json["scaling"].update(scaling_extra)
    if not dry_run:  # the rows' types checked before anything is logged or written
        for rows, table in zip(_plan_rows(job, period_end, pid, strategy, plan, base_version, "",
                                          plan_json), (PLAN_MOVES, PLANS), strict=True):
            records_table(rows, table)
    read = dict(read_versions or {})
    missing = [t.name for t in (KEYGROUP_STATS, COMM_STATS, NODE_STATS, ASSIGNMENTS)
               if t.name not in read]
    read.update(table_versions(spark, paths, missing))  # those not known yet, asked at once
    read_tags = {f"reconf.delta.{name}.version": str(version) for name, version in sorted(
        read.items())}
    run_id = log_cycle(
        paths,
        CycleRecord(job, stamp, strategy, plan_json, validation,
                    {**read_tags, "reconf.plan_id": pid,
                     "reconf.base_version": str(base_version), **(tags or {})}, dry_run,
                    dict(artifacts or {})),
        state,
        plan,
    )
    if not dry_run:
        keep_input(paths, run_id, job, stamp, strategy, state, plan, job_budget(job))
        moves, row = _plan_rows(job, period_end, pid, strategy, plan, base_version, run_id,
                                plan_json)
        where = period_predicate(job.job_id, period_end)
        # Moves first, plan row last: publish reads the plan row, so it only ever sees a plan
        # whose moves are already written.
        write_records(spark, moves, paths, PLAN_MOVES, where)
        failpoint("plan.moves")
        write_records(spark, row, paths, PLANS, where)
        failpoint("plan.row")
        written = table_versions(spark, paths, (PLAN_MOVES.name, PLANS.name))
        tag_run(paths, run_id, {f"reconf.delta.{name}.version": str(version)
                                for name, version in written.items()})  # the versions holding this plan
    return PlanResult(job.job_id, stamp, pid, plan, base_version, run_id, plan_json, dry_run)


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def _plan_rows(
    job: JobConfig,
    period_end: datetime,
    pid: str,
    strategy: str,
    plan: Plan,
    base_version: int | None,
    run_id: str,
    plan_json: dict[str, Any],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The plan_moves rows and the plans row of a plan (not yet written: `records_table` checks
    their types before anything is logged)."""
    # DOUBLE columns get floats: Spark refuses an int (e.g. the migration cost of a plan with no
    # moves is sum(()) == 0, or a time limit of 2) in a DoubleType field.
    plan_row = {
        "job_id": job.job_id, "period_end": period_end, "plan_id": pid, "strategy": strategy,
        "status": "planned", "solver_status": plan.status.value,
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
