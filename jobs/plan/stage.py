"""plan: the period's stats + the current assignment -> a Plan (placement/) -> plans, plan_moves.

The current allocation is what the runtime ran at the period's end (the version in its report,
jobs/lake/api.py `Lake.starting_point`): normally the last version published for an *earlier* period, so a
rerun of a period plans from the same starting point and gives the same plan; before anything was
published, where the runtime reports its key groups (its initial allocation). A plan for
publishing is made only from a period that passed validation for its current collect
(jobs/markers.py); a dry run may plan any collected period and writes nothing but its MLflow run.
Every plan is a new attempt with its own plan id and MLflow run (jobs/plan/attempts.py): nothing here
ever rewrites a plan, so a published period's record stays what was published.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobs.errors import StageError, job_lock, lake_rows_refused
from jobs.facets.dynamic import prepare_units
from jobs.facets.links import read_link_rows
from jobs.facets.load_model import with_load_model
from jobs.facets.network import attach_network
from jobs.facets.subscriptions import read_facet_rows
from jobs.lake import Start, concurrently, open_lake
from jobs.markers import check_validated, read_collect_marker, runtime_of
from jobs.plan.attempts import plan_id as attempt_id
from jobs.plan.record import PlanResult, job_budget, plan_to_dict, record_plan
from jobs.plan.scaling import earlier_sections, solve
from jobs.tracking.store import prepare_client
from placement.model import ClusterState, Edge, KeyGroup, Node, Plan
from placement.registry import check_params, strategy_names
from schemas.config import MAX_MIGRATIONS, JobConfig, Paths
from schemas.landing import format_period_end
from schemas.tables import (
    ASSIGNMENTS,
    COMM_STATS,
    KEYGROUP_STATS,
    NODE_STATS,
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


def plan_id(job_id: str, period_end: datetime) -> str:
    """The id of a period's first plan attempt (jobs/plan/attempts.py numbers the later ones)."""
    return attempt_id(job_id, period_end)


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
    open_lake(paths, spark).ensure_tables()
    if dry_run:
        return _plan(job, period_end, paths, spark, strategy, params, dry_run, validation, tags)
    with job_lock(paths, job.job_id, "plan"):
        check_validated(paths, job, period_end)
        return _plan(job, period_end, paths, spark, strategy, params, dry_run, validation, tags)


def _plan(job: JobConfig, period_end: datetime, paths: Paths, spark: SparkSession, strategy: str,
          params: dict[str, Any], dry_run: bool, validation: dict[str, Any] | None,
          tags: dict[str, str] | None) -> PlanResult:
    lake = open_lake(paths, spark)
    stamp = format_period_end(period_end)
    marker = read_collect_marker(paths, job.job_id, period_end)
    runtime = runtime_of(marker) if marker is not None else None

    def rows(table: Table) -> Callable[[], list[dict[str, Any]]]:
        # in key order: the plan must not depend on how a writer laid out the table's files
        return lambda: lake.period_rows(table, job.job_id, period_end, ordered=True)

    def start_or_error() -> Start | StageError:
        try:
            return lake.starting_point(job.job_id, period_end, runtime)
        except StageError as exc:  # raised after the check of the stats, as before
            return exc

    # one round of queries (the period's tables, the starting point) while MLflow is imported
    kg_rows: list[dict[str, Any]]
    node_rows: list[dict[str, Any]]
    edge_rows: list[dict[str, Any]]
    start: Start | StageError
    kg_rows, node_rows, edge_rows, start, assignments_version, _ = concurrently(
        rows(KEYGROUP_STATS), rows(NODE_STATS), rows(COMM_STATS), start_or_error,
        lambda: lake.table_version(ASSIGNMENTS.name), lambda: prepare_client(paths))
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
        # a dynamic job's sources, subscriptions and arrivals (jobs/facets/dynamic.py)
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


def no_stats_error(paths: Paths, job_id: str, stamp: str) -> StageError:
    return StageError(
        f"no statistics collected for job {job_id!r}, period ending {stamp}",
        where=paths.table(KEYGROUP_STATS.name),
        fix=f"run `reconf collect --job {job_id} --period-end {stamp}` first",
    )
