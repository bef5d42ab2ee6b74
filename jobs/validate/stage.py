"""validate: one collected period, checked by the GE suites of schemas/expectations/.

The job's key groups are those of the assignment the runtime ran (its report; without one, the
newest published assignment): every one of them must be reported exactly once; before anything
is published, those of the previous collected period; for a job's very first period, the reported
ones (then only uniqueness can be checked). A dynamic job's units come and go, so its key groups
are the reported ones; its facet tables (source_stats, subscriptions) are checked by their own
suites (jobs/facets/subscriptions.py `validate_facets_of`). Known nodes are the nodes the runtime says it owns
(without a report, the nodes it sent samples for), so a node the runtime does not have is refused
here and never reaches a plan. The report is written to
`reports/<job>/<period_end>/validation.json` whatever the verdict, naming the collect it checked;
plan and publish accept only a passing report of the current collect (jobs/markers.py). A failure
raises `StageError`, which stops the cycle before planning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa

from jobs.context import StageContext, run_stage, stage_context
from jobs.errors import StageError
from jobs.facets.base import Checked
from jobs.facets.registry import validate_facets
from jobs.lake import Start, concurrently
from jobs.markers import CollectMarker, collect_marker_path, read_report, report_path, write_report
from jobs.validate.suites import ValidationReport, prepare, validate_stats
from schemas.config import JobConfig, Paths
from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS, Table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ValidateResult", "read_report", "report_path", "validate", "validate_period"]


@dataclass(frozen=True)
class ValidateResult:
    report: ValidationReport
    report_path: Path
    expected_from: str  # where the job's key-group set came from
    job_id: str = ""

    def summary(self) -> str:
        return (f"validate {self.job_id}: passed (key groups checked against "
                f"{self.expected_from}); report {self.report_path}")


def _expected_keygroups(ctx: StageContext, reported: set[str], start: Start,
                        reported_by_runtime: bool) -> tuple[set[str], str]:
    if ctx.job.dynamic:
        return reported, "this period (a dynamic job: units arrive and leave between periods)"
    if start.version is not None:
        ran = ", which the runtime ran" if reported_by_runtime else ""
        return set(start.assignment), f"{'' if ran else 'published '}assignment v{start.version}{ran}"
    previous = ctx.lake.latest_period(KEYGROUP_STATS, ctx.job_id, ctx.end)
    if previous is not None:
        rows = ctx.lake.period_rows(KEYGROUP_STATS, ctx.job_id, previous.replace(tzinfo=UTC),
                                    ("keygroup",))
        return {r["keygroup"] for r in rows}, f"previous period {previous.isoformat()}"
    return reported, "this period (first period of the job)"


def _read_period(ctx: StageContext) -> tuple[list[pd.DataFrame | pa.Table], Start | StageError]:
    """The period's three tables and where its plan starts, read at once (jobs/lake
    `concurrently`), while GE is imported; a refused starting point comes back as its error,
    raised after the checks of the tables (their messages come first, as when the reads ran one
    by one). `comm_stats` (O(edges) rows) stays Arrow: GE judges it by its witness rows
    (jobs/validate/witness.py) and reads it whole only to name the rows of a refusal."""
    lake = ctx.lake
    runtime = None if ctx.marker is None else ctx.marker.runtime

    def start() -> Start | StageError:
        try:
            return lake.starting_point(ctx.job_id, ctx.end, runtime)
        except StageError as exc:
            return exc

    def frame(table: Table) -> Callable[[], pd.DataFrame]:
        return lambda: lake.period_frame(table, ctx.job_id, ctx.end)

    *frames, begin, _ = concurrently(
        frame(KEYGROUP_STATS), lambda: lake.period_arrow(COMM_STATS, ctx.job_id, ctx.end),
        frame(NODE_STATS), start, prepare)
    return frames, begin


def validate_period(
    job: JobConfig, period_end: datetime, *, paths: Paths, spark: SparkSession
) -> ValidateResult:
    """`validate` for a caller holding a job and a session (the tests, the bench)."""
    return validate(stage_context(job, period_end, paths, spark))


def validate(ctx: StageContext) -> ValidateResult:
    """Validate one collected period inside the stage frame (jobs/context.py)."""
    return run_stage(ctx, "validate", _validate)


def _check_collected(ctx: StageContext) -> CollectMarker:
    if ctx.marker is None:
        raise StageError(
            f"no completed collect for job {ctx.job_id!r}, period ending {ctx.stamp} (never "
            "collected, or its collect was interrupted)",
            where=str(collect_marker_path(ctx.paths, ctx.job_id, ctx.end)),
            fix=f"run `{ctx.cmd('collect')}` first",
        )
    return ctx.marker


def _validate(ctx: StageContext) -> ValidateResult:
    job, stamp, paths = ctx.job, ctx.stamp, ctx.paths
    marker = _check_collected(ctx)  # check
    runtime = marker.runtime
    # read: one round of queries, each table of the period once, and the plan's starting point
    (keygroups, edges, nodes), start = _read_period(ctx)
    everyone_left = job.dynamic and marker.rows_of(KEYGROUP_STATS.name) == 0
    if keygroups.empty and not everyone_left:  # a dynamic job's units may all have left
        raise StageError(
            f"no statistics collected for job {job.job_id!r}, period ending {stamp}",
            where=paths.table(KEYGROUP_STATS.name),
            fix=f"run `{ctx.cmd('collect')}` first",
        )
    if nodes.empty:
        raise StageError(
            f"the runtime reported no nodes for job {job.job_id!r}, period ending {stamp}",
            where=paths.table(NODE_STATS.name),
            fix="fix the runtime's node metrics and land the period again",
        )
    if isinstance(start, StageError):
        raise start
    running = set(keygroups["keygroup"].dropna())
    expected, expected_from = _expected_keygroups(ctx, running, start, runtime is not None)
    known_nodes = set(runtime.nodes) if runtime is not None else set(nodes["node"].dropna())
    # compute: the stats' suites, then each facet's (jobs/facets/registry.py)
    report = validate_stats(keygroups, edges, nodes,
                            expected_keygroups=expected, known_nodes=known_nodes)
    report = validate_facets(ctx, Checked(frozenset(running), frozenset(known_nodes)), report)
    document = {"job_id": job.job_id, "period_end": stamp, "expected_keygroups_from": expected_from,
                "known_nodes_from": "the runtime's report" if runtime is not None
                else "the nodes that sent samples",
                "collect_id": marker.collect_id, **report.to_dict()}
    path = write_report(paths, job.job_id, ctx.end, document)  # commit, whatever the verdict
    if not report.success:
        raise StageError(
            report.summary(),
            where=f"job {job.job_id!r}, period ending {stamp} (report: {path})",
            fix="nothing was planned or published and the runtime keeps its assignment; "
            "fix the runtime's metrics and land the period again",
        )
    return ValidateResult(report, path, expected_from, job.job_id)
