"""The stage frame: one period of one job as a value, and `run_stage`, the frame every stage runs in.

`StageContext` carries what every stage function used to take one by one: the job, the period
end and its window, the stores (`paths`), the lake (opened once, jobs/lake `open_lake`, by the
engine RECONF_LAKE_IO chooses), the Spark session (made on first use, jobs/spark/session.py
`lazy_spark`: only the Spark engine and fleet planning use it), the MLflow tracker (opened on
first use) and the period's collect marker and validation report, each read at most once. A
stage function reads it check → read → compute → commit (jobs/__init__.py).

`run_stage` owns what each stage repeated at its top: the home check, the lake's tables, the
job's writer lock, and turning a Delta write conflict into a `StageError` (nothing of ours was
written: the commit was refused). The entry points (jobs/run.py) print the result's one-line
`summary()`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from jobs.errors import StageError, check_home, is_concurrent_write, job_lock
from jobs.lake import Lake, open_lake
from jobs.markers import (
    CollectMarker,
    collect_marker_path,
    read_collect_marker,
    read_report,
    report_path,
)
from schemas.config import JobConfig, Paths
from schemas.landing import format_period_end

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["StageContext", "conflicts_refused", "run_stage", "run_stage_committing",
           "stage_context"]

R = TypeVar("R")
W = TypeVar("W")


@dataclass(frozen=True, eq=False)
class StageContext:
    """One period of one job, as every stage function reads it.

    `end` is the period's end (checked against the job's schedule by `stage_context`); the
    period is the window [end - spl, end). `marker` and `report` are read from the reports
    directory on first use and kept: a stage reads each once.
    """

    job: JobConfig
    end: datetime
    paths: Paths
    spark: SparkSession

    @property
    def job_id(self) -> str:
        return self.job.job_id

    @property
    def stamp(self) -> str:
        """The period end as every file, table row and message spells it."""
        return format_period_end(self.end)

    @property
    def start(self) -> datetime:
        return self.end - self.job.spl

    @property
    def window(self) -> str:
        return f"[{format_period_end(self.start)}, {self.stamp})"

    @cached_property
    def lake(self) -> Lake:
        """The stage's lake, opened on first use (jobs/lake/__init__.py `open_lake`)."""
        return open_lake(self.paths, self.spark)

    @cached_property
    def tracker(self) -> Any:
        """The MLflow client of the tracking store (jobs/tracking), opened on first use: a stage
        that logs nothing never imports MLflow."""
        from jobs.tracking.store import open_store

        return open_store(self.paths)

    @cached_property
    def marker(self) -> CollectMarker | None:
        """The period's collect marker (None: never collected, or its collect was interrupted)."""
        return read_collect_marker(self.paths, self.job_id, self.end)

    @cached_property
    def report(self) -> dict[str, Any] | None:
        """The period's validation report, whatever its verdict (None: not validated)."""
        return read_report(self.paths, self.job_id, self.end)

    def cmd(self, stage: str) -> str:
        """The command that runs `stage` of this period (for a message's fix)."""
        return f"reconf {stage} --job {self.job_id} --period-end {self.stamp}"

    def check_validated(self, collect_id: str | None = None) -> dict[str, Any]:
        """The period's passing validation report for its current collect, else `StageError`.

        `collect_id`, when given, is the collect a plan was made from: publish passes the plan's,
        so a period collected again after planning is refused too.
        """
        stamp, job_id, marker = self.stamp, self.job_id, self.marker
        validate_cmd = self.cmd("validate")
        if marker is None:
            raise StageError(
                f"period {stamp} of job {job_id!r} has no completed collect",
                where=str(collect_marker_path(self.paths, job_id, self.end)),
                fix=f"run `{self.cmd('collect')}`, then `{validate_cmd}`",
            )
        report = self.report
        if report is None or report.get("collect_id") != marker.collect_id:
            raise StageError(
                f"period {stamp} of job {job_id!r} was not validated since it was last collected",
                where=str(report_path(self.paths, job_id, self.end)),
                fix=f"run `{validate_cmd}` first",
            )
        if not report.get("success"):
            raise StageError(
                f"period {stamp} of job {job_id!r} failed validation, so it is neither planned "
                "for publishing nor published; the runtime keeps its assignment",
                where=str(report_path(self.paths, job_id, self.end)),
                fix="fix the runtime's metrics, land and collect the period again, then "
                    f"`{validate_cmd}` (a dry run, `reconf plan --dry-run`, still shows a plan)",
            )
        if collect_id is not None and collect_id != marker.collect_id:
            raise StageError(
                f"the plan of period {stamp} was made from statistics that have since been "
                "collected again",
                where=str(collect_marker_path(self.paths, job_id, self.end)),
                fix=f"plan the period again (`{self.cmd('plan')}`), then publish",
            )
        return report


def stage_context(job: JobConfig, end: datetime, paths: Paths,
                  spark: SparkSession | None = None) -> StageContext:
    """The context of `job`'s period ending `end`; Spark made when first used when not given."""
    if spark is None:
        from jobs.spark.session import lazy_spark

        spark = lazy_spark(paths)
    return StageContext(job, end, paths, spark)


@contextlib.contextmanager
def conflicts_refused(stage: str, job_id: str) -> Iterator[None]:
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


def run_stage(ctx: StageContext, stage: str, body: Callable[[StageContext], R], *,
              check: Callable[[StageContext], object] | None = None, lock: bool = True,
              tables: bool = True) -> R:
    """Run `body` (one stage's read → compute → commit, starting with its checks of the lake)
    inside the frame.

    In order: RECONF_HOME is usable; `check` (what needs no lake: the configuration, the
    budget) refuses bad input before anything is created; the lake's tables exist (`tables`);
    the job's writer lock is held for the whole body (`lock`: a dry run passes False); a Delta
    conflict from another writer becomes a `StageError` naming the stage.
    """
    return run_stage_committing(ctx, stage, check or (lambda c: None), lambda c, _: body(c),
                                lock=lock, tables=tables)


def run_stage_committing(ctx: StageContext, stage: str, gather: Callable[[StageContext], W],
                         commit: Callable[[StageContext, W], R], *, lock: bool = True,
                         tables: bool = True) -> R:
    """The frame for a stage whose check → read → compute needs no lock (collect: reading and
    aggregating the landing zone): `gather` runs first, then the tables are made and `commit`
    gets its result under the job's lock. Otherwise as `run_stage`."""
    check_home(ctx.paths)
    with conflicts_refused(stage, ctx.job_id):
        work = gather(ctx)
        if tables:
            ctx.lake.ensure_tables()
        with job_lock(ctx.paths, ctx.job_id, stage) if lock else contextlib.nullcontext():
            return commit(ctx, work)
