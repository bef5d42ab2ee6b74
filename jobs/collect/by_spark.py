"""collect's aggregation by the stage's Spark session (`RECONF_LAKE_IO=spark`: a driver on a
cluster, whose landing zone only Spark can read).

It implements the contract of jobs/collect/aggregate.py row for row and refusal for refusal with
the pyarrow engine (jobs/collect/native.py). Spark reads, checks and aggregates the samples on
the cluster: one shuffle per sample kind computes its aggregates and, per key, its repeated
and broken samples; the aggregates are cached, and one action over the three gives the checks'
totals (only a refusal asks for more: an example row, which alone reaches the driver). So a
period costs that one action and the three writes, which read the cached aggregates
(docs/benchmarks.md, "Spark work per stage"). `spark_aggregates` leaves the three aggregate
tables as Spark DataFrames, which the stage writes to Delta from Spark (`replace_from_spark`: the executors write the
files, the driver commits), so no sample and no aggregate row passes through the driver: a
period of 10^8 samples or more (docs/benchmarks.md, "collect on Spark at 10^8 samples") needs no
more driver memory than a small one. `spark_frames` is the contract's Arrow form (the same
DataFrames brought back), for the tests that hold both engines to the same rows.
"""

from __future__ import annotations

from collections.abc import Iterable
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

__all__ = ["release", "replace_from_spark", "spark_aggregates", "spark_frames"]


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


_DUPS, _BAD = "_repeated", "_broken"  # the checks' columns, beside each group's aggregates


def _checked(samples: DataFrame, kind: str, *aggregates: Column) -> DataFrame:
    """The window's `samples` grouped by the kind's key: `aggregates`, the sample count `_n`
    and, per group, its repeated samples (samples less distinct ts: a sample inside the window
    has a ts) and its samples with a broken counter. The checks ride the aggregation's one
    shuffle instead of a pass (and a second shuffle, for the repeats) of their own; the
    distinct ts are a set per key (a key's samples of one period: a few dozen), since a
    DISTINCT aggregate would add a shuffle of its own."""
    from pyspark.sql import functions as F

    broken = F.coalesce(_broken(COUNTERS[kind]), F.lit(False))
    return (samples.groupBy(*SAMPLE_KEYS[kind])
            .agg(*aggregates, F.count(F.lit(1)).alias("_n"),
                 F.size(F.collect_set("ts")).alias("_ts"), F.count(F.when(broken, 1)).alias(_BAD))
            .withColumn(_DUPS, F.col("_n") - F.col("_ts")).drop("_ts"))


def _broken(counters: tuple[str, ...]) -> Column:
    from pyspark.sql import functions as F

    bad = F.lit(False)
    for name in counters:
        value = F.col(name).cast("double")
        bad = bad | (value <= 0 if name == "capacity" else value < 0)
    return bad


def _stats(checked: dict[str, DataFrame]) -> DataFrame:
    """Per kind, of its checked aggregate: samples inside, repeated, broken, groups; the three
    kinds' groups in one union, so their totals take one shuffle, not one each."""
    from functools import reduce

    from pyspark.sql import functions as F

    union = reduce(lambda a, b: a.unionByName(b), (
        df.select(F.lit(kind).alias("kind"), "_n", _DUPS, _BAD) for kind, df in checked.items()))
    return union.groupBy("kind").agg(F.sum("_n").alias("inside"),
                                     F.sum(_DUPS).alias("repeated"), F.sum(_BAD).alias("bad"),
                                     F.count(F.lit(1)).alias("groups"))


