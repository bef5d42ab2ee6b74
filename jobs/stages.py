"""Entry points of the four stages, by job id and period end: what the DAG and the CLI call.

Each resolves the job's config and the stores, gets the shared Spark session, runs one stage and
returns a one-line summary; bad input surfaces as `StageError` or `ConfigError` with the what,
where and how-to-fix, before anything is written.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from jobs.spark import get_spark
from schemas.config import JobConfig, Paths, resolve_job
from schemas.landing import parse_period_end

if TYPE_CHECKING:  # each stage imports only what it runs: a DAG task stays light
    from jobs.plan import PlanResult
    from jobs.publish import PublishResult

__all__ = ["run_collect", "run_plan", "run_publish", "run_validate"]


def _context(job_id: str, period_end: str | datetime) -> tuple[JobConfig, datetime, Paths]:
    job = resolve_job(job_id)
    end = period_end if isinstance(period_end, datetime) else parse_period_end(period_end)
    return job, end, Paths.from_env()


def run_collect(job_id: str, period_end: str | datetime) -> str:
    from jobs.collect_stats import collect

    job, end, paths = _context(job_id, period_end)
    result = collect(job, end, paths=paths, spark=get_spark(paths))
    rows = ", ".join(f"{name} {count} rows (v{result.versions[name]})" for name, count in result.rows.items())
    return f"collect {job_id}@{result.period_end}: {rows}"


def run_validate(job_id: str, period_end: str | datetime) -> str:
    from jobs.validate_stats import validate_period

    job, end, paths = _context(job_id, period_end)
    result = validate_period(job, end, paths=paths, spark=get_spark(paths))
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
    from jobs.plan import plan_period
    from jobs.validate_stats import read_report

    job, end, paths = _context(job_id, period_end)
    if max_migrations is not None:
        job = replace(job, max_migrations=max_migrations)
    if time_limit_s is not None:
        job = replace(job, solver_time_limit_s=time_limit_s)
    return plan_period(
        job, end, paths=paths, spark=get_spark(paths), strategy=strategy, dry_run=dry_run,
        validation=read_report(paths, job.job_id, end), tags=tags,
    )


def run_publish(job_id: str, period_end: str | datetime) -> PublishResult:
    from jobs.publish import publish_period

    job, end, paths = _context(job_id, period_end)
    return publish_period(job, end, paths=paths, spark=get_spark(paths))
