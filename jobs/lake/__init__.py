"""The lake: the Delta tables of schemas/tables.py, read and written one period or version at a time.

A stage opens its lake once, `open_lake(paths, spark)`, and asks it named questions
(jobs/lake/api.py `Lake`: a period's rows of a table, the newest published version, where a
plan starts, the last published assignment, the period's attempts and version row, table
versions, …) and makes named writes (a scope's rows replaced, a plan's status set). Every SQL
text of the pipeline lives in this folder, written once for both engines:

- jobs/lake/delta_rs.py, `DeltaRsLake`: delta-rs in the stage's own process, milliseconds per
  query or commit (the default);
- jobs/lake/spark_sql.py, `SparkLake`: the stage's Spark session, for a process that cannot open
  the lake's files itself (a driver on a cluster whose storage only Spark can reach).

`RECONF_LAKE_IO` chooses: `native` (delta-rs), `spark`, or `auto` (the default): native, but
Spark in a stage submitted as a Spark application (`spark-submit jobs/submit.py`, collect on a
cluster). collect's aggregation follows the same choice (jobs/collect/aggregate.py: one contract,
Arrow out, for pyarrow and Spark), and under `auto` it also goes to Spark when a period landed
more samples than one process should hold (jobs/collect/engine.py: the measured crossover). tests/jobs/test_lake_contract.py runs the same questions and
writes against both engines and requires the same answers.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from jobs.errors import StageError
from jobs.lake.api import Lake, Scope, Start, VersionLog, concurrently
from schemas.config import Paths

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["IO_ENV", "Lake", "Scope", "Start", "VersionLog", "concurrently", "io_mode", "native_io",
           "open_lake"]

IO_ENV = "RECONF_LAKE_IO"
_MODES = ("auto", "native", "spark")


def io_mode() -> str:
    """`RECONF_LAKE_IO` as written (auto, native or spark; unset: auto), checked."""
    mode = os.environ.get(IO_ENV, "auto").strip().lower() or "auto"
    if mode not in _MODES:
        raise StageError(f"{IO_ENV}={mode!r} is not one of {', '.join(_MODES)}",
                         where=f"the environment variable {IO_ENV}",
                         fix="unset it to read and write the lake natively, or set it to spark "
                             "to go through the stage's Spark session")
    return mode


def native_io() -> bool:
    """True when `RECONF_LAKE_IO` chooses delta-rs (the module docstring)."""
    mode = io_mode()
    if mode == "auto":  # a Spark application (spark-submit on a cluster): Spark's I/O
        from jobs.spark.session import under_spark_submit

        return not under_spark_submit()
    return mode == "native"


def open_lake(paths: Paths, spark: SparkSession | None = None) -> Lake:
    """The stage's lake, by the engine `RECONF_LAKE_IO` chooses. `spark` (often a lazy session,
    jobs/spark/session.py `lazy_spark`) is used only by the Spark engine, which requires it."""
    if native_io():
        from jobs.lake.delta_rs import DeltaRsLake

        return DeltaRsLake(paths)
    if spark is None:
        raise StageError(f"{IO_ENV} chooses Spark for the lake, but this caller has no Spark "
                         "session", where=f"the environment variable {IO_ENV}",
                         fix=f"unset {IO_ENV} (or set it to native) to read the lake by delta-rs")
    from jobs.lake.spark_sql import SparkLake

    return SparkLake(paths, spark)
