"""The `Lake` contract (jobs/lake/api.py): delta-rs and Spark answer every named question alike,
run the same SQL text to the same rows and frames, and write rows the other engine reads back."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pipeline_kit import JOB_ID, P1, P2, P3

from jobs.errors import StageError
from jobs.lake import IO_ENV, Lake, Scope, native_io, open_lake
from jobs.lake.api import quote, timestamp
from jobs.lake.delta_rs import DeltaRsLake
from jobs.lake.spark_sql import SparkLake
from schemas.config import Paths
from schemas.landing import RuntimeReport
from schemas.tables import (
    ASSIGNMENT_VERSIONS,
    ASSIGNMENTS,
    KEYGROUP_STATS,
    NODE_STATS,
    PLAN_MOVES,
    PLANS,
)

QUERIES = (
    # a period's rows, every column (timestamps, strings, integers, doubles)
    f"SELECT * FROM {{keygroup_stats}} WHERE {Scope(JOB_ID, P1).sql} ORDER BY keygroup",
    # an aggregate with CASE WHEN over two periods
    f"SELECT max(period_end) AS latest, count(CASE WHEN period_end > {timestamp(P1)} THEN 1 END) "
    f"AS later, sum(cpu_ms) AS cpu FROM {{keygroup_stats}} WHERE job_id = {quote(JOB_ID)}",
    # ORDER BY … LIMIT, a projection
    f"SELECT node, capacity FROM {{node_stats}} WHERE {Scope(JOB_ID, P2).sql} "
    "ORDER BY node DESC LIMIT 2",
    # nothing matches: no rows, and an aggregate of nothing (NULL)
    "SELECT * FROM {comm_stats} WHERE job_id = 'nobody'",
    "SELECT max(version) AS newest FROM {assignment_versions} WHERE job_id = 'nobody'",
)


def _publish(lake: Lake, version: int, period_end: datetime, assignment: dict[str, str]) -> None:
    """A published version's rows and its plan's, as publish writes them."""
    pid = f"{JOB_ID}@v{version}"
    lake.write_records(ASSIGNMENTS, [{"job_id": JOB_ID, "version": version, "keygroup": k,
                                      "node": n} for k, n in assignment.items()],
                       Scope(JOB_ID, version=version))
    lake.write_records(ASSIGNMENT_VERSIONS, [{
        "job_id": JOB_ID, "version": version, "plan_id": pid, "period_end": period_end,
        "checksum": f"c{version}", "status": "published", "manifest_path": f"v{version}.json",
        "published_at": period_end}], Scope(JOB_ID, version=version))
    lake.write_records(PLANS, [{"job_id": JOB_ID, "period_end": period_end, "plan_id": pid,
                                "status": "published", "plan_json": json.dumps({"v": version})},
                               {"job_id": JOB_ID, "period_end": period_end, "plan_id": pid + "#2",
                                "status": "planned", "plan_json": "{}"}],
                       Scope(JOB_ID, period_end))
    lake.write_records(PLAN_MOVES, [  # the published plan's move, and one of an unpublished one
        {"job_id": JOB_ID, "period_end": period_end, "plan_id": pid, "keygroup": "op0-kg000",
         "src_node": "node-02", "dst_node": assignment["op0-kg000"], "cost": 1.0},
        {"job_id": JOB_ID, "period_end": period_end, "plan_id": pid + "#2",
         "keygroup": "op0-kg001", "src_node": "node-00", "dst_node": "node-02", "cost": 1.0}],
                       Scope(JOB_ID, period_end))


def _questions(lake: Lake) -> dict[str, Any]:
    """Every named question, asked of `lake`."""
    return {
        "period_rows": lake.period_rows(KEYGROUP_STATS, JOB_ID, P1, ordered=True),
        "period_rows columns": lake.period_rows(NODE_STATS, JOB_ID, P2, ("node", "capacity"),
                                                ordered=True),
        "period_frame": lake.period_frame(NODE_STATS, JOB_ID, P1).sort_values("node")
        .reset_index(drop=True),
        # columnar: the same Arrow schema and values from both engines (naive UTC, plain strings)
        "period_arrow": lake.period_arrow(KEYGROUP_STATS, JOB_ID, P1, ordered=True),
        "periods_frame": lake.periods_frame(KEYGROUP_STATS, JOB_ID, P1, P3,
                                            ("period_end", "keygroup", "load_pct"))
        .sort_values(["period_end", "keygroup"]).reset_index(drop=True),
        "rows_of_jobs": lake.rows_of_jobs(NODE_STATS, [JOB_ID, "nobody"], P1),
        "latest_period": (lake.latest_period(KEYGROUP_STATS, JOB_ID, P2),
                          lake.latest_period(KEYGROUP_STATS, JOB_ID, P1)),
        "plan_ids": sorted(lake.plan_ids(JOB_ID, P1)),
        "period_version": (lake.period_version(JOB_ID, P1), lake.period_version(JOB_ID, P3)),
        "version_log": (lake.version_log(JOB_ID, P1), lake.version_log(JOB_ID, P3)),
        "published_plans": lake.published_plans(JOB_ID, P3),
        "published_moves": (lake.published_moves(JOB_ID, P3, 5), lake.published_moves(JOB_ID, P3, 1),
                            lake.published_moves(JOB_ID, P1, 5), lake.published_moves(JOB_ID, P3, 0)),
        "newest_version": (lake.newest_version(JOB_ID), lake.newest_version(JOB_ID, P2),
                           lake.newest_version(JOB_ID, P1)),
        "published_assignment": (lake.published_assignment(JOB_ID, 1),
                                 lake.published_assignment(JOB_ID, 9)),
        "last_published": lake.last_published(JOB_ID, P3),
        "last_published_of_jobs": lake.last_published_of_jobs([JOB_ID, "nobody"], P2),
        "starting_point": (lake.starting_point(JOB_ID, P3, None),
                           lake.starting_point(JOB_ID, P3, RuntimeReport(1, ("node-00",))),
                           lake.starting_point(JOB_ID, P3, RuntimeReport(None, ("node-00",)))),
        "table_versions": lake.table_versions(["keygroup_stats", "assignments"]),
    }


@pytest.mark.spark
def test_both_engines_answer_every_question_run_every_query_and_read_each_others_writes(
    spark: Any, collected_home: Paths,
) -> None:
    native, by_spark = DeltaRsLake(collected_home), SparkLake(collected_home, spark)
    _publish(native, 1, P1, {"op0-kg000": "node-00", "op0-kg001": "node-01"})
    _publish(by_spark, 2, P2, {"op0-kg000": "node-01"})  # each engine reads the other's commits
    mine, theirs = _questions(native), _questions(by_spark)
    for question, answer in mine.items():
        if isinstance(answer, pd.DataFrame):
            pd.testing.assert_frame_equal(answer, theirs[question], check_dtype=True)
        else:
            assert answer == theirs[question], question
    # the answers themselves, once
    assert mine["newest_version"] == (2, 1, None) and mine["plan_ids"] == [
        f"{JOB_ID}@v1", f"{JOB_ID}@v1#2"]
    assert mine["last_published_of_jobs"] == {JOB_ID: (1, {"op0-kg000": "node-00",
                                                           "op0-kg001": "node-01"})}
    assert mine["version_log"][0].newest == 2 and mine["version_log"][0].newer == 1
    assert mine["version_log"][0].mine["checksum"] == "c1" and mine["version_log"][1].mine is None
    assert mine["latest_period"] == (P1.replace(tzinfo=None), None)
    assert mine["period_arrow"].to_pylist() == mine["period_rows"]
    assert mine["published_moves"] == ([[("op0-kg000", "node-02", "node-00")],
                                        [("op0-kg000", "node-02", "node-01")]],
                                       [[("op0-kg000", "node-02", "node-01")]], [], [])
    start = mine["starting_point"]
    assert (start[0].version, start[1].version, start[2].version) == (2, 1, None)
    assert mine["rows_of_jobs"].keys() == {JOB_ID} and mine["table_versions"]["assignments"] >= 1
    with pytest.raises(StageError, match="never published"):
        native.starting_point(JOB_ID, P3, RuntimeReport(7, ()))
    # the same SQL text, the same rows and frames
    for sql in QUERIES:
        assert native.records(sql) == by_spark.records(sql), sql
        frames = native.frame(sql), by_spark.frame(sql)
        assert list(frames[0].dtypes) == list(frames[1].dtypes), sql
        pd.testing.assert_frame_equal(frames[0], frames[1], check_dtype=True)
    rows = native.records(QUERIES[0])
    assert rows and all(isinstance(r["period_end"], datetime) and r["period_end"].tzinfo is None
                        and r["period_end"] == P1.replace(tzinfo=None) for r in rows)
    # the statuses' updates: the same rows whichever engine makes them
    for lake, end in ((native, P1), (by_spark, P2)):
        lake.set_plan_status(JOB_ID, end, f"{JOB_ID}@v{1 if end == P1 else 2}", "stale")
        lake.settle_plan_statuses(JOB_ID, end, f"{JOB_ID}@v{1 if end == P1 else 2}",
                                  "not_published")
    statuses = {(r["period_end"], r["plan_id"]): r["status"] for r in by_spark.records(
        "SELECT period_end, plan_id, status FROM {plans}")}
    assert set(statuses.values()) == {"published", "not_published"}
    assert statuses == {(r["period_end"], r["plan_id"]): r["status"] for r in native.records(
        "SELECT period_end, plan_id, status FROM {plans}")}


def test_the_engine_follows_the_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(IO_ENV, raising=False)
    assert native_io() and isinstance(open_lake(Paths(tmp_path)), DeltaRsLake)
    for value, native in (("spark", False), (" Native ", True), ("auto", True), ("", True)):
        monkeypatch.setenv(IO_ENV, value)
        assert native_io() is native
    monkeypatch.setenv(IO_ENV, "auto")
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")  # a driver spark-submit launched
    assert not native_io()
    session = object()
    lake = open_lake(Paths(tmp_path), session)  # type: ignore[arg-type]  # never used here
    assert isinstance(lake, SparkLake) and lake.spark is session and lake.engine == "spark"
    with pytest.raises(StageError, match="chooses Spark for the lake, but this caller has no"):
        open_lake(Paths(tmp_path))
    monkeypatch.setenv(IO_ENV, "native")
    assert native_io()
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT")
    monkeypatch.setenv(IO_ENV, "fast")
    with pytest.raises(StageError, match="RECONF_LAKE_IO='fast' is not one of auto, native, spark"):
        native_io()


def test_a_missing_table_has_no_version(tmp_path: Path) -> None:
    assert DeltaRsLake(Paths(tmp_path)).table_version("plans") == -1
