"""collect: one period of the landing zone -> keygroup_stats, comm_stats, node_stats (Delta).

Load is expressed in % of a reference node over the period: a key group that used
`cpu_ms` CPU-milliseconds in a period of `P` ms has load 100 * cpu_ms / P (a reference node
offers P CPU-ms per period; a node of capacity weight c offers c * P). Each table's rows for
(job, period) are replaced in one Delta commit, so a rerun leaves exactly one copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq

from jobs.errors import StageError
from jobs.lake import ensure_tables, period_predicate, replace_rows
from schemas.config import JobConfig, Paths
from schemas.landing import EDGES, KEYGROUPS, NODES, SUCCESS_MARKER, format_period_end, period_dir
from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS

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
                pq.read_metadata(file)
            except Exception as exc:  # pyarrow raises several types for a damaged file
                raise StageError(
                    f"corrupt Parquet file ({exc})",
                    where=str(file),
                    fix=f"remove the period's directory and land it again (`{land_cmd}`)",
                ) from exc
        files[kind] = found
    return files


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


def collect(
    job: JobConfig, period_end: datetime, *, paths: Paths, spark: SparkSession
) -> CollectResult:
    from pyspark.sql import functions as F

    files = check_landing(paths, job.job_id, period_end)
    period_start = period_end - job.spl
    period_ms = job.spl.total_seconds() * 1000.0
    in_window = (F.col("ts") >= F.lit(period_start)) & (F.col("ts") < F.lit(period_end))
    stamp = [
        F.lit(job.job_id).alias("job_id"),
        F.lit(period_end).cast("timestamp").alias("period_end"),
        F.lit(period_start).cast("timestamp").alias("period_start"),
    ]

    kg = _read(spark, KEYGROUPS, files[KEYGROUPS]).where(in_window)
    keygroups = kg.groupBy("keygroup").agg(
        F.max_by("operator", "ts").alias("operator"),
        F.max_by("node", "ts").alias("node"),
        _sum("tuples_in"),
        _sum("tuples_out"),
        _sum("cpu_ms"),
        F.max_by("state_bytes", "ts").alias("state_bytes"),
        F.count(F.lit(1)).alias("samples"),
    ).select(*stamp, "*").withColumn("load_pct", F.col("cpu_ms") * 100.0 / period_ms)

    edges = _read(spark, EDGES, files[EDGES]).where(in_window)
    comm = edges.groupBy("src_keygroup", "dst_keygroup").agg(
        _sum("tuples"), _sum("bytes")
    ).select(*stamp, "*").withColumn("tuples_per_s", F.col("tuples") * 1000.0 / period_ms)

    nd = _read(spark, NODES, files[NODES]).where(in_window)
    nodes = nd.groupBy("node").agg(
        F.max_by("capacity", "ts").alias("capacity"),
        _sum("cpu_ms"),
        F.count(F.lit(1)).alias("samples"),
    ).select(*stamp, "*").withColumn(
        "utilisation_pct", F.col("cpu_ms") * 100.0 / (F.col("capacity") * period_ms)
    )

    ensure_tables(spark, paths)
    where = period_predicate(job.job_id, period_end)
    rows, versions = {}, {}
    for table, df in ((KEYGROUP_STATS, keygroups), (COMM_STATS, comm), (NODE_STATS, nodes)):
        df = df.cache()
        rows[table.name] = df.count()
        versions[table.name] = replace_rows(df, paths, table, where)
        df.unpersist()
    return CollectResult(job.job_id, format_period_end(period_end), rows, versions)
