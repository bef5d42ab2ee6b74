"""Small writes of the lake by delta-rs: a period's rows replaced, a status updated, a table made.

A cycle commits about ten small tables (a period's statistics, a plan, a version). Through Spark
each commit costs ~0.6 s however small (a snapshot update, a write job, the commit protocol,
its checksum; docs/benchmarks.md, "cycle, fourth pass"); delta-rs makes the same commit from the
stage's own process in 10–30 ms. Both follow the Delta protocol (reader 1, writer 2: no table
feature either lacks), so a table may be written by either and read by both; `open_lake`
(jobs/lake/__init__.py) chooses per `RECONF_LAKE_IO`, and `tests/jobs/test_lake_contract.py`
checks each engine reads what the other writes.

The predicates are the SQL that Spark's `replaceWhere` takes (`job_id = '…' AND period_end =
TIMESTAMP '…'`); DataFusion parses the same text once its `TIMESTAMP '…'` literals are typed as
the columns are (delta-rs's file skipping refuses to compare microseconds in UTC with a literal's
nanoseconds without a zone).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from schemas.config import Paths
from schemas.tables import Table

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["conform", "create_native", "predicate", "records_table", "replace_native",
           "update_native"]

_TIMESTAMP = re.compile(r"TIMESTAMP\s+'([^']*)'")
_AS_STORED = "'Timestamp(Microsecond, Some(\"UTC\"))'"


def conform(data: pa.Table, table: Table) -> pa.Table:
    """`data`'s columns of `table`, in its order, cast to the types Delta stores (naive
    timestamps are UTC, as everywhere in the lake). A missing column is an error, not a null."""
    import pyarrow as pa

    schema = table.arrow_schema()
    missing = [name for name in schema.names if name not in data.column_names]
    if missing:
        raise ValueError(f"rows for {table.name} lack the column(s) {', '.join(missing)}")
    # Arrow reads a naive timestamp's value as UTC when it casts it to a zone
    return pa.table([data.column(field.name).cast(field.type) for field in schema], schema=schema)


def records_table(records: list[dict[str, Any]], table: Table) -> pa.Table:
    """Rows as dicts (naive datetimes in UTC) -> an Arrow table of `table`'s schema."""
    import pyarrow as pa

    schema = table.arrow_schema()  # Arrow takes a naive datetime as UTC, and converts aware ones
    return pa.Table.from_pylist([{name: row.get(name) for name in schema.names}
                                 for row in records], schema=schema)


def predicate(where: str) -> str:
    """A Spark predicate for delta-rs: each `TIMESTAMP '…'` typed as the lake stores it."""
    return _TIMESTAMP.sub(lambda m: f"arrow_cast('{m.group(1)}', {_AS_STORED})", where)


def replace_native(data: pa.Table, paths: Paths, table: Table, where: str) -> None:
    """Atomically replace the rows matching `where` with `data` (one Delta commit)."""
    from deltalake import write_deltalake

    write_deltalake(paths.table(table.name), conform(data, table), mode="overwrite",
                    predicate=predicate(where))


def update_native(paths: Paths, table: Table, values: dict[str, str], where: str) -> None:
    """`UPDATE table SET column = <SQL literal> … WHERE where` (one commit, none if no row)."""
    from deltalake import DeltaTable

    DeltaTable(paths.table(table.name)).update(updates=values, predicate=predicate(where))


def create_native(paths: Paths, table: Table) -> None:
    """Create the table (empty, partitioned by job_id) unless it exists (jobs/lake/base.py
    `ensure_tables` waits for another job's process creating it at the same moment)."""
    from deltalake import DeltaTable

    DeltaTable.create(paths.table(table.name), schema=table.arrow_schema(), mode="ignore",
                      partition_by=["job_id"], name=table.name)
