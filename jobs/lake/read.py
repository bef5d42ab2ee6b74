"""SQL over the lake as free functions: `Lake.records` / `Lake.frame` of the stage's engine.

Kept for the tests and tools that run a query of their own; the stages ask jobs/lake/api.py's
named questions instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs.lake import IO_ENV, native_io, open_lake
from jobs.lake.spark_sql import delta_path
from schemas.config import Paths

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

__all__ = ["IO_ENV", "delta_path", "fetch", "fetch_records", "frame_where", "native_io",
           "rows_where", "version_of"]


def fetch(spark: SparkSession | None, paths: Paths, sql: str) -> pd.DataFrame:
    """The result of `sql` (`{table}` names a table) as a pandas frame."""
    return open_lake(paths, spark).frame(sql)


def fetch_records(spark: SparkSession | None, paths: Paths, sql: str) -> list[dict[str, Any]]:
    """The result of `sql` (`{table}` names a table) as one dict per row."""
    return open_lake(paths, spark).records(sql)


def frame_where(spark: SparkSession | None, paths: Paths, table: str, where: str,
                columns: str = "*") -> pd.DataFrame:
    """`columns` of the table's rows matching `where`, as a pandas frame."""
    return fetch(spark, paths, f"SELECT {columns} FROM {{{table}}} WHERE {where}")


def rows_where(spark: SparkSession | None, paths: Paths, table: str, where: str,
               columns: str = "*") -> list[dict[str, Any]]:
    """`columns` of the table's rows matching `where`, one dict per row."""
    return fetch_records(spark, paths, f"SELECT {columns} FROM {{{table}}} WHERE {where}")


def version_of(spark: SparkSession | None, paths: Paths, name: str) -> int:
    """The table's newest Delta version (-1 if it has no commit)."""
    return open_lake(paths, spark).table_version(name)
