"""jobs/lake/read.py: one SQL text, the same rows whether delta-rs or Spark reads the lake."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pipeline_kit import JOB_ID, P1, P2

from jobs.errors import StageError
from jobs.lake.base import period_predicate, published_assignment, quote, timestamp
from jobs.lake.read import IO_ENV, fetch, fetch_records, native_io, version_of
from schemas.config import Paths

QUERIES = (
    # a period's rows, every column (timestamps, strings, integers, doubles)
    f"SELECT * FROM {{keygroup_stats}} WHERE {period_predicate(JOB_ID, P1)} ORDER BY keygroup",
    # an aggregate with CASE WHEN over two periods
    f"SELECT max(period_end) AS latest, count(CASE WHEN period_end > {timestamp(P1)} THEN 1 END) "
    f"AS later, sum(cpu_ms) AS cpu FROM {{keygroup_stats}} WHERE job_id = {quote(JOB_ID)}",
    # ORDER BY … LIMIT, a projection
    f"SELECT node, capacity FROM {{node_stats}} WHERE {period_predicate(JOB_ID, P2)} "
    "ORDER BY node DESC LIMIT 2",
    # nothing matches: no rows, and an aggregate of nothing (NULL)
    "SELECT * FROM {comm_stats} WHERE job_id = 'nobody'",
    "SELECT max(version) AS newest FROM {assignment_versions} WHERE job_id = 'nobody'",
)


def _both(monkeypatch: pytest.MonkeyPatch, read: Any) -> tuple[Any, Any]:
    monkeypatch.setenv(IO_ENV, "native")
    native = read()
    monkeypatch.setenv(IO_ENV, "spark")
    spark = read()
    return native, spark


@pytest.mark.spark
def test_native_and_spark_reads_give_the_same_rows_frames_and_versions(
    spark: Any, collected_home: Paths, monkeypatch: pytest.MonkeyPatch
) -> None:
    for sql in QUERIES:
        native, by_spark = _both(monkeypatch, lambda sql=sql: fetch_records(spark, collected_home, sql))
        assert native == by_spark, sql
        frames = _both(monkeypatch, lambda sql=sql: fetch(spark, collected_home, sql))
        assert list(frames[0].dtypes) == list(frames[1].dtypes), sql
        pd.testing.assert_frame_equal(frames[0], frames[1], check_dtype=True)
    rows = fetch_records(spark, collected_home, QUERIES[0])
    assert rows and all(isinstance(r["period_end"], datetime) and r["period_end"].tzinfo is None
                        and r["period_end"] == P1.replace(tzinfo=None) for r in rows)
    for name in ("keygroup_stats", "assignments"):
        native, by_spark = _both(monkeypatch, lambda name=name: version_of(spark, collected_home, name))
        assert native == by_spark >= 0
    assert _both(monkeypatch, lambda: published_assignment(spark, collected_home, JOB_ID, 1)) == ({}, {})


def test_the_read_path_follows_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(IO_ENV, raising=False)
    assert native_io()
    for value, native in (("spark", False), (" Native ", True), ("auto", True), ("", True)):
        monkeypatch.setenv(IO_ENV, value)
        assert native_io() is native
    monkeypatch.setenv(IO_ENV, "auto")
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")  # a driver spark-submit launched
    assert not native_io()
    monkeypatch.setenv(IO_ENV, "native")
    assert native_io()
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT")
    monkeypatch.setenv(IO_ENV, "fast")
    with pytest.raises(StageError, match="RECONF_LAKE_IO='fast' is not one of auto, native, spark"):
        native_io()


def test_a_missing_table_has_no_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(IO_ENV, "native")
    assert version_of(None, Paths(tmp_path), "plans") == -1  # type: ignore[arg-type]
