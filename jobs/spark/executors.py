"""Spark executors as a pool of solvers: the fleet's per-job plans and the what-if's shadows.

Both ship pickled tasks through `groupBy(...).applyInPandas`, one group per task; this is the
setting they share so that the groups really run in parallel.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["spread_groups"]


@contextlib.contextmanager
def spread_groups(spark: SparkSession, partitions: int) -> Iterator[None]:
    """Within the block, a `groupBy(...).applyInPandas` spreads its groups over `partitions`
    tasks: adaptive execution (which would coalesce a tiny shuffle into one partition, one core)
    is off; the session's own settings come back afterwards."""
    conf = spark.conf
    keys = ("spark.sql.adaptive.enabled", "spark.sql.shuffle.partitions")
    saved = {k: conf.get(k, None) for k in keys}
    conf.set("spark.sql.adaptive.enabled", "false")
    conf.set("spark.sql.shuffle.partitions", str(partitions))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                conf.unset(key)
            else:
                conf.set(key, value)
