"""The lake by delta-rs, in the stage's own process (the `deltalake` package: Delta's Rust
implementation, with DataFusion for SQL).

A stage of a cycle reads a few thousand rows at a time and commits about ten small tables.
Through Spark each such query costs 0.3–2 s and each commit ~0.6 s however small (a Delta
snapshot update, planning, a job or three, a round trip; docs/benchmarks.md, "cycle, third
pass" and "fourth pass"); delta-rs reads the same snapshot in milliseconds and makes the same
commit in 10–30 ms. Both follow the Delta protocol (reader 1, writer 2: no table feature either
lacks), so a table may be written by either engine and read by both. Timestamps come back as
naive UTC datetimes, as Spark's rows and frames give them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar

from jobs.lake.api import Lake
from jobs.lake.write import create_native, replace_native, update_native
from schemas.tables import Table

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["DeltaRsLake", "plain_types"]

_TABLE = re.compile(r"\{([a-z_]+)\}")


class DeltaRsLake(Lake):
    """`Lake` by delta-rs (the module docstring)."""

    engine: ClassVar[str] = "delta-rs"

    def arrow(self, sql: str) -> pa.Table:
        """`sql` run by DataFusion over the Delta tables it names, timestamps as naive UTC."""
        import pyarrow as pa
        from deltalake import DeltaTable, QueryBuilder

        builder = QueryBuilder()
        for name in dict.fromkeys(_TABLE.findall(sql)):
            builder = builder.register(name, DeltaTable(self.paths.table(name)))
        return plain_types(pa.table(builder.execute(_TABLE.sub(lambda m: m.group(1), sql))
                                    .read_all()))

    def records(self, sql: str) -> list[dict[str, Any]]:
        return self.arrow(sql).to_pylist()

    def frame(self, sql: str) -> pd.DataFrame:
        return self.arrow(sql).to_pandas(coerce_temporal_nanoseconds=True)

    def table_version(self, name: str) -> int:
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return int(DeltaTable(self.paths.table(name)).version())
        except TableNotFoundError:
            return -1

    def _create(self, table: Table) -> None:
        create_native(self.paths, table)

    def _replace(self, table: Table, data: pa.Table, where: str) -> None:
        replace_native(data, self.paths, table, where)

    def _update(self, table: Table, values: dict[str, str], where: str) -> None:
        update_native(self.paths, table, values, where)


def plain_types(table: pa.Table) -> pa.Table:
    """The table with DataFusion's (or Spark's Arrow) types as Spark's rows give them."""
    import pyarrow as pa

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
