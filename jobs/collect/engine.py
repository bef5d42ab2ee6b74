"""Which engine aggregates a period: pyarrow in the stage's process, or Spark on a cluster.

`RECONF_LAKE_IO=native` always aggregates with pyarrow (jobs/collect/native.py), `spark` always
with Spark (jobs/collect/by_spark.py, the lake read and written by Spark too). Under `auto` (the
default) a stage submitted by spark-submit uses Spark (its lake is Spark's), and any other stage
counts the period's landed samples from the Parquet footers (no data read) and goes to Spark
when they exceed the crossover: above it one process holding the samples costs more than a
Spark job (pyarrow holds every sample of the period in memory at once, ~40 bytes a sample plus
its sort; Spark streams them through the executors and writes the aggregate from there).

The crossover, `SPARK_ABOVE_SAMPLES`, was measured on the project's 2-core machine
(docs/benchmarks.md, "collect on Spark at 10^8 samples"; `reconf bench collect-spark`). There
pyarrow is faster at every size it holds (10^7 samples: 3.7 CPU-s against Spark's 101.5), so
the crossover is where its memory stops being affordable: its peak grows by ~81 bytes a sample
(261 MiB at 1.07·10^6 samples, 996 MiB at 1.06·10^7) and reaches the 4 GiB a stage may take
(the issue's peak-memory limit) near 5·10^7 samples, while Spark's driver stays at 1.6-2.2 GiB
whatever the size. `RECONF_COLLECT_SPARK_ABOVE` overrides it (a worker with more memory holds
more; a real cluster reads faster than this machine's local executors). Only the aggregation moves: the lake's other reads and writes stay with delta-rs,
which reads the tables Spark wrote (both write Delta protocol reader 1 / writer 2).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from jobs.errors import StageError

__all__ = ["CROSSOVER_ENV", "NATIVE", "SPARK", "SPARK_ABOVE_SAMPLES", "EngineChoice",
           "choose_engine", "crossover", "landed_samples"]

NATIVE, SPARK = "native", "spark"
CROSSOVER_ENV = "RECONF_COLLECT_SPARK_ABOVE"
#: Samples per period above which `auto` aggregates on Spark (the module docstring).
SPARK_ABOVE_SAMPLES = 50_000_000


@dataclass(frozen=True)
class EngineChoice:
    """The engine collect uses for a period, and why (printed in the stage's log)."""

    engine: str  # NATIVE or SPARK
    samples: int  # samples the period landed (every kind, facets included)
    crossover: int
    reason: str


def landed_samples(files: Iterable[Path]) -> int:
    """The rows of the landed Parquet files, from their footers (no column is read)."""
    return sum(pq.read_metadata(f).num_rows for f in files)


def crossover() -> int:
    """`RECONF_COLLECT_SPARK_ABOVE` (samples per period), else the measured constant."""
    raw = os.environ.get(CROSSOVER_ENV, "").strip().replace("_", "")
    if not raw:
        return SPARK_ABOVE_SAMPLES
    try:
        value = int(float(raw)) if "e" in raw.lower() else int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise StageError(f"{CROSSOVER_ENV}={os.environ[CROSSOVER_ENV]!r} is not a number of "
                         "samples (a whole number >= 0, e.g. 50000000 or 5e7)",
                         where=f"the environment variable {CROSSOVER_ENV}",
                         fix=f"set it to the samples per period above which collect aggregates "
                             f"on Spark, or unset it for the measured {SPARK_ABOVE_SAMPLES:,}")
    return value


def choose_engine(mode: str, spark_lake: bool, samples: int, above: int) -> EngineChoice:
    """The rule: the Spark lake (`spark`, or `auto` under spark-submit) aggregates on Spark;
    `native` never does; `auto` does when the period's samples exceed `above`."""
    if spark_lake:
        return EngineChoice(SPARK, samples, above, "the lake is read and written by Spark")
    if mode != "auto":
        return EngineChoice(NATIVE, samples, above, f"RECONF_LAKE_IO={mode}")
    if samples > above:
        return EngineChoice(SPARK, samples, above,
                            f"{samples:,} samples landed, above the crossover {above:,}")
    return EngineChoice(NATIVE, samples, above,
                        f"{samples:,} samples landed, within the crossover {above:,}")
