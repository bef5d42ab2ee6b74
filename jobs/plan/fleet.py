"""Fleet planning: plan one period of many jobs at once, one solver per job on Spark executors.

The driver reads every job's stats and current assignment in one query per table (not one per
job; jobs/lake `Lake.rows_of_jobs`, `last_published_of_jobs`), assembles each job's state as the
per-job plan does (jobs/plan/assemble.py: the same facets, read once), and ships one task per job
through `groupBy(job_id).applyInPandas`, so each executor core runs the solvers of its share of
the jobs. The plans come back to the driver, which records each one exactly as the per-job path
does (`jobs.plan.stage.record_plan`: a new attempt of the period, its own MLflow run, then its plans /
plan_moves rows; a job whose period is already published gets an attempt marked not published,
and its published record is never touched).

Jobs are independent: a solver that fails for one job is reported and that job gets no plan;
the others are recorded (a job whose state cannot be assembled is refused and listed, unless
`--jobs` named it). With `--jobs` every named job must have stats for the period; without
it, configured jobs with no stats for the period are skipped (and listed).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import socket
import time
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobs.spark.executors import spread_groups
from placement.model import Budget, ClusterState, Plan
from schemas.config import JobConfig, Paths, ScalingConfig

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

    from jobs.context import StageContext
    from jobs.facets.dynamic import Prepared
    from jobs.lake import Start
    from jobs.plan.stage import PlanResult

__all__ = ["FleetOutcome", "FleetResult", "FleetTask", "run_fleet", "solve_fleet", "solve_task",
           "spread_groups"]

_OUT_SCHEMA = "job_id string, outcome binary"


@dataclass(frozen=True)
class FleetTask:
    """One job's planning problem, as shipped to an executor (pickled)."""

    job_id: str
    strategy: str
    params: dict[str, Any]
    state: ClusterState
    budget: Budget
    time_limit_s: float | None
    scaling: ScalingConfig | None = None
    sections: tuple[dict[str, Any], ...] = ()  # earlier published scaling sections (Alg. 1)
    runtime_nodes: frozenset[str] | None = None  # the nodes the runtime reported owning
    #: nodes a published version the runtime has not applied whole terminates
    gone: frozenset[str] = frozenset()


@dataclass(frozen=True)
class FleetOutcome:
    """What one executor's solver returns: the plan, or the error that prevented it."""

    job_id: str
    plan: Plan | None
    state: ClusterState | None  # the state the plan is for (scaling may add / mark nodes)
    scaling_extra: dict[str, Any] | None
    host: str
    solve_s: float
    error: str = ""


def solve_task(task: FleetTask) -> FleetOutcome:
    """Run the job's strategy (with Algorithm 1 when the job scales); never raises."""
    from jobs.plan.scaling import solve

    t0 = time.perf_counter()
    host = f"{socket.gethostname()}:{os.getpid()}"
    try:
        solved = solve(task.state, task.budget, task.strategy, task.params, task.time_limit_s,
                       task.scaling, task.sections, task.runtime_nodes, task.gone,
                       task.job_id)
        return FleetOutcome(task.job_id, solved.plan, solved.state, solved.scaling_extra, host,
                            time.perf_counter() - t0)
    except Exception as exc:  # one job's failure must not lose the others' plans
        return FleetOutcome(task.job_id, None, None, None, host, time.perf_counter() - t0,
                            error=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}")


def _solve_group(frame: pd.DataFrame) -> pd.DataFrame:
    """applyInPandas body: the rows of one job_id (one task) -> one pickled outcome."""
    import pandas as pd

    outcomes = [solve_task(pickle.loads(blob)) for blob in frame["task"]]
    return pd.DataFrame({"job_id": [o.job_id for o in outcomes],
                         "outcome": [pickle.dumps(o) for o in outcomes]})



