"""Fleet planning: plan one period of many jobs at once, one solver per job on Spark executors.

The driver reads every job's stats and current assignment in one query per table (not one per
job), builds each job's `ClusterState` with `jobs.plan.build_state`, and ships one task per job
through `groupBy(job_id).applyInPandas`, so each executor core runs the solvers of its share of
the jobs. The plans come back to the driver, which records each one exactly as the per-job path
does (`jobs.plan.record_plan`: the MLflow run `<job>@<period>`, then plans / plan_moves).

Jobs are independent: a solver that fails for one job is reported and that job gets no plan;
the others are recorded. With `--jobs` every named job must have stats for the period; without
it, configured jobs with no stats for the period are skipped (and listed).
"""

from __future__ import annotations

import os
import pickle
import socket
import time
import traceback
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from placement.model import Budget, ClusterState, Plan
from schemas.config import JobConfig, Paths, ScalingConfig

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

    from jobs.plan import PlanResult

__all__ = ["FleetOutcome", "FleetResult", "FleetTask", "run_fleet", "solve_fleet", "solve_task"]

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
    from placement.registry import get_strategy

    t0 = time.perf_counter()
    host = f"{socket.gethostname()}:{os.getpid()}"
    try:
        if task.scaling is not None:
            from jobs.scaling import history_of, policy_of, scaling_json, with_scaling_nodes
            from placement.scaling import scaling_cycle

            outcome = scaling_cycle(
                with_scaling_nodes(task.state, task.sections), task.budget,
                strategy=task.strategy, policy=policy_of(task.scaling),
                history=history_of(task.sections), time_limit_s=task.time_limit_s,
                **task.params)
            return FleetOutcome(task.job_id, outcome.plan, outcome.state, scaling_json(outcome),
                                host, time.perf_counter() - t0)
        plan = get_strategy(task.strategy)(task.state, task.budget,
                                           time_limit_s=task.time_limit_s, **task.params)
        return FleetOutcome(task.job_id, plan, task.state, None, host, time.perf_counter() - t0)
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
    conf = spark.conf
    saved = {k: conf.get(k, None) for k in ("spark.sql.adaptive.enabled",
                                            "spark.sql.shuffle.partitions")}
    conf.set("spark.sql.adaptive.enabled", "false")
    conf.set("spark.sql.shuffle.partitions", str(min(n, len(tasks))))
    try:
        frame = spark.createDataFrame([(t.job_id, pickle.dumps(t)) for t in tasks],
                                      "job_id string, task binary")
        rows = frame.groupBy("job_id").applyInPandas(_solve_group, _OUT_SCHEMA).collect()
    finally:
        for key, value in saved.items():
            if value is None:
                conf.unset(key)
            else:
                conf.set(key, value)
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
        for r in self.planned:
            p = r.plan
            lines.append(f"  {r.plan_id}: {p.strategy} {p.status.value}, load distance "
                         f"{p.before.load_distance:.3f} -> {p.after.load_distance:.3f}, "
                         f"{p.migrations} migrations, MLflow run {r.mlflow_run_id}")
        for job_id, error in sorted(self.failed.items()):
            lines.append(f"  {job_id}: FAILED, no plan recorded: {error.splitlines()[0]}")
        if self.skipped:
            lines.append(f"  skipped (no stats for the period): {', '.join(self.skipped)}")
        return "\n".join(lines)


def _rows_by_job(spark: SparkSession, paths: Paths, table: str, ids: list[str],
                 period_end: datetime) -> dict[str, list[dict[str, Any]]]:
    """One query for all jobs: the period's rows of `table`, grouped by job id."""
    from pyspark.sql import functions as F

    from jobs.lake import read_table

    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    df = read_table(spark, paths, table).where(
        F.col("job_id").isin(ids) & (F.col("period_end") == F.lit(period_end)))
    for row in df.collect():
        out[row["job_id"]].append(row.asDict())
    return out


