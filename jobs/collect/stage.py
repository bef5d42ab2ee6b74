"""collect: one period of the landing zone -> keygroup_stats, comm_stats, node_stats (Delta).

Load is expressed in % of a reference node over the period: a key group that used
`cpu_ms` CPU-milliseconds in a period of `P` ms has load 100 * cpu_ms / P (a reference node
offers P CPU-ms per period; a node of capacity weight c offers c * P). Each table's rows for
(job, period) are replaced in one Delta commit, so a rerun leaves exactly one copy.

Before anything is written, the period is checked whole: complete (`_SUCCESS`), every Parquet file
of the landing contract's types, the runtime report well-formed, and every sample sane (no
duplicate samples, no negative counters, at least one sample of key groups and nodes inside the
period's window: what the sums would hide). A period that fails changes nothing.

The three tables are three Delta commits, so a collect is made atomic by a marker: it first removes
the period's collect marker and validation report, writes node_stats, comm_stats and
keygroup_stats, and only then writes the marker (`reports/<job>/<period>/collect.json`, the commit
point). Validate refuses a period without the marker, so a collect interrupted anywhere reads as
"collect did not finish; rerun it", and the rerun completes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from jobs.collect.native import COUNTERS, SAMPLE_KEYS, collect_frames
from jobs.errors import StageError, job_lock
from jobs.facets.load_model import fit_stage
from jobs.facets.subscriptions import FACET_TABLES, check_facet_landing, facet_frames
from jobs.faults import failpoint
from jobs.lake.base import concurrently, ensure_tables, period_predicate, table_versions, write_rows
from jobs.lake.read import native_io
from jobs.markers import clear_period_markers, write_collect_marker
from schemas.config import JobConfig, Paths
from schemas.landing import (
    EDGES,
    KEYGROUPS,
    NODES,
    SCHEMAS,
    SUCCESS_MARKER,
    format_period_end,
    period_dir,
    read_runtime_report,
)
from schemas.tables import COMM_STATS, KEYGROUP_STATS, LOAD_MODEL, NODE_STATS, Table

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["CollectResult", "check_landing", "collect"]


@dataclass(frozen=True)
class CollectResult:
    job_id: str
    period_end: str
    rows: dict[str, int]  # table -> rows written for the period
    versions: dict[str, int]  # table -> Delta version after the write


def check_landing(paths: Paths, job_id: str, period_end: datetime) -> dict[str, list[Path]]:
    """The period's Parquet files by kind, after checking it is complete and readable.

    Runs before Spark touches anything, so a bad period changes no table.
    """
    where = period_dir(paths.landing, job_id, period_end)
    land_cmd = f"reconf land --job {job_id} --period-end {format_period_end(period_end)}"
    if not where.is_dir():
        raise StageError(
            f"no landing data for job {job_id!r}, period ending {format_period_end(period_end)}",
            where=str(where),
            fix=f"let the runtime land the period first (`{land_cmd}`), or pick a landed period",
        )
    if not (where / SUCCESS_MARKER).is_file():
        raise StageError(
            f"period {format_period_end(period_end)} of job {job_id!r} is incomplete "
            f"(no {SUCCESS_MARKER} marker): the runtime has not finished landing it",
            where=str(where),
            fix=f"wait for the runtime to write {SUCCESS_MARKER}, or land the period again (`{land_cmd}`)",
        )
    files: dict[str, list[Path]] = {}
    for kind in (KEYGROUPS, EDGES, NODES):
        found = sorted((where / kind).glob("*.parquet"))
        if kind != EDGES and not found:
            raise StageError(
                f"the period has no {kind} samples",
                where=str(where / kind),
                fix=f"land the period again (`{land_cmd}`)",
            )
        for file in found:
            try:
                schema = pq.read_schema(file)
            except Exception as exc:  # pyarrow raises several types for a damaged file
                raise StageError(
                    f"corrupt Parquet file ({exc})",
                    where=str(file),
                    fix=f"remove the period's directory and land it again (`{land_cmd}`)",
                ) from exc
            _check_columns(file, kind, schema, land_cmd)
        files[kind] = found
    try:
        read_runtime_report(where)
    except ValueError as exc:
        raise StageError(f"the runtime report is malformed: {exc}", where=str(where),
                         fix=f"land the period again (`{land_cmd}`)") from None
    return files


def _check_columns(file: Path, kind: str, schema: pa.Schema, land_cmd: str) -> None:
    """Every column of the landing contract, of exactly its type (Spark would otherwise fail deep
    inside the read, or silently cast)."""
    for want in SCHEMAS[kind]:
        index = schema.get_field_index(want.name)
        got = schema.field(index).type if index >= 0 else None
        if got != want.type:
            problem = "is missing" if got is None else f"has type {got}"
            raise StageError(
                f"{kind} column {want.name!r} {problem}; the landing contract says {want.type}",
                where=str(file),
                fix=f"fix the runtime's {kind} writer (schemas/landing.py, SCHEMAS) and land the "
                    f"period again (`{land_cmd}`)",
            )


def _read(spark: SparkSession, kind: str, files: list[Path]) -> DataFrame:
    from pyspark.sql.pandas.types import from_arrow_schema

    from schemas.landing import SCHEMAS

    schema = from_arrow_schema(SCHEMAS[kind])
    if not files:
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).parquet(*map(str, files))


def _sum(column: str) -> Column:
    """SUM that is null when any sample's value is null (Spark's SUM skips nulls).

    A sample with a missing value must surface as a null aggregate, which validate rejects and
    names, rather than as a silently smaller total (NaN already propagates through SUM).
    """
    from pyspark.sql import functions as F

    complete = F.count(F.col(column)) == F.count(F.lit(1))
    return F.when(complete, F.sum(column)).alias(column)


def _check_samples(
    df: DataFrame, kind: str, in_window: Column, where: Path, window: str, land_cmd: str,
    dynamic: bool = False,
) -> int:
    """Refuse samples that summing would hide: duplicates, negative counters, and a period with
    no samples in its window. (A NaN or a null survives the sums, and validate names it.) One
    aggregate per kind; an example row only on failure. Returns the rows the kind's table gets
    for the period: its distinct keys inside the window (what its `groupBy` makes). A dynamic
    job's period may have no key-group samples at all: every unit has left (DESIGN.md, "Units
    may come and go"); it is planned and published as an empty assignment."""
    from pyspark.sql import functions as F

    keys, counters = SAMPLE_KEYS[kind], COUNTERS[kind]
    bad = F.lit(False)
    for name in counters:
        value = F.col(name).cast("double")
        bad = bad | (value <= 0 if name == "capacity" else value < 0)
    key = F.struct(*keys, "ts")
    stats = df.agg(
        F.count(F.lit(1)).alias("total"),
        F.count(F.when(in_window, 1)).alias("inside"),
        F.count_distinct(F.when(in_window, key)).alias("distinct"),
        F.count(F.when(in_window & F.coalesce(bad, F.lit(False)), 1)).alias("bad"),
        # a struct of the keys is never null, so a null key counts as one group, as in groupBy
        F.count_distinct(F.when(in_window, F.struct(*keys))).alias("groups"),
    ).first()
    assert stats is not None
    fix = f"fix the runtime's {kind} samples and land the period again (`{land_cmd}`)"
    if kind != EDGES and stats["inside"] == 0 and not (
            dynamic and kind == KEYGROUPS and stats["total"] == 0):
        raise StageError(
            f"the period has no {kind} samples inside its window {window} "
            f"({stats['total']} sample(s) lie outside it)",
            where=str(where / kind), fix=fix)
    if stats["bad"]:
        rule = " or ".join(f"{c} {'> 0' if c == 'capacity' else '>= 0'}" for c in counters)
        example = df.where(in_window & bad).first()
        raise StageError(
            f"{stats['bad']} {kind} sample(s) break the rule {rule}, e.g. "
            f"{example.asDict() if example else '?'}",
            where=str(where / kind), fix=fix)
    duplicates = stats["inside"] - stats["distinct"]
    if duplicates:
        example = (df.where(in_window).groupBy(*keys, "ts").count().where(F.col("count") > 1)
                   .first())
        raise StageError(
            f"{duplicates} {kind} sample(s) repeat another sample's ({', '.join(keys)}, ts), e.g. "
            f"{example.asDict() if example else '?'}; summing them would inflate the load",
            where=str(where / kind), fix=fix)
    return int(stats["groups"])


