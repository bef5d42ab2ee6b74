"""Small reads of the lake: a period's rows, a version's rows, an aggregate, a table's version.

A stage of a cycle reads a few thousand rows at a time. Through Spark each such query costs
0.3–2 s however small it is (a Delta snapshot update, planning, a job or three, a round trip;
docs/benchmarks.md, "cycle, third pass"), and a cycle makes a dozen of them one after another.
delta-rs (the `deltalake` package: Delta's Rust implementation, with DataFusion for SQL) reads the
same snapshot in milliseconds from the stage's own process; its writes are jobs/lake/write.py.

One SQL text serves both engines: `{table}` names a table of schemas/tables.py, the predicates
are the plain SQL both Spark and DataFusion accept (comparisons, `TIMESTAMP '…'` literals,
`CASE WHEN`, `max`/`count`, `ORDER BY … LIMIT`).

`RECONF_LAKE_IO` chooses for the reads and the writes alike: `native` with delta-rs from the
stage's process, `spark` through the stage's Spark session (for a stage whose process cannot
open the lake's files itself, e.g. a driver on a cluster whose storage only Spark can reach), or
`auto` (the default): native, but Spark's in a stage submitted as a Spark application
(`spark-submit jobs/submit.py`, collect on a cluster).
Timestamps come back as naive UTC datetimes on both paths (the session time zone is UTC), as
Spark's rows and frames give them.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from jobs.errors import StageError
from schemas.config import Paths

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import SparkSession

__all__ = ["IO_ENV", "fetch", "fetch_records", "frame_where", "native_io", "rows_where",
           "version_of"]

IO_ENV = "RECONF_LAKE_IO"
_MODES = ("auto", "native", "spark")
_TABLE = re.compile(r"\{([a-z_]+)\}")


def delta_path(location: str) -> str:
    """The SQL identifier of the Delta table at `location` (delta.`...`)."""
    return "delta.`" + location.replace("`", "``") + "`"


def native_io() -> bool:
    """True when the lake's small reads and writes go through delta-rs (the module docstring)."""
    mode = os.environ.get(IO_ENV, "auto").strip().lower() or "auto"
    if mode not in _MODES:
        raise StageError(f"{IO_ENV}={mode!r} is not one of {', '.join(_MODES)}",
                         where=f"the environment variable {IO_ENV}",
                         fix="unset it to read and write the lake natively, or set it to spark "
                             "to go through the stage's Spark session")
    if mode == "auto":  # a Spark application (spark-submit on a cluster): Spark's I/O
        from jobs.spark.session import under_spark_submit

        return not under_spark_submit()
    return mode == "native"


def fetch(spark: SparkSession, paths: Paths, sql: str) -> pd.DataFrame:
    """The result of `sql` as a pandas frame (what `DataFrame.toPandas()` gives)."""
    if native_io():
        return _native(paths, sql).to_pandas(coerce_temporal_nanoseconds=True)
    return spark.sql(_spark_sql(paths, sql)).toPandas()


def fetch_records(spark: SparkSession, paths: Paths, sql: str) -> list[dict[str, Any]]:
    """The result of `sql` as one dict per row (what `Row.asDict()` gives)."""
    if native_io():
        return _native(paths, sql).to_pylist()
    return [row.asDict(recursive=True) for row in spark.sql(_spark_sql(paths, sql)).collect()]


def frame_where(spark: SparkSession, paths: Paths, table: str, where: str,
                columns: str = "*") -> pd.DataFrame:
    """`columns` of the table's rows matching `where`, as a pandas frame."""
    return fetch(spark, paths, f"SELECT {columns} FROM {{{table}}} WHERE {where}")


def rows_where(spark: SparkSession, paths: Paths, table: str, where: str,
               columns: str = "*") -> list[dict[str, Any]]:
    """`columns` of the table's rows matching `where`, one dict per row."""
    return fetch_records(spark, paths, f"SELECT {columns} FROM {{{table}}} WHERE {where}")


def version_of(spark: SparkSession, paths: Paths, name: str) -> int:
    """The table's newest Delta version (-1 if it has no commit)."""
    if native_io():
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return int(DeltaTable(paths.table(name)).version())
        except TableNotFoundError:
            return -1
    rows = spark.sql(f"DESCRIBE HISTORY {delta_path(paths.table(name))} LIMIT 1").collect()
    return int(rows[0]["version"]) if rows else -1


def _spark_sql(paths: Paths, sql: str) -> str:
    return _TABLE.sub(lambda m: delta_path(paths.table(m.group(1))), sql)


def _native(paths: Paths, sql: str) -> pa.Table:
    """`sql` run by DataFusion over the Delta tables it names, timestamps as naive UTC."""
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    builder = QueryBuilder()
    for name in dict.fromkeys(_TABLE.findall(sql)):
        builder = builder.register(name, DeltaTable(paths.table(name)))
    table = pa.table(builder.execute(_TABLE.sub(lambda m: m.group(1), sql)).read_all())
    return pa.table([_plain(column) for column in table.columns], names=table.column_names)


def _plain(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """DataFusion's types as Spark's: UTC timestamps naive, string views plain strings."""
    import pyarrow as pa

    kind = column.type
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        return column.cast(pa.timestamp(kind.unit))
    if pa.types.is_string_view(kind) or pa.types.is_large_string(kind):
        return column.cast(pa.string())
    return column
