"""The lake through the stage's Spark session (in-process, or a Spark Connect client).

For a stage whose process cannot open the lake's files itself (a driver on a cluster whose
storage only Spark can reach; collect submitted by spark-submit). Spark SQL rather than
`DeltaTable` (py4j): the same statements run in-process and over Spark Connect.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from jobs.lake.api import Lake, Scope
from schemas.config import Paths
from schemas.tables import TABLES, Table

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SparkLake", "delta_path"]

_TABLE = re.compile(r"\{([a-z_]+)\}")


def delta_path(location: str) -> str:
    """The SQL identifier of the Delta table at `location` (delta.`...`)."""
    return "delta.`" + location.replace("`", "``") + "`"


class SparkLake(Lake):
    """`Lake` through a Spark session (the module docstring)."""

    engine: ClassVar[str] = "spark"

    def __init__(self, paths: Paths, spark: SparkSession) -> None:
        super().__init__(paths)
        self.spark = spark

    def _sql(self, sql: str) -> str:
        return _TABLE.sub(lambda m: delta_path(self.paths.table(m.group(1))), sql)

    def records(self, sql: str) -> list[dict[str, Any]]:
        return [row.asDict(recursive=True) for row in self.spark.sql(self._sql(sql)).collect()]

    def frame(self, sql: str) -> pd.DataFrame:
        return self.spark.sql(self._sql(sql)).toPandas()

    def arrow(self, sql: str) -> pa.Table:
        from jobs.lake.delta_rs import plain_types

        return plain_types(self.spark.sql(self._sql(sql)).toArrow())

    def period_rows(self, table: Table | str, job_id: str, period_end: datetime,
                    columns: Sequence[str] | None = None, *, ordered: bool = False
                    ) -> list[dict[str, Any]]:
        if ordered and _sorts_in_driver(table, columns):  # (`period_arrow`)
            return self.period_arrow(table, job_id, period_end, columns, ordered=True).to_pylist()
        return super().period_rows(table, job_id, period_end, columns, ordered=ordered)

    def period_arrow(self, table: Table | str, job_id: str, period_end: datetime,
                     columns: Sequence[str] | None = None, *, ordered: bool = False) -> pa.Table:
        """The period's rows; in key order sorted by the driver, which receives them whole
        anyway: Spark's ORDER BY costs a range-partitioning sample and a shuffle, two more jobs
        per read (docs/benchmarks.md, "Spark work per stage"). Binary string order and nulls
        first, as Spark's ORDER BY ... ASC; a period's job_id and period_end are one value each,
        so its order is that of its other key columns, which must be among `columns`."""
        table = table if isinstance(table, Table) else TABLES[table]
        if not ordered or not _sorts_in_driver(table, columns):
            return super().period_arrow(table, job_id, period_end, columns, ordered=ordered)
        rows = self.arrow(self._select(table, Scope(job_id, period_end).sql, columns, False))
        return rows.sort_by([(key, "ascending", "at_start") for key in _period_key(table)])

    def table(self, name: str) -> DataFrame:
        """The whole table as a Spark DataFrame (for tests and tools that want Spark's API)."""
        return self.spark.read.format("delta").load(self.paths.table(name))

    def table_version(self, name: str) -> int:
        location = delta_path(self.paths.table(name))
        rows = self.spark.sql(f"DESCRIBE HISTORY {location} LIMIT 1").collect()
        return int(rows[0]["version"]) if rows else -1

    def _create(self, table: Table) -> None:
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS {delta_path(self.paths.table(table.name))} "
                       f"({table.ddl}) USING DELTA PARTITIONED BY (job_id)").collect()

    def _replace(self, table: Table, data: pa.Table, where: str) -> None:
        from jobs.lake.write import conform

        (
            self.spark.createDataFrame(conform(data, table))
            .write.format("delta")
            .mode("overwrite")
            .option("replaceWhere", where)
            .save(self.paths.table(table.name))
        )

    def _update(self, table: Table, values: dict[str, str], where: str) -> None:
        sets = ", ".join(f"{column} = {value}" for column, value in values.items())
        self.spark.sql(f"UPDATE {delta_path(self.paths.table(table.name))} SET {sets} "
                       f"WHERE {where}").collect()


def _period_key(table: Table | str) -> list[str]:
    """The table's key columns that vary within one period of one job."""
    table = table if isinstance(table, Table) else TABLES[table]
    return [key for key in table.key if key not in ("job_id", "period_end")]


def _sorts_in_driver(table: Table | str, columns: Sequence[str] | None) -> bool:
    """A period read the driver can order: its varying key columns are selected."""
    return columns is None or set(_period_key(table)) <= set(columns)
