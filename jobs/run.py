"""Entry points of the four stages, by job id and period end: what the DAG and the CLI call.

Each resolves the job's config and the stores, gets the shared Spark session (when the stage
first uses it: `lazy_spark`), runs one stage and returns a one-line summary; bad input surfaces
as `StageError` or `ConfigError` with the what, where and how-to-fix, before anything is written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from jobs.errors import StageError, check_home, is_concurrent_write
from jobs.spark.session import get_spark, lazy_spark
from schemas.config import JobConfig, Paths, resolve_job
from schemas.landing import parse_period_end
from schemas.periods import PeriodError, check_period_end

if TYPE_CHECKING:  # each stage imports only what it runs: a DAG task stays light
    from jobs.plan.stage import PlanResult
    from jobs.publish.stage import PublishResult

__all__ = ["run_collect", "run_plan", "run_publish", "run_validate", "run_whatif"]


def _context(job_id: str, period_end: str | datetime) -> tuple[JobConfig, datetime, Paths]:
    """The job, its checked period end and the stores: every check before any stage reads."""
    job = resolve_job(job_id)
    try:
        end = period_end if isinstance(period_end, datetime) else parse_period_end(period_end)
        check_period_end(job, end)
    except PeriodError as exc:
        raise StageError(exc.what, where=exc.where, fix=exc.fix) from None
    except ValueError as exc:
        raise StageError(str(exc), where=f"job {job_id!r}",
                         fix="give the period end as ISO-8601 with a zone, e.g. 2026-01-01T00:05:00Z"
                         ) from None
    paths = Paths.from_env()
    check_home(paths)
    return job, end, paths


@contextlib.contextmanager
def _concurrency(stage: str, job_id: str) -> Iterator[None]:
    """A writer outside this job's lock (another RECONF_HOME's process on a shared lake, a hand
    edit) committed first: Delta refused our commit, so nothing of ours was written."""
    try:
        yield
    except StageError:
        raise
    except Exception as exc:
        if not is_concurrent_write(exc):
            raise
        raise StageError(
            f"another writer changed a Delta table while {stage} of job {job_id!r} was "
            f"writing it ({str(exc).splitlines()[0][:200]})",
            where=f"{stage} of job {job_id!r}",
            fix=f"run the {stage} again: its writes are idempotent per period",
        ) from None


def run_collect(job_id: str, period_end: str | datetime) -> str:
    from jobs.collect.stage import collect

    job, end, paths = _context(job_id, period_end)
    with _concurrency("collect", job_id):
        result = collect(job, end, paths=paths, spark=lazy_spark(paths))
    rows = ", ".join(f"{name} {count} rows (v{result.versions[name]})" for name, count in result.rows.items())
    return f"collect {job_id}@{result.period_end}: {rows}"


def run_validate(job_id: str, period_end: str | datetime) -> str:
    from jobs.validate.stage import validate_period

    job, end, paths = _context(job_id, period_end)
    result = validate_period(job, end, paths=paths, spark=lazy_spark(paths))
    return (
        f"validate {job_id}: passed (key groups checked against {result.expected_from}); "
        f"report {result.report_path}"
    )


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
    from jobs.markers import read_report
    from jobs.plan.stage import plan_period

    job, end, paths = _context(job_id, period_end)
    if max_migrations is not None:
        job = replace(job, max_migrations=max_migrations)
    if time_limit_s is not None:
        job = replace(job, solver_time_limit_s=time_limit_s)
    with _concurrency("plan", job_id):
        return plan_period(
            job, end, paths=paths, spark=lazy_spark(paths), strategy=strategy, dry_run=dry_run,
            validation=read_report(paths, job.job_id, end), tags=tags,
        )


def run_publish(job_id: str, period_end: str | datetime, *, plan_id: str | None = None
                ) -> PublishResult:
    """Publish the period's plan: `plan_id`, else the one this Airflow run planned, else the
    period's newest attempt (jobs/publish/stage.py)."""
    from jobs.publish.stage import publish_period

    job, end, paths = _context(job_id, period_end)
    with _concurrency("publish", job_id):
        return publish_period(job, end, paths=paths, spark=lazy_spark(paths), plan_id=plan_id)


def run_whatif(job_id: str, period_end: str | datetime, *, force: bool = False) -> str:
    """The step after publish: shadow strategies plan the period's state (jobs/whatif/stage.py); on
    the executors when RECONF_SPARK_MASTER names a cluster, else in local worker processes."""
    from jobs.whatif.shadow_spark import cluster_master
    from jobs.whatif.stage import run_whatif as whatif
    from schemas.landing import format_period_end

    job, end, paths = _context(job_id, period_end)
    master = cluster_master()  # a cluster: the shadows run on its executors, as fleet planning
    spark = get_spark(paths, master=master) if master else None
    return whatif(job, format_period_end(end), paths=paths, force=force, spark=spark).summary()
