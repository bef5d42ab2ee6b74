"""collect, the facet part: a period's subscriptions and source rates -> Delta (DESIGN.md, "Facets").

A job whose units come and go (``units = "dynamic"``, a query platform) lands, beside its key-group,
edge and node samples, a snapshot of the period's end (schemas/landing.py `FACET_SCHEMAS`):
``subscriptions/`` (unit, the node it ran on, a source it reads) and ``sources/`` (a source's rate in
tuples and bytes per second). Collect copies the snapshot's rows inside the period's window into
``subscriptions`` and ``source_stats`` as they are, partitioned by ``job_id`` and replaced per period
like the other tables. Nothing is summed or deduplicated: a query listed twice, a subscription to an
unknown source or a negative rate reaches validate, whose suites name the offending rows
(schemas/expectations/subscriptions.json, source_stats.json), and planning stops there.

A fixed job may land the facets too (they are collected when present); a dynamic job must.
A job declaring its input streams (``[jobs.<id>.load_model]``) must land ``streams/`` (each
stream's rate over the period), copied into ``stream_stats`` the same way; collect then fits the
load model on it (jobs/facets/load_model.py). A wide-area job may land ``links/`` (each link's measured
latency and bandwidth), copied into ``network_links`` the same way (jobs/facets/links.py).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from jobs.errors import StageError
from jobs.facets.base import Checked
from jobs.facets.links import check_links_landing
from jobs.validate.suites import ValidationReport
from schemas.config import JobConfig, Paths
from schemas.landing import (
    COMM_TOTALS,
    FACET_GROUPS,
    FACET_SCHEMAS,
    LINKS,
    SOURCES,
    STREAMS,
    SUBSCRIPTIONS,
    format_period_end,
    period_dir,
)
from schemas.tables import COMM_TOTALS as COMM_TOTALS_TABLE
from schemas.tables import NETWORK_LINKS, SOURCE_STATS, STREAM_STATS, Table
from schemas.tables import SUBSCRIPTIONS as SUBSCRIPTIONS_TABLE

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from jobs.context import StageContext

__all__ = ["FACET_TABLES", "check_facet_landing", "facet_frames", "read_facet_rows",
           "validate_facets_of"]

#: landing dataset -> its Delta table, in write order (both before keygroup_stats)
FACET_TABLES: dict[str, Table] = {SOURCES: SOURCE_STATS, SUBSCRIPTIONS: SUBSCRIPTIONS_TABLE,
                                  STREAMS: STREAM_STATS, LINKS: NETWORK_LINKS,
                                  COMM_TOTALS: COMM_TOTALS_TABLE}


def check_facet_landing(paths: Paths, job: JobConfig, period_end: datetime
                        ) -> dict[str, list[Path]]:
    """The period's facet Parquet files by kind ({} when a fixed job landed none), after checking
    each has exactly the contract's columns; a dynamic job without them is refused. Runs before
    Spark touches anything, so a bad period changes no table."""
    where = period_dir(paths.landing, job.job_id, period_end)
    land_cmd = f"reconf land --job {job.job_id} --period-end {format_period_end(period_end)}"
    present = {kind: (where / kind).is_dir() for kind in FACET_SCHEMAS}
    declared = {"dynamic": job.dynamic, "load_model": job.load_model is not None,
                "network": False,  # measured links are optional: the topology file holds
                "comm": False}  # pair totals come with a top-k landing only
    files: dict[str, list[Path]] = {}
    for group, kinds in FACET_GROUPS.items():
        if not any(present[k] for k in kinds) and not declared[group]:
            continue
        _check_group(where, kinds, present, declared[group], group, land_cmd)
        files.update(_check_files(where, kinds, land_cmd))
    check_links_landing(paths, job, period_end, files)
    return files


def _check_group(where: Path, kinds: tuple[str, ...], present: dict[str, bool], declared: bool,
                 group: str, land_cmd: str) -> None:
    """A group's datasets land together; a job declaring the group must land it."""
    for kind in kinds:
        if present[kind]:
            continue
        if group == "load_model":
            raise StageError(
                f"the job declares input streams ([jobs.<id>.load_model]) but the period has "
                f"no {kind} dataset", where=str(where / kind),
                fix=f"the runtime of a job with declared streams lands their rates every period "
                    f"(schemas/landing.py FACET_SCHEMAS[{kind!r}]); land the period again "
                    f"(`{land_cmd}`)")
        raise StageError(
            f"job declares units = \"dynamic\" but the period has no {kind} "
            "dataset" if declared else f"the period has a {'/'.join(k for k in kinds if present[k])} dataset but no {kind}",
            where=str(where / kind),
            fix=f"the runtime of a dynamic job lands {', '.join(kinds)} every period "
                f"(schemas/landing.py FACET_SCHEMAS); land the period again (`{land_cmd}`)",
        )


