"""Which period ends a job has: its SPL grid, bounded by its start date and the present.

A job's statistics periods are ``(start_date + (k-1)·SPL, start_date + k·SPL]`` for k >= 1, the
same grid the job's DAG runs on (reconf/timetable.py: start_date + k·SPL). Every entry
point (CLI, DAG task, fleet) checks a period end here before anything reads or writes, so an end
off the grid, before the job started, in the future, or beyond what every layer can store never
reaches the landing zone, the lake or a manifest.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from schemas.config import JobConfig
from schemas.errors import PeriodError
from schemas.landing import format_period_end

__all__ = ["FUTURE_TOLERANCE", "LAST_STORABLE", "PeriodError", "check_period_end", "nearest_period_ends"]

#: How far past the clock a period end may lie (clock skew between runtime and pipeline).
FUTURE_TOLERANCE = timedelta(minutes=1)
#: The last instant every layer stores: pandas' nanosecond timestamps end in April 2262; Delta,
#: Spark and the manifests go further, so this is the binding one.
LAST_STORABLE = datetime(2262, 4, 11, tzinfo=UTC)


def nearest_period_ends(job: JobConfig, end: datetime) -> tuple[datetime, datetime]:
    """The job's period ends at or before `end` and after it (the first is at least the first period)."""
    k = max(1, (end - job.start_date) // job.spl)
    below = job.start_date + k * job.spl
    if below > end:
        return below, below
    return below, below + job.spl


def check_period_end(job: JobConfig, end: datetime, *, now: datetime | None = None) -> datetime:
    """`end` if it is one of the job's period ends; otherwise `PeriodError`.

    `now` is only a guard against ends in the future (the default is the clock); which period a
    task works on always comes from its caller (the run's logical date), never from the clock.
    """
    where = f"job {job.job_id!r} (every {job.spl} from {format_period_end(job.start_date)})"
    stamp = format_period_end(end) if end.year < 9999 else end.isoformat()
    if end >= LAST_STORABLE:
        raise PeriodError(
            f"period end {stamp} is beyond what reconf can store (before {LAST_STORABLE:%Y-%m-%d})",
            where=where, fix="give the period end of a real statistics period",
        )
    if end <= job.start_date:
        first = format_period_end(job.start_date + job.spl)
        raise PeriodError(
            f"period end {stamp} is not after the job's start date",
            where=where, fix=f"the job's first period ends at {first}",
        )
    below, above = nearest_period_ends(job, end)
    if below != end:
        raise PeriodError(
            f"period end {stamp} is not on the job's period grid",
            where=where,
            fix=f"use a period end of the job: the nearest are {format_period_end(below)} and "
                f"{format_period_end(above)}",
        )
    clock = now or datetime.now(UTC)
    if end > clock + FUTURE_TOLERANCE:
        current = nearest_period_ends(job, clock)[0] if clock > job.start_date else None
        fix = ("the newest period that has ended is " + format_period_end(current)
               if current is not None and current > job.start_date
               else "wait until the job's first period has ended")
        raise PeriodError(
            f"period end {stamp} is in the future (now {format_period_end(clock)})",
            where=where, fix=fix,
        )
    return end
