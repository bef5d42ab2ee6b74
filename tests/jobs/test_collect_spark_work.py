"""collect's Spark engine asks Spark for little (jobs/collect/by_spark.py): the checks ride the
aggregation's one shuffle per sample kind, one action gives every kind's totals, the aggregates
are cached for the writes and dropped once written, and a refusal still names a row.

Counted by Spark's own status tracker on the shared in-process session: the number of jobs does
not depend on the machine's load (docs/benchmarks.md, "Spark work per stage")."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pipeline_kit import P1
from test_collect_contract import GOOD_NODES, _at, edge, kg, land, node

from jobs.collect.by_spark import release, spark_aggregates
from jobs.errors import StageError
from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS

pytestmark = pytest.mark.spark

#: The checks' one action over the three kinds' aggregates: adaptive execution runs each query
#: stage as its own job: per kind the aggregation's shuffle and its cached rows (3 + 3), the
#: totals' one shuffle, and the result.
MAX_CHECK_JOBS = 8


def _jobs_of(spark: Any, call: Callable[[], Any]) -> tuple[Any, int]:
    """`call()`'s result and the Spark jobs it started (the status tracker's jobs without a
    group, before and after; the listener bus reports a job a moment after it starts)."""
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup())
    try:
        result: Any = call()
    except StageError as exc:
        result = exc
    seen, stable_since = -1, time.monotonic()
    while time.monotonic() - stable_since < 1.0:
        now = len(set(tracker.getJobIdsForGroup()) - before)
        if now != seen:
            seen, stable_since = now, time.monotonic()
        time.sleep(0.1)
    return result, seen


def _cached(spark: Any) -> bool:
    return not spark._jsparkSession.sharedState().cacheManager().isEmpty()


def _period(spark: Any, home: Path, job: Any, keygroups: list[dict[str, Any]],
            edges: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> Callable[[], Any]:
    """The landed period's `spark_aggregates`, to be called."""
    files, facet_files, where = land(home, job, keygroups, edges, nodes)
    return lambda: spark_aggregates(spark, job, P1, files, facet_files, where)


def test_the_checks_are_one_action_and_the_aggregates_wait_cached_for_the_writes(
        tmp_path: Path, job: Any, spark: Any) -> None:
    keygroups = [kg(_at(s), f"op0-kg{k:03d}") for s in range(1, 4) for k in range(5)]
    edges = [edge(_at(s), f"op0-kg{k:03d}", f"op1-kg{k:03d}") for s in range(1, 4)
             for k in range(5)]
    got, jobs = _jobs_of(spark, _period(spark, tmp_path, job, keygroups, edges,
                                        [node(_at(1)), node(_at(1), "node-01")]))
    assert got.groups == {"keygroups": 5, "edges": 5, "nodes": 2}
    # before: an action per kind, each aggregate with two DISTINCT counts, then the writes'
    # aggregations again from the Parquet files
    assert 1 <= jobs <= MAX_CHECK_JOBS, jobs
    frames = got.on_cluster
    assert set(frames) == {KEYGROUP_STATS.name, COMM_STATS.name, NODE_STATS.name}
    assert all(df.is_cached for df in frames.values())
    # the writes read the cached rows: bringing them back starts no shuffle (one job each)
    rows, jobs = _jobs_of(spark, lambda: {n: df.toArrow() for n, df in frames.items()})
    assert jobs <= len(frames) and rows[KEYGROUP_STATS.name].num_rows == 5
    assert sorted(rows[KEYGROUP_STATS.name].column("samples").to_pylist()) == [3] * 5
    release(frames.values())
    assert not _cached(spark)


def test_repeated_samples_are_still_refused_with_a_row_named_and_nothing_left_cached(
        tmp_path: Path, job: Any, spark: Any) -> None:
    edges = [edge(_at(1)), edge(_at(1)), edge(_at(2), dst="x"), edge(_at(2), dst="x"),
             edge(_at(2), dst="x"), edge(_at(3))]
    error, _ = _jobs_of(spark, _period(spark, tmp_path, job, [kg(_at(1))], edges, GOOD_NODES))
    assert isinstance(error, StageError)
    assert error.what.startswith(
        "3 edges sample(s) repeat another sample's (src_keygroup, dst_keygroup, ts), e.g. {")
    assert "'count': " in error.what and "'ts': datetime.datetime(2026, 1, 1, 0, 0, " in error.what
    assert error.where.endswith("/edges")
    assert not _cached(spark)