def _check_all(raw: dict[str, DataFrame], checked: dict[str, DataFrame], in_window: Column,
               period: Period) -> dict[str, int]:
    """Refuse samples that summing would hide (jobs/collect/aggregate.py), every kind at once:
    one Spark action over the kinds' cached aggregates (which the writes then read), the first
    failing kind's refusal winning. Only a refusal asks for more: its count of samples outside
    the window, or an example row. Returns the rows each kind's table gets."""
    from pyspark.sql import functions as F

    stats = {row["kind"]: row for row in _stats(checked).collect()}
    for kind, df in raw.items():
        got = stats.get(kind)  # no group: no sample inside the window
        inside, bad, repeated = (int(got[c] or 0) if got else 0
                                 for c in ("inside", "bad", "repeated"))
        # the samples outside the window are counted only where the rule needs them (edges may
        # always be empty)
        if inside == 0 and not period.may_be_empty(kind, 1) and not period.may_be_empty(
                kind, total := df.count()):
            raise period.no_samples(kind, total)
        if bad:
            example = df.where(in_window & _broken(COUNTERS[kind])).first()
            raise period.broken(kind, bad, example.asDict() if example else "?")
        if repeated:
            keys = SAMPLE_KEYS[kind]
            example = (df.where(in_window).groupBy(*keys, "ts").count()
                       .where(F.col("count") > 1).first())
            raise period.repeated(kind, repeated, example.asDict() if example else "?")
    return {kind: int(stats[kind]["groups"]) if kind in stats else 0 for kind in raw}


def spark_frames(spark: SparkSession, job: Any, period_end: datetime,
                 files: dict[str, list[Path]], facet_files: dict[str, list[Path]], landed: Path
                 ) -> CollectedFrames:
    """The period's samples checked and aggregated by Spark: the contract's `CollectedFrames`,
    every table as Arrow (the aggregates brought to the driver: for tests and small periods)."""
    got = spark_aggregates(spark, job, period_end, files, facet_files, landed)
    big = list(got.on_cluster.items())
    try:
        arrows = concurrently(*(lambda name=name, df=df: conform(df.toArrow(), _TABLES[name])
                                for name, df in big))
    finally:
        release(got.on_cluster.values())
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
    Spark DataFrames (each computed once, by the checks' one action, and cached for the writes:
    the caller `release`s them once written), `tables` the facet tables (the period's snapshot
    rows, few) as Arrow."""
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
    inside = {kind: df.where(in_window) for kind, df in raw.items()}

    keygroups = _checked(
        inside[KEYGROUPS], KEYGROUPS,
        F.max_by("operator", "ts").alias("operator"),
        F.max_by("node", "ts").alias("node"),
        _sum("tuples_in"),
        _sum("tuples_out"),
        _sum("cpu_ms"),
        F.max_by("state_bytes", "ts").alias("state_bytes"),
    ).withColumn("samples", F.col("_n")).select(*stamp, "*").withColumn(
        "load_pct", F.col("cpu_ms") * 100.0 / period_ms)
    comm = _checked(
        inside[EDGES], EDGES, _sum("tuples"), _sum("bytes")
    ).select(*stamp, "*").withColumn("tuples_per_s", F.col("tuples") * 1000.0 / period_ms)
    nodes = _checked(
        inside[NODES], NODES,
        F.max_by("capacity", "ts").alias("capacity"),
        _sum("cpu_ms"),
    ).withColumn("samples", F.col("_n")).select(*stamp, "*").withColumn(
        "utilisation_pct", F.col("cpu_ms") * 100.0 / (F.col("capacity") * period_ms)
    )
    # computed once, by the checks' action; the writes read the cached rows (`release` drops them)
    checked = {KEYGROUPS: keygroups.cache(), EDGES: comm.cache(), NODES: nodes.cache()}
    try:
        groups = _check_all(raw, checked, in_window, period)
    except BaseException:
        release(checked.values())
        raise
    facets = facet_frames(spark, facet_files, in_window, stamp)
    arrows = concurrently(*(lambda t=t, df=df: conform(df.toArrow(), t) for t, df in facets))
    on_cluster = {KEYGROUP_STATS.name: checked[KEYGROUPS], COMM_STATS.name: checked[EDGES],
                  NODE_STATS.name: checked[NODES]}
    return CollectedFrames({t.name: a for (t, _), a in zip(facets, arrows, strict=True)}, groups,
                           on_cluster)


def release(frames: Iterable[DataFrame]) -> None:
    """Drop the cached aggregates `spark_aggregates` left on the cluster (once written)."""
    for df in frames:
        df.unpersist()