def _check_files(where: Path, kinds: tuple[str, ...], land_cmd: str) -> dict[str, list[Path]]:
    """Each kind's Parquet files, after checking each has exactly the contract's columns."""
    files: dict[str, list[Path]] = {}
    for kind in kinds:
        schema = FACET_SCHEMAS[kind]
        found = sorted((where / kind).glob("*.parquet"))
        for file in found:
            try:
                got = pq.read_schema(file)
            except Exception as exc:  # pyarrow raises several types for a damaged file
                raise StageError(f"corrupt Parquet file ({exc})", where=str(file),
                                 fix=f"land the period again (`{land_cmd}`)") from exc
            for want in schema:
                index = got.get_field_index(want.name)
                have = got.field(index).type if index >= 0 else None
                if have != want.type:
                    problem = "is missing" if have is None else f"has type {have}"
                    raise StageError(
                        f"{kind} column {want.name!r} {problem}; the landing contract says "
                        f"{want.type}", where=str(file),
                        fix=f"fix the runtime's {kind} writer (schemas/landing.py FACET_SCHEMAS) "
                            f"and land the period again (`{land_cmd}`)")
        files[kind] = found
    return files


def facet_frames(spark: SparkSession, files: dict[str, list[Path]], in_window: Column,
                 stamp: list[Column]) -> list[tuple[Table, DataFrame]]:
    """(table, rows) of each landed facet: the snapshot rows inside the window, stamped with the
    job and period, not aggregated (validate judges them row by row)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    out = []
    for kind, table in FACET_TABLES.items():
        if kind not in files:
            continue
        schema = from_arrow_schema(FACET_SCHEMAS[kind])
        df = (spark.read.schema(schema).parquet(*map(str, files[kind])) if files[kind]
              else spark.createDataFrame([], schema))
        cols = [c for c in table.columns if c not in ("job_id", "period_end", "period_start")]
        out.append((table, df.where(in_window).select(*stamp, *cols)))
    return out


def _wrote_sources(ctx: StageContext) -> bool:
    """A dynamic job's period always has the facet; another job's when its collect wrote it."""
    return ctx.job.dynamic or (ctx.marker is not None
                               and ctx.marker.wrote(SUBSCRIPTIONS_TABLE.name))


def validate_facets_of(ctx: StageContext, checked: Checked, report: ValidationReport
                       ) -> ValidationReport:
    """`report` with the facet tables' verdict added, for a period whose collect wrote them (a
    dynamic job's always): jobs/validate/suites.py `validate_facets`."""
    from jobs.lake import concurrently
    from jobs.validate.suites import validate_facets  # GE: imported when a period is validated

    if not _wrote_sources(ctx):
        return report
    lake, job_id, end = ctx.lake, ctx.job_id, ctx.end
    sources, subs = concurrently(lambda: lake.period_frame(SOURCE_STATS, job_id, end),
                                 lambda: lake.period_frame(SUBSCRIPTIONS_TABLE, job_id, end))
    facets = validate_facets(sources, subs, running_units=set(checked.running),
                             known_nodes=set(checked.known_nodes))
    return ValidationReport(report.success and facets.success, report.failures + facets.failures)


def read_facet_rows(ctx: StageContext) -> tuple[pa.Table, pa.Table] | None:
    """The period's source_stats and subscriptions as Arrow tables (columns, no row object:
    jobs/facets/dynamic.py `with_sources` groups them), for a period whose collect wrote them
    (a dynamic job's always); None otherwise, without reading a table."""
    from jobs.lake import concurrently

    if not _wrote_sources(ctx):
        return None
    lake, job_id, end = ctx.lake, ctx.job_id, ctx.end
    sources, subs = concurrently(
        lambda: lake.period_arrow(SOURCE_STATS, job_id, end,
                                  ["source", "tuples_per_s", "bytes_per_s"]),
        lambda: lake.period_arrow(SUBSCRIPTIONS_TABLE, job_id, end, ["keygroup", "source"]))
    return sources, subs
