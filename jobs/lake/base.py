"""Reading and writing the Delta tables of schemas/tables.py, one period or version at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobs.errors import StageError
from jobs.lake.read import delta_path, fetch_records, native_io, version_of
from jobs.lake.write import create_native, records_table, replace_native, update_native
from schemas.config import Paths
from schemas.landing import RuntimeReport, format_period_end
from schemas.tables import TABLES, Table

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


def quote(value: str) -> str:
    """A SQL string literal (job ids are validated, but never trust a string into SQL)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def timestamp(moment: datetime) -> str:
    """A SQL timestamp literal (UTC, as every timestamp of the lake)."""
    return f"TIMESTAMP {quote(format_period_end(moment))}"


def period_predicate(job_id: str, period_end: datetime) -> str:
    return f"job_id = {quote(job_id)} AND period_end = {timestamp(period_end)}"



def ensure_tables(spark: SparkSession, paths: Paths) -> None:
    """Create every table of the contract (empty, partitioned by job_id) if it does not exist.

    By delta-rs, or by Spark SQL rather than `DeltaTable` (py4j): the same statement runs
    in-process and over Spark Connect. A table whose log already has a commit is skipped.
    """
    import time

    native = native_io()
    for table in TABLES.values():
        location = paths.table(table.name)
        log = paths.lake / table.name / "_delta_log"
        if any(log.glob("*.json")):
            continue
        try:
            if native:
                create_native(paths, table)
            else:
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


def concurrently(*calls: Callable[[], Any]) -> list[Any]:
    """The calls' results, in order, the calls run at once.

    Each small Spark query costs mostly latency (planning, a Delta snapshot update, scheduling,
    a round trip), not cores, so independent queries of a stage overlap well. Both sessions take
    queries from several threads: a Spark Connect client is thread-safe, and the in-process
    session runs each thread's jobs in parallel (PySpark's pinned threads).
    """
    if len(calls) <= 1:
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="reconf-query") as pool:
        return list(pool.map(lambda call: call(), calls))


def write_rows(df: DataFrame | pa.Table, paths: Paths, table: Table, where: str) -> None:
    """Atomically replace the rows matching `where` with `df` (one Delta commit): by delta-rs
    (jobs/lake/write.py) unless `RECONF_LAKE_IO=spark`; an Arrow table only by delta-rs."""
    import pyarrow as pa

    if isinstance(df, pa.Table):
        replace_native(df, paths, table, where)
    elif native_io():
        replace_native(df.select(*table.columns).toArrow(), paths, table, where)
    else:
        (
            df.select(*table.columns)
            .write.format("delta")
            .mode("overwrite")
            .option("replaceWhere", where)
            .save(paths.table(table.name))
        )


def write_records(spark: SparkSession, records: list[dict[str, Any]], paths: Paths, table: Table,
                  where: str) -> None:
    """`write_rows` for rows made in Python (one dict per row; naive datetimes are UTC)."""
    if native_io():
        replace_native(records_table(records, table), paths, table, where)
    else:
        write_rows(spark.createDataFrame(records, table.ddl), paths, table, where)


def update_rows(spark: SparkSession, paths: Paths, table: Table, values: dict[str, str],
                where: str) -> None:
    """`UPDATE table SET column = value … WHERE where` (values: SQL literals), one commit."""
    if native_io():
        update_native(paths, table, values, where)
        return
    # SQL, not DeltaTable (py4j): the same statement runs in-process and over Spark Connect
    sets = ", ".join(f"{column} = {value}" for column, value in values.items())
    spark.sql(f"UPDATE {delta_path(paths.table(table.name))} SET {sets} WHERE {where}").collect()


def table_version(spark: SparkSession, paths: Paths, name: str) -> int:
    """The table's newest Delta version (jobs/lake/read.py: natively, or `DESCRIBE HISTORY`)."""
    return version_of(spark, paths, name)


def table_versions(spark: SparkSession, paths: Paths, names: Iterable[str]) -> dict[str, int]:
    """The newest Delta version of each table, looked up at once."""
    names = list(names)
    found = concurrently(*(lambda n=n: table_version(spark, paths, n) for n in names))
    return dict(zip(names, found, strict=True))


def published_assignment(spark: SparkSession, paths: Paths, job_id: str, version: int) -> dict[str, str]:
    """keygroup -> node of one published version (empty if the version does not exist)."""
    rows = fetch_records(spark, paths, "SELECT keygroup, node FROM {assignments} "
                         f"WHERE job_id = {quote(job_id)} AND version = {int(version)}")
    return {r["keygroup"]: r["node"] for r in rows}


def newest_version(spark: SparkSession, paths: Paths, job_id: str,
                   before: datetime | None = None) -> int | None:
    """The newest published version of the job (for a period before `before`, if given)."""
    cond = f"job_id = {quote(job_id)} AND status = 'published'"
    if before is not None:
        cond += f" AND period_end < {timestamp(before)}"
    rows = fetch_records(spark, paths, f"SELECT max(version) AS newest FROM {{assignment_versions}} WHERE {cond}")
    return None if not rows or rows[0]["newest"] is None else int(rows[0]["newest"])


def last_published(
    spark: SparkSession, paths: Paths, job_id: str, before: datetime
) -> tuple[int | None, dict[str, str]]:
    """(version, keygroup -> node) of the newest version published for a period before `before`.

    A rerun of a period sees exactly what its first run saw: never a version of the same or a
    later period.
    """
    version = newest_version(spark, paths, job_id, before)
    if version is None:
        return None, {}
    return version, published_assignment(spark, paths, job_id, version)


@dataclass(frozen=True)
class Start:
    """Where a plan of a period starts: what the runtime ran at the period's end.

    `version` is the assignment version the plan starts from (None: the runtime's initial
    allocation, whose placement the key-group stats report); `newest` the newest version published
    for an earlier period when the plan was made (publish refuses the plan if another version has
    been published since); `note` says why the two differ, for the operator.
    """

    version: int | None
    assignment: dict[str, str]
    newest: int | None
    note: str = ""


def starting_point(spark: SparkSession, paths: Paths, job_id: str, period_end: datetime,
                   runtime: RuntimeReport | None) -> Start:
    """The version the runtime is known to run (its report), else the newest published one.

    Planning from what runs, not from what was published, means a version the runtime refused
    (or has not applied yet) never becomes the base of later plans, and the budget always bounds
    the moves the runtime will actually make.
    """
    newest, assignment = last_published(spark, paths, job_id, period_end)
    if runtime is None or runtime.version == newest:
        return Start(newest, assignment, newest)
    if runtime.version is None:
        return Start(None, {}, newest,
                     f"the runtime still ran its initial allocation, not v{newest}; planned from "
                     "what it runs")
    running = published_assignment(spark, paths, job_id, runtime.version)
    if not running:
        raise StageError(
            f"the runtime reports running v{runtime.version} of job {job_id!r}, which reconf "
            "never published",
            where=paths.table("assignment_versions"),
            fix="check that the runtime and this pipeline share one RECONF_HOME (published/ and "
                "lake/); then land and collect the period again",
        )
    what = ("has not applied it yet, or refused it: see the runtime's log"
            if newest is not None and runtime.version < newest else "runs a newer version")
    return Start(runtime.version, running, newest,
                 f"the runtime ran v{runtime.version}, not v{newest} (it {what}); planned from "
                 f"v{runtime.version}")
