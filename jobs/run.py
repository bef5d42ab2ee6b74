"""Entry points of the stages, by job id and period end: what the DAG and the CLI call.

Each resolves the job's config and checks the period end (`period_context`: a `StageContext`,
jobs/context.py), runs one stage inside the frame (`run_stage`: home check, tables, the job's
lock, conflicts) and returns its result or its one-line summary; bad input surfaces as
`StageError` or `ConfigError` with the what, where and how-to-fix, before anything is written.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from jobs.context import StageContext, run_stage, stage_context
from jobs.errors import StageError
from schemas.config import JobConfig, Paths, resolve_job
from schemas.landing import parse_period_end
from schemas.periods import PeriodError, check_period_end

if TYPE_CHECKING:  # each stage imports only what it runs: a DAG task stays light
    from jobs.plan.stage import PlanResult
    from jobs.publish.stage import PublishResult

_PERIOD_FIX = "give the period end as ISO-8601 with a zone, e.g. 2026-01-01T00:05:00Z"

__all__ = ["period_context", "run_collect", "run_plan", "run_publish", "run_validate",
           "run_whatif"]


def period_context(job_id: str, period_end: str | datetime) -> StageContext:
    """The job's period as a context: every check of the arguments before any stage reads (its
    Spark session is made when first used)."""
    job = resolve_job(job_id)
    try:
        end = period_end if isinstance(period_end, datetime) else parse_period_end(period_end)
        check_period_end(job, end)
    except PeriodError as exc:
        raise StageError.of(exc, where=f"job {job_id!r}", fix=_PERIOD_FIX) from None
    except ValueError as exc:
        raise StageError(str(exc), where=f"job {job_id!r}",
                         fix=_PERIOD_FIX
                         ) from None
    return stage_context(job, end, Paths.from_env())


def run_collect(job_id: str, period_end: str | datetime) -> str:
    from jobs.collect.stage import collect_period

    return collect_period(period_context(job_id, period_end)).summary()


def run_validate(job_id: str, period_end: str | datetime) -> str:
    from jobs.validate.stage import validate

    return validate(period_context(job_id, period_end)).summary()


def run_plan(
    job_id: str,
    period_end: str | datetime,
    *,
    strategy: str | None = None,
    max_migrations: int | None = None,
    time_limit_s: float | None = None,
    dry_run: bool = False,
    tags: dict[str, str] | None = None,
) -> PlanResult:
    from jobs.plan.stage import plan

    ctx = period_context(job_id, period_end)
    return plan(replace(ctx, job=_overridden(ctx.job, max_migrations, time_limit_s)),
                strategy=strategy, dry_run=dry_run, tags=tags)


def _overridden(job: JobConfig, max_migrations: int | None, time_limit_s: float | None
                ) -> JobConfig:
    """The job with the command line's budget and time limit, refused as the job's own values
    would be (the job config checks its fields: schemas/config/job.py)."""
    from jobs.plan.stage import check_budget

    if max_migrations is not None:
        check_budget(job, max_migrations)
    try:
        if max_migrations is not None:
            job = replace(job, max_migrations=max_migrations)
        if time_limit_s is not None:
            job = replace(job, solver_time_limit_s=time_limit_s)
    except ValueError as exc:  # the config's own rule, e.g. a time limit that is not positive
        raise StageError(f"max_migrations {max_migrations!r}, time limit {time_limit_s!r}: "
                         f"refused: {str(exc).splitlines()[-1].strip()}",
                         where=f"job {job.job_id!r} (the command line)",
                         fix="give a positive time limit and a budget from the job config's "
                             "range (docs/operations.md)") from None
    return job


def run_publish(job_id: str, period_end: str | datetime, *, plan_id: str | None = None
                ) -> PublishResult:
    """Publish the period's plan: `plan_id`, else the one this Airflow run planned, else the
    period's newest attempt (jobs/publish/stage.py)."""
    from jobs.publish.stage import publish

    return publish(period_context(job_id, period_end), plan_id=plan_id)


def run_whatif(job_id: str, period_end: str | datetime, *, force: bool = False,
               planned: bool = False) -> str:
    """The step after publish: shadow strategies plan the period's state (jobs/whatif/stage.py); on
    the executors when RECONF_SPARK_MASTER names a cluster, else in local worker processes.

    `planned` (`reconf whatif` by hand): a period that was never planned is bad input, not a
    skip; the DAG's teardown, which also runs after a failed plan, keeps the skip."""
    from jobs.spark.session import get_spark
    from jobs.whatif.shadow_spark import cluster_master
    from jobs.whatif.stage import run_whatif as whatif

    def body(ctx: StageContext) -> str:
        master = cluster_master()  # a cluster: the shadows run on its executors, as fleet planning
        spark = get_spark(ctx.paths, master=master) if master else None
        result = whatif(ctx.job, ctx.stamp, paths=ctx.paths, force=force, spark=spark)
        if planned and result.status == "skipped" and result.run_id is None:
            raise StageError(f"period {ctx.stamp} of job {ctx.job.job_id!r} has no plan to "
                             f"compare: {result.reason}",
                             where=f"MLflow experiment {ctx.job.job_id!r} of the project's store",
                             fix=f"plan and publish the period first (`reconf cycle --job "
                             f"{ctx.job.job_id} --period-end {ctx.stamp}`), or name a period "
                             "with a plan (`reconf audit` of a missing one lists the nearest)")
        return result.summary()

    # it reads and writes MLflow only: no lake tables, no lock
    return run_stage(period_context(job_id, period_end), "what-if", body, lock=False,
                     tables=False)