def _published_by_job(spark: SparkSession, paths: Paths, ids: list[str], before: datetime
                      ) -> dict[str, tuple[int, dict[str, str]]]:
    """`jobs.lake.last_published` for many jobs in two queries: job -> (version, assignment)."""
    from pyspark.sql import functions as F

    from jobs.lake import read_table

    newest = (read_table(spark, paths, "assignment_versions")
              .where(F.col("job_id").isin(ids) & (F.col("status") == "published")
                     & (F.col("period_end") < F.lit(before)))
              .groupBy("job_id").agg(F.max("version").alias("version")))
    rows = (read_table(spark, paths, "assignments").join(newest, ["job_id", "version"])
            .select("job_id", "version", "keygroup", "node").collect())
    out: dict[str, tuple[int, dict[str, str]]] = {}
    for r in rows:
        out.setdefault(r["job_id"], (int(r["version"]), {}))[1][r["keygroup"]] = r["node"]
    return out


def _select_jobs(job_ids: Iterable[str] | None) -> tuple[list[JobConfig], bool]:
    from schemas.config import load_jobs, resolve_job

    if job_ids is None:
        return list(load_jobs().values()), False
    names = [j.strip() for j in job_ids if j.strip()]
    if not names:
        raise ValueError("fleet: --jobs names no job; give a comma list of job ids")
    return [resolve_job(j) for j in dict.fromkeys(names)], True


def build_tasks(spark: SparkSession, paths: Paths, jobs: Sequence[JobConfig],
                period_end: datetime, strategy: str | None, *, strict: bool
                ) -> tuple[list[FleetTask], dict[str, int | None], list[str]]:
    """(tasks, job -> base version, skipped jobs). Checks every job before anything runs."""
    from jobs.lake import ensure_tables
    from jobs.plan import build_state, job_budget, no_stats_error, resolve_strategy
    from jobs.scaling import earlier_sections
    from schemas.landing import format_period_end
    from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS

    resolved = {j.job_id: resolve_strategy(j, strategy) for j in jobs}  # bad config: stop here
    ensure_tables(spark, paths)
    ids = [j.job_id for j in jobs]
    kgs = _rows_by_job(spark, paths, KEYGROUP_STATS.name, ids, period_end)
    nodes = _rows_by_job(spark, paths, NODE_STATS.name, ids, period_end)
    edges = _rows_by_job(spark, paths, COMM_STATS.name, ids, period_end)
    missing = [j for j in ids if not kgs.get(j)]
    if missing and (strict or len(missing) == len(ids)):
        raise no_stats_error(paths, missing[0], format_period_end(period_end))
    published = _published_by_job(spark, paths, ids, period_end)
    tasks, bases = [], {}
    for job in jobs:
        if job.job_id in missing:
            continue
        base_version, current = published.get(job.job_id, (None, {}))
        strat, params = resolved[job.job_id]
        state = build_state(job, kgs[job.job_id], nodes.get(job.job_id, []),
                            edges.get(job.job_id, []), current)
        sections = (tuple(earlier_sections(spark, paths, job.job_id, period_end))
                    if job.scaling is not None else ())
        tasks.append(FleetTask(job.job_id, strat, params, state, job_budget(job),
                               job.solver_time_limit_s, job.scaling, sections))
        bases[job.job_id] = base_version
    return tasks, bases, missing


