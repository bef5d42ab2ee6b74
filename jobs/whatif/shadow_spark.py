"""Shadow plans on a Spark cluster: one group per shadow strategy on the executors.

The fleet path's pattern (jobs/plan/fleet.py): the tasks are pickled into a DataFrame, grouped by
strategy and solved with `applyInPandas`, so the shadows of a period run in parallel on the
executor cores instead of a few at a time on the Airflow worker. Each group runs
`jobs.whatif.shadow.run_shadows` for its one task, so an executor isolates and caps a shadow exactly as
the local path does (a worker subprocess, killed at its cap); as they run side by side, each may
take up to the period's whole budget.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Sequence
from typing import TYPE_CHECKING

from jobs.spark.executors import spread_groups
from jobs.whatif.shadow import ShadowOutcome, ShadowStatus, ShadowTask, run_shadows

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

__all__ = ["cluster_master", "run_shadows_on_spark"]

_OUT_SCHEMA = "strategy string, outcome binary"


def cluster_master() -> str | None:
    """`RECONF_SPARK_MASTER` when it names a cluster (spark://, k8s://, yarn): the shadows then
    run on its executors; None (local masters included): in worker subprocesses right here."""
    master = os.environ.get("RECONF_SPARK_MASTER", "")
    return master if master.startswith(("spark://", "k8s://", "yarn")) else None


def _solve_group(frame: pd.DataFrame) -> pd.DataFrame:
    """applyInPandas body: one strategy's task -> its pickled outcome (isolated, capped)."""
    import pandas as pd

    out = []
    for blob, budget in zip(frame["task"], frame["budget_s"], strict=True):
        out.extend(run_shadows([pickle.loads(blob)], float(budget)))
    return pd.DataFrame({"strategy": [o.strategy for o in out],
                         "outcome": [pickle.dumps(o) for o in out]})


def run_shadows_on_spark(spark: SparkSession, tasks: Sequence[ShadowTask],
                         budget_s: float) -> list[ShadowOutcome]:
    """The outcomes of `tasks` (in order), solved on the executors; a task whose group returned
    nothing (a lost executor) is `failed`."""
    if not tasks:
        return []
    with spread_groups(spark, len(tasks)):  # one partition per strategy
        frame = spark.createDataFrame(
            [(t.strategy, pickle.dumps(t), float(budget_s)) for t in tasks],
            "strategy string, task binary, budget_s double")
        rows = frame.groupBy("strategy").applyInPandas(_solve_group, _OUT_SCHEMA).collect()
    got = {r["strategy"]: pickle.loads(r["outcome"]) for r in rows}
    return [got.get(t.strategy) or ShadowOutcome(t.strategy, ShadowStatus.FAILED, None, 0.0,
                                                 "no outcome came back from the executors")
            for t in tasks]
