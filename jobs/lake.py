"""Reading and writing the Delta tables of schemas/tables.py, one period or version at a time."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from schemas.config import Paths
from schemas.landing import format_period_end
from schemas.tables import TABLES, Table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "delta_path",
    "ensure_tables",
    "last_published",
    "period_predicate",
    "quote",
    "read_table",
    "replace_rows",
    "table_version",
]


def quote(value: str) -> str:
    """A SQL string literal (job ids are validated, but never trust a string into SQL)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def period_predicate(job_id: str, period_end: datetime) -> str:
    return f"job_id = {quote(job_id)} AND period_end = TIMESTAMP {quote(format_period_end(period_end))}"


def delta_path(location: str) -> str:
    """The SQL identifier of the Delta table at `location` (delta.`...`)."""
    return "delta.`" + location.replace("`", "``") + "`"


def ensure_tables(spark: SparkSession, paths: Paths) -> None:
    """Create every table of the contract (empty, partitioned by job_id) if it does not exist.

    SQL rather than `DeltaTable` (py4j): the same statement runs in-process and over Spark
    Connect. A table whose log already has a commit is skipped without asking Spark.
    """
    import time

    for table in TABLES.values():
        location = paths.table(table.name)
        log = paths.lake / table.name / "_delta_log"
        if any(log.glob("*.json")):
            continue
        try:
            spark.sql(f"CREATE TABLE IF NOT EXISTS {delta_path(location)} ({table.ddl}) "
                      "USING DELTA PARTITIONED BY (job_id)").collect()
        except Exception:
            # Another job's first run may be creating it right now (its directory exists, its
            # first commit not yet): wait for that commit rather than fail.
            deadline = time.monotonic() + 60.0
            while not any(log.glob("*.json")):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)


def read_table(spark: SparkSession, paths: Paths, table: Table | str) -> DataFrame:
    name = table if isinstance(table, str) else table.name
    return spark.read.format("delta").load(paths.table(name))


def replace_rows(df: DataFrame, paths: Paths, table: Table, where: str) -> int:
    """Atomically replace the rows matching `where` with `df` (one Delta commit); the new version."""
    (
        df.select(*table.columns)
        .write.format("delta")
        .mode("overwrite")
        .option("replaceWhere", where)
        .save(paths.table(table.name))
    )
    return table_version(df.sparkSession, paths, table.name)


def table_version(spark: SparkSession, paths: Paths, name: str) -> int:
    """The table's newest Delta version (SQL, so it works over Spark Connect too)."""
    row = spark.sql(f"DESCRIBE HISTORY {delta_path(paths.table(name))} LIMIT 1").select("version").first()
    return int(row[0]) if row else -1


def last_published(
    spark: SparkSession, paths: Paths, job_id: str, before: datetime
) -> tuple[int | None, dict[str, str]]:
    """(version, keygroup -> node) of the newest version published for a period before `before`.

    Plan and validate start from it, never from a version of the same or a later period, so a
    rerun of a period sees exactly what its first run saw.
    """
    from pyspark.sql import functions as F

    newest = (
        read_table(spark, paths, "assignment_versions")
        .where((F.col("job_id") == job_id) & (F.col("status") == "published")
               & (F.col("period_end") < F.lit(before)))
        .agg(F.max("version"))
        .first()
    )
    if newest is None or newest[0] is None:
        return None, {}
    version = int(newest[0])
    rows = (
        read_table(spark, paths, "assignments")
        .where(f"job_id = {quote(job_id)} AND version = {version}")
        .select("keygroup", "node")
        .collect()
    )
    return version, {r["keygroup"]: r["node"] for r in rows}