def run_fleet(period_end: str | datetime, *, job_ids: Iterable[str] | None = None,
              strategy: str | None = None, dry_run: bool = False, paths: Paths | None = None,
              spark: SparkSession | None = None) -> FleetResult:
    """Plan `period_end` of every configured job (or of `job_ids`) on Spark and record each."""
    from jobs.plan import record_plan
    from jobs.spark import get_spark
    from jobs.validate_stats import read_report
    from schemas.landing import format_period_end, parse_period_end

    t0 = time.perf_counter()
    end = period_end if isinstance(period_end, datetime) else parse_period_end(period_end)
    paths = paths or Paths.from_env()
    spark = spark or get_spark(paths)
    jobs, strict = _select_jobs(job_ids)
    tasks, bases, skipped = build_tasks(spark, paths, jobs, end, strategy, strict=strict)
    t1 = time.perf_counter()
    outcomes = solve_fleet(spark, tasks)
    solve_wall = time.perf_counter() - t1
    by_id = {j.job_id: j for j in jobs}
    planned, failed = [], {}
    for task in tasks:
        out = outcomes.get(task.job_id)
        if out is None or out.plan is None or out.state is None:
            failed[task.job_id] = out.error if out is not None else "no outcome returned"
            continue
        planned.append(record_plan(
            spark, paths, by_id[task.job_id], end, task.strategy, out.state, out.plan,
            out.scaling_extra, bases[task.job_id],
            validation=read_report(paths, task.job_id, end),
            tags={"reconf.planned_by": "fleet", "reconf.fleet.executor": out.host},
            dry_run=dry_run))
    return FleetResult(format_period_end(end), tuple(planned), failed, tuple(skipped),
                       {k: o.host for k, o in outcomes.items()}, solve_wall,
                       time.perf_counter() - t0)


_CLI_HELP = """\
examples:
  python -m jobs.plan --job demo --period-end 2026-01-01T00:05:00Z          # one job
  python -m jobs.plan --fleet --period-end 2026-01-01T00:05:00Z             # every job
  python -m jobs.plan --fleet --jobs demo,flights2 --period-end 2026-01-01T00:05:00Z \\
      --master spark://127.0.0.1:7077                                        # on the cluster
The master: --master, else $RECONF_SPARK_MASTER, else local[2] (infra/spark-cluster.sh up
starts a standalone cluster). Exit 0: all planned; 1: a job's solver failed (the others are
recorded); 2: bad input (nothing written).
"""


def plan_cli(argv: Sequence[str] | None = None) -> int:
    """The command line of `python -m jobs.plan` (per job, or the whole fleet at once)."""
    import argparse
    import sys

    from jobs.errors import StageError
    from jobs.spark import get_spark, resolve_master

    parser = argparse.ArgumentParser(
        prog="python -m jobs.plan", description="plan one period of one job, or of the fleet "
        "(one solver per job on Spark executors)", epilog=_CLI_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--job", help="plan this job only (the per-job path)")
    target.add_argument("--fleet", action="store_true", help="plan every configured job")
    parser.add_argument("--jobs", help="with --fleet: a comma list of job ids (default: all)")
    parser.add_argument("--period-end", required=True, metavar="T",
                        help="end of the statistics period, ISO-8601 with a zone")
    parser.add_argument("--strategy", help="override every job's strategy")
    parser.add_argument("--dry-run", action="store_true",
                        help="log MLflow runs tagged dry_run; write no plans tables")
    parser.add_argument("--master", help="Spark master URL (default $RECONF_SPARK_MASTER or "
                        "local[2])")
    args = parser.parse_args(argv)
    if args.jobs and not args.fleet:
        parser.error("--jobs goes with --fleet (for one job use --job)")
    try:
        # the fleet plans in-process (applyInPandas on this session's executors) even where
        # RECONF_SPARK_REMOTE is set; the stages reuse this session
        get_spark(Paths.from_env(),
                  master=args.master or (resolve_master() if args.fleet else None))
        if args.fleet:
            result = run_fleet(args.period_end, job_ids=args.jobs.split(",") if args.jobs
                               else None, strategy=args.strategy, dry_run=args.dry_run)
            print(result.summary())
            return 1 if result.failed else 0
        from jobs.stages import run_plan

        r = run_plan(args.job, args.period_end, strategy=args.strategy, dry_run=args.dry_run)
        print(f"plan {r.plan_id}: load distance {r.plan.before.load_distance:.3f} -> "
              f"{r.plan.after.load_distance:.3f}, {r.plan.migrations} migrations, "
              f"MLflow run {r.mlflow_run_id}")
        return 0
    except (StageError, ValueError) as exc:  # ConfigError is a ValueError
        print(f"jobs.plan: error: {exc}", file=sys.stderr)
        return 2
