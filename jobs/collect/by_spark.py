"""collect's aggregation by the stage's Spark session (`RECONF_LAKE_IO=spark`: a driver on a
cluster, whose landing zone only Spark can read).

It implements the contract of jobs/collect/aggregate.py row for row and refusal for refusal with
the pyarrow engine (jobs/collect/native.py). Spark reads, checks and aggregates the samples on
the cluster (the checks are one aggregate per sample kind; only an example row of a refusal
reaches the driver). `spark_aggregates` leaves the three aggregate tables as Spark DataFrames,
which the stage writes to Delta from Spark (`replace_from_spark`: the executors write the
files, the driver commits), so no sample and no aggregate row passes through the driver: a
period of 10^8 samples or more (docs/benchmarks.md, "collect on Spark at 10^8 samples") needs no
more driver memory than a small one. `spark_frames` is the contract's Arrow form (the same
DataFrames brought back), for the tests that hold both engines to the same rows.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.collect.aggregate import COUNTERS, SAMPLE_KEYS, CollectedFrames, Period
from jobs.facets.subscriptions import facet_frames
from jobs.lake import concurrently
from jobs.lake.write import conform
from schemas.landing import EDGES, KEYGROUPS, NODES, SCHEMAS
from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS, Table

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["replace_from_spark", "spark_aggregates", "spark_frames"]


def _read(spark: SparkSession, kind: str, files: list[Path]) -> DataFrame:
    from pyspark.sql.pandas.types import from_arrow_schema

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


def _check_samples(df: DataFrame, kind: str, in_window: Column, period: Period) -> int:
    """Refuse samples that summing would hide (jobs/collect/aggregate.py). One aggregate per
    kind; an example row only on failure. Returns the rows the kind's table gets for the period:
    its distinct keys inside the window (what its `groupBy` makes)."""
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
    if stats["inside"] == 0 and not period.may_be_empty(kind, stats["total"]):
        raise period.no_samples(kind, stats["total"])
    if stats["bad"]:
        example = df.where(in_window & bad).first()
        raise period.broken(kind, stats["bad"], example.asDict() if example else "?")
    duplicates = stats["inside"] - stats["distinct"]
    if duplicates:
        example = (df.where(in_window).groupBy(*keys, "ts").count().where(F.col("count") > 1)
                   .first())
        raise period.repeated(kind, duplicates, example.asDict() if example else "?")
    return int(stats["groups"])


def spark_frames(spark: SparkSession, job: Any, period_end: datetime,
                 files: dict[str, list[Path]], facet_files: dict[str, list[Path]], landed: Path
                 ) -> CollectedFrames:
    """The period's samples checked and aggregated by Spark: the contract's `CollectedFrames`,
    every table as Arrow (the aggregates brought to the driver: for tests and small periods)."""
    got = spark_aggregates(spark, job, period_end, files, facet_files, landed)
    big = list(got.on_cluster.items())
    arrows = concurrently(*(lambda name=name, df=df: conform(df.toArrow(), _TABLES[name])
                            for name, df in big))
    tables = {**got.tables, **{name: a for (name, _), a in zip(big, arrows, strict=True)}}
    return CollectedFrames(tables, got.groups)


_TABLES = {t.name: t for t in (KEYGROUP_STATS, COMM_STATS, NODE_STATS)}


def replace_from_spark(df: DataFrame, table: Table, location: str, where: str) -> None:
    """Replace the rows of the Delta table at `location` that `where` matches with `df`'s, in one
    commit written by Spark (Delta's `replaceWhere`): the executors write the Parquet files, the
    driver only commits the log. The columns are cast to the table's types, in its order (what
    jobs/lake/write.py `conform` does for an Arrow table)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = from_arrow_schema(table.arrow_schema())
    missing = [f.name for f in schema.fields if f.name not in df.columns]
    if missing:
        raise ValueError(f"{table.name}: the aggregate lacks the columns {missing}")
    (df.select(*(F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields))
     .write.format("delta").mode("overwrite").option("replaceWhere", where).save(location))


def spark_aggregates(spark: SparkSession, job: Any, period_end: datetime,
                     files: dict[str, list[Path]], facet_files: dict[str, list[Path]],
                     landed: Path) -> CollectedFrames:
    """The period's samples checked by Spark, and its aggregates left on the cluster:
    `CollectedFrames` whose `on_cluster` holds keygroup_stats, comm_stats and node_stats as
    Spark DataFrames (nothing computed yet but the checks), `tables` the facet tables (the
    period's snapshot rows, few) as Arrow."""
    from pyspark.sql import functions as F

    spark.version  # noqa: B018  # the session made now: the column functions below need it
    period = Period.of(job, period_end, landed)
    period_ms = period.period_ms
    in_window = (F.col("ts") >= F.lit(period.start)) & (F.col("ts") < F.lit(period.end))
    stamp = [
        F.lit(period.job_id).alias("job_id"),
        F.lit(period.end).cast("timestamp").alias("period_end"),
        F.lit(period.start).cast("timestamp").alias("period_start"),
    ]
    raw = {kind: _read(spark, kind, files.get(kind, [])) for kind in (KEYGROUPS, EDGES, NODES)}
    # the three checks at once; the first failing kind's error wins
    groups = dict(zip(raw, concurrently(*(
        lambda kind=kind, df=df: _check_samples(df, kind, in_window, period)
        for kind, df in raw.items())), strict=True))

    keygroups = raw[KEYGROUPS].where(in_window).groupBy("keygroup").agg(
        F.max_by("operator", "ts").alias("operator"),
        F.max_by("node", "ts").alias("node"),
        _sum("tuples_in"),
        _sum("tuples_out"),
        _sum("cpu_ms"),
        F.max_by("state_bytes", "ts").alias("state_bytes"),
        F.count(F.lit(1)).alias("samples"),
    ).select(*stamp, "*").withColumn("load_pct", F.col("cpu_ms") * 100.0 / period_ms)
    comm = raw[EDGES].where(in_window).groupBy("src_keygroup", "dst_keygroup").agg(
        _sum("tuples"), _sum("bytes")
    ).select(*stamp, "*").withColumn("tuples_per_s", F.col("tuples") * 1000.0 / period_ms)
    nodes = raw[NODES].where(in_window).groupBy("node").agg(
        F.max_by("capacity", "ts").alias("capacity"),
        _sum("cpu_ms"),
        F.count(F.lit(1)).alias("samples"),
    ).select(*stamp, "*").withColumn(
        "utilisation_pct", F.col("cpu_ms") * 100.0 / (F.col("capacity") * period_ms)
    )
    facets = facet_frames(spark, facet_files, in_window, stamp)
    arrows = concurrently(*(lambda t=t, df=df: conform(df.toArrow(), t) for t, df in facets))
    on_cluster = {KEYGROUP_STATS.name: keygroups, COMM_STATS.name: comm, NODE_STATS.name: nodes}
    return CollectedFrames({t.name: a for (t, _), a in zip(facets, arrows, strict=True)}, groups,
                           on_cluster)
