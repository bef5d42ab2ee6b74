"""The lake's named questions and writes as free functions of `(spark, paths, …)`, each
`open_lake(paths, spark)`'s method of the same name (jobs/lake/api.py).

For callers that hold a session and paths rather than a lake (tests, tools); a stage opens its
lake once and asks it directly.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobs.lake import open_lake
from jobs.lake.api import Scope, Start, concurrently, quote, timestamp
from jobs.lake.spark_sql import SparkLake, delta_path
from schemas.config import Paths
from schemas.landing import RuntimeReport
from schemas.tables import Table

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "Start",
    "concurrently",
    "delta_path",
    "ensure_tables",
    "last_published",
    "newest_version",
    "period_predicate",
    "published_assignment",
    "quote",
    "read_table",
    "starting_point",
    "table_version",
    "table_versions",
    "timestamp",
    "update_rows",
    "write_records",
    "write_rows",
]


def period_predicate(job_id: str, period_end: datetime) -> str:
    """The SQL predicate of one period's rows of a job."""
    return Scope(job_id, period_end).sql


def ensure_tables(spark: SparkSession | None, paths: Paths) -> None:
    open_lake(paths, spark).ensure_tables()


def read_table(spark: SparkSession, paths: Paths, table: Table | str) -> DataFrame:
    """The whole table as a Spark DataFrame, whatever `RECONF_LAKE_IO` says."""
    return SparkLake(paths, spark).table(table if isinstance(table, str) else table.name)


def write_rows(data: pa.Table, paths: Paths, table: Table, where: str,
               spark: SparkSession | None = None) -> None:
    """Atomically replace the rows matching `where` with `data` (one Delta commit)."""
    open_lake(paths, spark).replace(table, data, where)


def write_records(spark: SparkSession | None, records: list[dict[str, Any]], paths: Paths,
                  table: Table, where: str) -> None:
    """`write_rows` for rows made in Python (one dict per row; naive datetimes are UTC)."""
    open_lake(paths, spark).write_records(table, records, where)


def update_rows(spark: SparkSession | None, paths: Paths, table: Table, values: dict[str, str],
                where: str) -> None:
    """`UPDATE table SET column = value … WHERE where` (values: SQL literals), one commit."""
    open_lake(paths, spark).update(table, values, where)


def table_version(spark: SparkSession | None, paths: Paths, name: str) -> int:
    return open_lake(paths, spark).table_version(name)


def table_versions(spark: SparkSession | None, paths: Paths, names: Iterable[str]
                   ) -> dict[str, int]:
    return open_lake(paths, spark).table_versions(names)


def published_assignment(spark: SparkSession | None, paths: Paths, job_id: str, version: int
                         ) -> dict[str, str]:
    return open_lake(paths, spark).published_assignment(job_id, version)


def newest_version(spark: SparkSession | None, paths: Paths, job_id: str,
                   before: datetime | None = None) -> int | None:
    return open_lake(paths, spark).newest_version(job_id, before)


def last_published(spark: SparkSession | None, paths: Paths, job_id: str, before: datetime
                   ) -> tuple[int | None, dict[str, str]]:
    return open_lake(paths, spark).last_published(job_id, before)


def starting_point(spark: SparkSession | None, paths: Paths, job_id: str, period_end: datetime,
                   runtime: RuntimeReport | None) -> Start:
    return open_lake(paths, spark).starting_point(job_id, period_end, runtime)