def solve_fleet(spark: SparkSession, tasks: Sequence[FleetTask],
                partitions: int | None = None) -> dict[str, FleetOutcome]:
    """Solve every task on the executors, one group (one solver) per job; outcomes by job id.

    Adaptive execution would coalesce the tiny shuffle into one partition (one core): it is
    switched off for this query so the jobs spread over `partitions` tasks (default: twice the
    cores Spark offers).
    """
    if not tasks:
        return {}
    ids = [t.job_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError(f"fleet: duplicate job ids in the tasks: {sorted(ids)}")
    n = partitions or max(2, 2 * spark.sparkContext.defaultParallelism)
    with spread_groups(spark, min(n, len(tasks))):
        frame = spark.createDataFrame([(t.job_id, pickle.dumps(t)) for t in tasks],
                                      "job_id string, task binary")
        rows = frame.groupBy("job_id").applyInPandas(_solve_group, _OUT_SCHEMA).collect()
    return {r["job_id"]: pickle.loads(r["outcome"]) for r in rows}


@dataclass(frozen=True)
class FleetResult:
    period_end: str
    planned: tuple[PlanResult, ...]
    failed: dict[str, str] = field(default_factory=dict)  # job -> the solver's error
    skipped: tuple[str, ...] = ()  # configured jobs with no stats for the period
    hosts: dict[str, str] = field(default_factory=dict)  # job -> executor host:pid
    solve_wall_s: float = 0.0
    wall_s: float = 0.0

    def summary(self) -> str:
        lines = [f"fleet {self.period_end}: {len(self.planned)} jobs planned on "
                 f"{len(set(self.hosts.values()))} executor processes in "
                 f"{self.solve_wall_s:.1f} s (total {self.wall_s:.1f} s)"]
        lines.extend(f"  {r.summary()}" for r in self.planned)
        for job_id, error in sorted(self.failed.items()):
            lines.append(f"  {job_id}: not planned: {error.splitlines()[0]}")
        if self.skipped:
            lines.append(f"  skipped (no stats for the period): {', '.join(self.skipped)}")
        return "\n".join(lines)


def _select_jobs(job_ids: Iterable[str] | None) -> tuple[list[JobConfig], bool]:
    from schemas.config import load_jobs, resolve_job

    if job_ids is None:
        return list(load_jobs().values()), False
    names = [j.strip() for j in job_ids if j.strip()]
    if not names:
        raise ValueError("fleet: --jobs names no job; give a comma list of job ids")
    return [resolve_job(j) for j in dict.fromkeys(names)], True


@dataclass(frozen=True)
class FleetInputs:
    """What build_tasks found: the tasks, each job's period (its context: marker and report read
    once), starting point and prepared state, and the jobs left out (no stats for the period;
    or, unless a dry run, not validated: job -> why)."""

    tasks: list[FleetTask]
    starts: dict[str, Start]
    contexts: dict[str, StageContext]
    skipped: list[str]
    refused: dict[str, str]
    #: each job's state made ready for its strategy (a dynamic job's arrivals, jobs/facets/dynamic.py)
    prepared: dict[str, Prepared] = field(default_factory=dict)


def build_tasks(spark: SparkSession, paths: Paths, jobs: Sequence[JobConfig],
                period_end: datetime, strategy: str | None, *, strict: bool,
                dry_run: bool = False) -> FleetInputs:
    """Checks every job before anything runs: its period end, its strategy, its budget, and
    (unless a dry run) that the period passed validation for its current collect. Each job's
    state is assembled as the per-job plan assembles it (jobs/plan/assemble.py), from the stats
    of all jobs read in one query per table."""
    from jobs.context import stage_context
    from jobs.errors import StageError
    from jobs.facets.registry import read_facets
    from jobs.lake import open_lake
    from jobs.lake.api import start_from
    from jobs.plan.assemble import PeriodInputs, assemble
    from jobs.plan.scaling import earlier_sections
    from jobs.plan.stage import check_budget, job_budget, no_stats_error, resolve_strategy
    from jobs.plan.terminated import terminated_after
    from schemas.landing import format_period_end
    from schemas.periods import PeriodError, check_period_end
    from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS

    resolved = {j.job_id: resolve_strategy(j, strategy) for j in jobs}  # bad config: stop here
    for job in jobs:
        check_budget(job)
        try:
            check_period_end(job, period_end)
        except PeriodError as exc:
            raise StageError.of(exc, where=f"job {job.job_id!r}",
                                fix="give a period end on the job's grid") from None
    lake = open_lake(paths, spark)
    lake.ensure_tables()
    ids = [j.job_id for j in jobs]
    # one query per table for all the jobs
    kgs = lake.rows_of_jobs(KEYGROUP_STATS, ids, period_end)
    nodes = lake.rows_of_jobs(NODE_STATS, ids, period_end)
    edges = lake.rows_of_jobs(COMM_STATS, ids, period_end)
    missing = [j for j in ids if not kgs.get(j)]
    stamp = format_period_end(period_end)
    if missing and (strict or len(missing) == len(ids)):
        raise no_stats_error(paths, missing[0], stamp)
    published = lake.last_published_of_jobs(ids, period_end)
    tasks, starts, contexts, refused, prepared = [], {}, {}, {}, {}
    for job in jobs:
        if job.job_id in missing:
            continue
        ctx = stage_context(job, period_end, paths, spark)
        if not dry_run:
            try:
                ctx.check_validated()
            except StageError as exc:
                if strict:
                    raise
                refused[job.job_id] = exc.what
                continue
        runtime = None if ctx.marker is None else ctx.marker.runtime
        newest, current = published.get(job.job_id, (None, {}))
        start = start_from(ctx.lake, job.job_id, newest, current, runtime)
        strat, params = resolved[job.job_id]
        inputs = PeriodInputs(kgs[job.job_id], nodes.get(job.job_id, []),
                              edges.get(job.job_id, []), start, read_facets(ctx))
        try:
            assembled = assemble(job, strat, params, inputs, stamp)
            gone = terminated_after(ctx.paths.published, job.job_id, start.version, start.newest)
        except StageError as exc:  # e.g. a stream's lower bound above its observed rate
            if strict:
                raise
            refused[job.job_id] = exc.what
            continue
        ready = prepared[job.job_id] = assembled.prepared
        sections = (tuple(earlier_sections(ctx.lake, job.job_id, period_end))
                    if job.scaling is not None else ())
        tasks.append(FleetTask(job.job_id, strat, assembled.params, ready.state, job_budget(job),
                               job.solver_time_limit_s, job.scaling, sections,
                               None if ctx.marker is None else ctx.marker.runtime_nodes,
                               gone))
        starts[job.job_id] = start
        contexts[job.job_id] = ctx
    return FleetInputs(tasks, starts, contexts, missing, refused, prepared)


def run_fleet(period_end: str | datetime, *, job_ids: Iterable[str] | None = None,
              strategy: str | None = None, dry_run: bool = False, paths: Paths | None = None,
              spark: SparkSession | None = None) -> FleetResult:
    """Plan `period_end` of every configured job (or of `job_ids`) on Spark and record each."""
    from jobs.errors import job_lock
    from jobs.plan.record import Computed, Provenance
    from jobs.plan.stage import record_plan, with_note
    from jobs.plan.steady import steady
    from jobs.spark.session import get_spark
    from schemas.landing import format_period_end, parse_period_end
    from schemas.tracking import Tag

    t0 = time.perf_counter()
    end = period_end if isinstance(period_end, datetime) else parse_period_end(period_end)
    paths = paths or Paths.from_env()
    spark = spark or get_spark(paths)
    jobs, strict = _select_jobs(job_ids)
    inputs = build_tasks(spark, paths, jobs, end, strategy, strict=strict, dry_run=dry_run)
    t1 = time.perf_counter()
    outcomes = solve_fleet(spark, inputs.tasks)
    solve_wall = time.perf_counter() - t1
    planned, failed = [], dict(inputs.refused)
    for task in inputs.tasks:
        out = outcomes.get(task.job_id)
        if out is None or out.plan is None or out.state is None:
            failed[task.job_id] = out.error if out is not None else "no outcome returned"
            continue
        start, ctx = inputs.starts[task.job_id], inputs.contexts[task.job_id]
        solved = out.plan
        if ctx.job.stability is not None:  # as the plan stage: band, cooldown, oscillations
            solved = steady(ctx.lake, task.job_id, end, ctx.job.stability, out.state, solved)
        plan, logged, artifacts = inputs.prepared[task.job_id].finish(
            with_note(solved, start), out.state)
        marker = ctx.marker
        with (contextlib.nullcontext() if dry_run
              else job_lock(paths, task.job_id, "plan")):
            planned.append(record_plan(
                ctx, Computed(task.strategy, logged, plan, start, out.scaling_extra, artifacts),
                Provenance(ctx.report, {Tag.PLANNED_BY: "fleet", Tag.FLEET_EXECUTOR: out.host},
                           dry_run, None if marker is None else marker.collect_id)))
    return FleetResult(format_period_end(end), tuple(planned), failed, tuple(inputs.skipped),
                       {k: o.host for k, o in outcomes.items()}, solve_wall,
                       time.perf_counter() - t0)
