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

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobs.context import StageContext, run_stage, stage_context
from jobs.errors import StageError
from jobs.facets.base import UNIT_COLUMNS
from jobs.facets.registry import read_facets
from jobs.lake import Start, concurrently
from jobs.plan.assemble import PeriodInputs, assemble, build_state
from jobs.plan.record import (
    Computed,
    PlanResult,
    Provenance,
    job_budget,
    plan_to_dict,
    record_plan,
)
from jobs.plan.scaling import earlier_sections, solve
from jobs.plan.steady import steady
from jobs.plan.terminated import terminated_after
from jobs.tracking.store import prepare_client
from placement.model import Plan
from placement.registry import check_params, strategy_names
from schemas.config import MAX_MIGRATIONS, JobConfig, Paths
from schemas.tables import ASSIGNMENTS, COMM_STATS, KEYGROUP_STATS, NODE_STATS, Table

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

__all__ = [
    "PlanResult",
    "build_state",
    "check_budget",
    "job_budget",
    "no_stats_error",
    "plan",
    "plan_period",
    "plan_to_dict",
    "record_plan",
    "resolve_strategy",
    "with_note",
]


def check_budget(job: JobConfig, max_migrations: int | None = None) -> None:
    """The budget (the job's, or `max_migrations` given for it) fits every table that stores it
    (checked before anything is written)."""
    wanted = job.max_migrations if max_migrations is None else max_migrations
    if wanted is not None and not 0 <= wanted <= MAX_MIGRATIONS:
        raise StageError(
            f"max_migrations {wanted} is out of range",
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
    tags: dict[str, str] | None = None,
) -> PlanResult:
    """`plan` for a caller holding a job and a session (the tests, the bench)."""
    return plan(stage_context(job, period_end, paths, spark), strategy=strategy, dry_run=dry_run,
                tags=tags)


def plan(ctx: StageContext, *, strategy: str | None = None, dry_run: bool = False,
         tags: dict[str, str] | None = None) -> PlanResult:
    """Plan one period: check → read → compute → commit inside the stage frame (jobs/context.py).

    A dry run computes and returns the plan but writes nothing but its MLflow run; it takes no
    lock and plans any collected period. Otherwise the period must have passed validation for
    its current collect (checked under the job's lock, as the attempt number is).
    """
    name, params = resolve_strategy(ctx.job, strategy)  # check: what needs no lake

    def body(ctx: StageContext) -> PlanResult:
        if not dry_run:
            ctx.check_validated()
        inputs, assignments_version = read_inputs(ctx)  # read
        assembled = assemble(ctx.job, name, params, inputs, ctx.stamp)  # compute
        job, start, prepared, runtime = ctx.job, inputs.start, assembled.prepared, ctx.marker
        sections = (earlier_sections(ctx.lake, job.job_id, ctx.end)
                    if job.scaling is not None else ())
        solved = solve(prepared.state, job_budget(job), name, assembled.params,
                       job.solver_time_limit_s, job.scaling, sections,
                       None if runtime is None else runtime.runtime_nodes,
                       terminated_after(ctx.paths.published, job.job_id, start.version,
                                        start.newest), job.job_id)
        if job.stability is not None:  # the no-op band, the cooldown, the oscillation count
            solved = replace(solved, plan=steady(ctx.lake, job.job_id, ctx.end, job.stability,
                                                 solved.state, solved.plan))
        final, logged, artifacts = prepared.finish(with_note(solved.plan, start), solved.state)
        # the versions the plan read: the stats tables' from the collect that wrote the period
        # (the validation gate ties the plan to that collect), the assignments' from the reads
        marker = ctx.marker
        read = {**(marker.versions if marker is not None else {}),
                ASSIGNMENTS.name: assignments_version}
        return record_plan(  # commit
            ctx, Computed(name, logged, final, start, solved.scaling_extra, artifacts),
            Provenance(ctx.report, tags or {}, dry_run,
                       None if marker is None else marker.collect_id, read))

    return run_stage(ctx, "plan", body, check=lambda c: check_budget(c.job), lock=not dry_run)


def read_inputs(ctx: StageContext) -> tuple[PeriodInputs, int]:
    """Everything the plan of the period reads, in one round of queries (the period's tables,
    each facet's rows, the starting point, the assignments' version) while MLflow is imported;
    the version of `assignments` read. A period without stats, or a refused starting point, is a
    StageError (in that order: the stats' message first)."""
    lake, paths, job = ctx.lake, ctx.paths, ctx.job
    runtime = None if ctx.marker is None else ctx.marker.runtime

    def rows(table: Table) -> Callable[[], list[dict[str, Any]]]:
        # in key order: the plan must not depend on how a writer laid out the table's files
        return lambda: lake.period_rows(table, job.job_id, ctx.end, ordered=True)

    def start_or_error() -> Start | StageError:
        try:
            return lake.starting_point(job.job_id, ctx.end, runtime)
        except StageError as exc:  # raised after the check of the stats, as before
            return exc

    kg_rows: pa.Table
    start: Start | StageError
    kg_rows, node_rows, edge_rows, start, facets, assignments_version, _ = concurrently(
        # O(units): Arrow columns, in key order (jobs/plan/assemble.py `build_state`)
        lambda: lake.period_arrow(KEYGROUP_STATS, job.job_id, ctx.end, list(UNIT_COLUMNS),
                                  ordered=True),
        rows(NODE_STATS),
        # O(edges): Arrow columns straight into the planner's CommEdges; build_state orders them
        # by key (jobs/plan/assemble.py `comm_of`)
        lambda: lake.period_arrow(COMM_STATS, job.job_id, ctx.end,
                                  ["src_keygroup", "dst_keygroup", "tuples_per_s"]),
        start_or_error,
        lambda: read_facets(ctx), lambda: lake.table_version(ASSIGNMENTS.name),
        lambda: prepare_client(paths))
    everyone_left = job.dynamic and ctx.marker is not None and ctx.marker.rows_of(
        KEYGROUP_STATS.name) == 0  # a dynamic job's units may all have left: an empty plan
    if kg_rows.num_rows == 0 and not everyone_left:
        raise no_stats_error(paths, job.job_id, ctx.stamp)
    if isinstance(start, StageError):
        raise start
    return PeriodInputs(kg_rows, node_rows, edge_rows, start, facets), assignments_version


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