def collect(
    job: JobConfig, period_end: datetime, *, paths: Paths, spark: SparkSession
) -> CollectResult:
    files = check_landing(paths, job.job_id, period_end)
    facet_files = check_facet_landing(paths, job, period_end)
    landed = period_dir(paths.landing, job.job_id, period_end)
    if native_io():  # pyarrow in this process (jobs/collect/native.py), the same rows
        frames = collect_frames(job, period_end, files, facet_files, landed)
        groups = frames.groups
        stats: dict[Table, Any] = {t: frames.tables[t.name]
                                   for t in (KEYGROUP_STATS, COMM_STATS, NODE_STATS)}
        facets: list[tuple[Table, Any]] = [(t, frames.tables[t.name]) for t in FACET_TABLES.values()
                                           if t.name in frames.tables]
    else:
        groups, stats, facets = _spark_frames(job, period_end, files, facet_files, landed, spark)

    ensure_tables(spark, paths)
    where = period_predicate(job.job_id, period_end)
    rows = {KEYGROUP_STATS.name: groups[KEYGROUPS], COMM_STATS.name: groups[EDGES],
            NODE_STATS.name: groups[NODES]}
    with job_lock(paths, job.job_id, "collect"):
        clear_period_markers(paths, job.job_id, period_end)
        # keygroup_stats last: a reader that finds no key groups says "run collect". The others
        # in one round of commits; facet tables (a dynamic job's, declared streams) are counted
        # as they are written.
        def write(table: Table, df: Any, counted: bool) -> None:
            if isinstance(df, pa.Table):  # by pyarrow: counted already
                if counted:
                    rows[table.name] = df.num_rows
                write_rows(df, paths, table, where)
                return
            if counted:
                df = df.cache()
                rows[table.name] = df.count()
            write_rows(df, paths, table, where)
            if counted:
                df.unpersist()

        first = [(table, df, True) for table, df in facets]
        first += [(NODE_STATS, stats[NODE_STATS], False), (COMM_STATS, stats[COMM_STATS], False)]
        concurrently(*(lambda w=w: write(*w) for w in first))
        for table, _, _ in first:
            failpoint(f"collect.{table.name}")
        write(KEYGROUP_STATS, stats[KEYGROUP_STATS], False)
        failpoint(f"collect.{KEYGROUP_STATS.name}")
        # the versions after the commits, asked at once
        versions = table_versions(spark, paths, (*(t.name for t, _ in facets), NODE_STATS.name,
                                                 COMM_STATS.name, KEYGROUP_STATS.name))
        # a job declaring input streams: its load model, fitted on what was just written
        for table, count, version in fit_stage(spark, paths, job, period_end):
            rows[table.name], versions[table.name] = count, version
        write_collect_marker(paths, job.job_id, period_end, versions, rows,
                             read_runtime_report(landed))
        failpoint("collect.marker")
    ordered = {t.name: rows[t.name] for t in (KEYGROUP_STATS, COMM_STATS, NODE_STATS)}
    ordered.update({t.name: rows[t.name] for t, _ in facets})
    ordered.update({LOAD_MODEL.name: rows[LOAD_MODEL.name]} if LOAD_MODEL.name in rows else {})
    return CollectResult(job.job_id, format_period_end(period_end), ordered, versions)


def _spark_frames(
    job: JobConfig, period_end: datetime, files: dict[str, list[Path]],
    facet_files: dict[str, list[Path]], landed: Path, spark: SparkSession,
) -> tuple[dict[str, int], dict[Table, DataFrame], list[tuple[Table, DataFrame]]]:
    """The period's samples checked and aggregated by Spark (`RECONF_LAKE_IO=spark`): the rows
    each kind's table gets, the three tables' frames, the facet tables' frames."""
    from pyspark.sql import functions as F

    spark.version  # noqa: B018  # the session made now: the column functions below need it
    period_start = period_end - job.spl
    period_ms = job.spl.total_seconds() * 1000.0
    in_window = (F.col("ts") >= F.lit(period_start)) & (F.col("ts") < F.lit(period_end))
    stamp = [
        F.lit(job.job_id).alias("job_id"),
        F.lit(period_end).cast("timestamp").alias("period_end"),
        F.lit(period_start).cast("timestamp").alias("period_start"),
    ]
    window = f"[{format_period_end(period_start)}, {format_period_end(period_end)})"
    land_cmd = f"reconf land --job {job.job_id} --period-end {format_period_end(period_end)}"
    raw = {kind: _read(spark, kind, files[kind]) for kind in (KEYGROUPS, EDGES, NODES)}
    # the three checks at once (jobs/lake/base.py `concurrently`); the first failing kind's error wins
    groups = dict(zip(raw, concurrently(*(
        lambda kind=kind, df=df: _check_samples(df, kind, in_window, landed, window, land_cmd,
                                                job.dynamic)
        for kind, df in raw.items())), strict=True))

    kg = raw[KEYGROUPS].where(in_window)
    keygroups = kg.groupBy("keygroup").agg(
        F.max_by("operator", "ts").alias("operator"),
        F.max_by("node", "ts").alias("node"),
        _sum("tuples_in"),
        _sum("tuples_out"),
        _sum("cpu_ms"),
        F.max_by("state_bytes", "ts").alias("state_bytes"),
        F.count(F.lit(1)).alias("samples"),
    ).select(*stamp, "*").withColumn("load_pct", F.col("cpu_ms") * 100.0 / period_ms)

    edges = raw[EDGES].where(in_window)
    comm = edges.groupBy("src_keygroup", "dst_keygroup").agg(
        _sum("tuples"), _sum("bytes")
    ).select(*stamp, "*").withColumn("tuples_per_s", F.col("tuples") * 1000.0 / period_ms)

    nd = raw[NODES].where(in_window)
    nodes = nd.groupBy("node").agg(
        F.max_by("capacity", "ts").alias("capacity"),
        _sum("cpu_ms"),
        F.count(F.lit(1)).alias("samples"),
    ).select(*stamp, "*").withColumn(
        "utilisation_pct", F.col("cpu_ms") * 100.0 / (F.col("capacity") * period_ms)
    )
    facets = facet_frames(spark, facet_files, in_window, stamp)
    return groups, {KEYGROUP_STATS: keygroups, COMM_STATS: comm, NODE_STATS: nodes}, facets
