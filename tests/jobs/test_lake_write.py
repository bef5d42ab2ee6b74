"""jobs/lake/write.py: a period's rows replaced, a status updated, a table made, by delta-rs.

(That Spark and delta-rs write the same tables through whole cycles is
tests/jobs/test_connect_path.py; these are the rules of each write, without Spark.)
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_kit import JOB_ID, P1

from jobs.errors import is_concurrent_write
from jobs.lake.base import (
    ensure_tables,
    period_predicate,
    quote,
    update_rows,
    write_records,
    write_rows,
)
from jobs.lake.read import IO_ENV, rows_where
from jobs.lake.write import conform, predicate, records_table
from schemas.config import Paths
from schemas.tables import ASSIGNMENT_VERSIONS, NODE_STATS, PLANS, TABLES

T1, T2 = datetime(2026, 1, 1, 0, 5, tzinfo=UTC), datetime(2026, 1, 1, 0, 10, tzinfo=UTC)


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    monkeypatch.setenv(IO_ENV, "native")
    paths = Paths(tmp_path)
    ensure_tables(None, paths)  # natively: no Spark session needed
    return paths


def _nodes(job: str, end: datetime, *names: str) -> list[dict[str, object]]:
    return [{"job_id": job, "period_end": end, "node": n, "capacity": 1.0, "cpu_ms": 5.0,
             "samples": 3, "utilisation_pct": 10.0} for n in names]


def test_every_table_is_made_once_with_the_contract_schema_and_partitioning(lake: Paths) -> None:
    ensure_tables(None, lake)  # a second time changes nothing
    for table in TABLES.values():
        dt = DeltaTable(lake.table(table.name))
        assert dt.version() == 0, table.name
        assert dt.metadata().partition_columns == ["job_id"]
        assert pa.schema(dt.schema().to_arrow()) == table.arrow_schema(), table.name


def test_a_period_is_replaced_not_added_and_other_periods_and_jobs_stay(lake: Paths) -> None:
    where = period_predicate("a", T1)
    write_records(None, _nodes("a", T1, "n1", "n2"), lake, NODE_STATS, where)
    write_records(None, _nodes("a", T2, "n1"), lake, NODE_STATS,
                  period_predicate("a", T2))
    write_records(None, _nodes("b", T1, "n9"), lake, NODE_STATS,
                  period_predicate("b", T1))
    write_records(None, _nodes("a", T1, "n3"), lake, NODE_STATS, where)
    rows = rows_where(None, lake, NODE_STATS.name, "true")
    assert sorted((r["job_id"], r["period_end"], r["node"]) for r in rows) == [
        ("a", T1.replace(tzinfo=None), "n3"), ("a", T2.replace(tzinfo=None), "n1"),
        ("b", T1.replace(tzinfo=None), "n9")]
    assert DeltaTable(lake.table(NODE_STATS.name)).version() == 4  # one commit per write


def test_an_update_touches_only_its_predicate_and_commits_nothing_without_a_match(lake: Paths) -> None:
    rows = [{"job_id": "a", "period_end": end, "plan_id": f"p{i}", "status": "planned"}
            for i, end in enumerate((T1, T2))]
    write_records(None, rows, lake, PLANS, "job_id = 'a'")
    update_rows(None, lake, PLANS, {"status": quote("published")},
                period_predicate("a", T2))
    version = DeltaTable(lake.table(PLANS.name)).version()
    update_rows(None, lake, PLANS, {"status": quote("x")},
                period_predicate("nobody", T2))
    assert DeltaTable(lake.table(PLANS.name)).version() == version
    got = {r["plan_id"]: r["status"] for r in rows_where(None, lake, PLANS.name, "true")}
    assert got == {"p0": "planned", "p1": "published"}


def test_an_arrow_table_is_conformed_to_the_contract_and_a_missing_column_refused(lake: Paths) -> None:
    data = pa.table({"utilisation_pct": [1], "node": ["n"], "job_id": ["a"],  # int for a double
                     "period_end": pa.array([T1.replace(tzinfo=None)], pa.timestamp("ns")),
                     "capacity": [2], "cpu_ms": [3.0], "samples": [1], "extra": ["dropped"]})
    out = conform(data, NODE_STATS)
    assert out.schema == NODE_STATS.arrow_schema()
    assert out.column("period_end")[0].as_py() == T1
    write_rows(data, lake, NODE_STATS, period_predicate("a", T1))
    assert rows_where(None, lake, NODE_STATS.name, "true")[0]["capacity"] == 2.0
    with pytest.raises(ValueError, match="lack the column\\(s\\) samples"):
        conform(data.drop(["samples"]), NODE_STATS)


@settings(max_examples=40, deadline=None)
@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1),
                    timezones=st.sampled_from([None, UTC])))
def test_naive_and_aware_datetimes_land_as_the_same_utc_instant(moment: datetime) -> None:
    table = records_table([{"job_id": "a", "version": 1, "period_end": moment}], ASSIGNMENT_VERSIONS)
    stored = table.column("period_end")[0].as_py()
    expected = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    assert stored == expected


def test_spark_timestamp_literals_become_typed_for_delta_rs() -> None:
    where = period_predicate("a", T1)
    assert predicate(where) == (
        "job_id = 'a' AND period_end = arrow_cast('2026-01-01T00:05:00Z', "
        "'Timestamp(Microsecond, Some(\"UTC\"))')")
    assert predicate("version = 3") == "version = 3"


def test_a_commit_lost_to_another_writer_is_recognised_as_a_conflict(lake: Paths) -> None:
    where = period_predicate("a", T1)
    write_records(None, _nodes("a", T1, "n1"), lake, NODE_STATS, where)
    stale = DeltaTable(lake.table(NODE_STATS.name))
    write_records(None, _nodes("a", T1, "n2"), lake, NODE_STATS, where)
    with pytest.raises(Exception) as lost:
        write_deltalake(stale, conform(records_table(_nodes("a", T1, "n3"), NODE_STATS),
                                       NODE_STATS), mode="overwrite", predicate=predicate(where))
    assert is_concurrent_write(lost.value)


@pytest.mark.spark
def test_with_native_io_validate_plan_and_publish_start_no_spark(
    collected_home: Paths, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    import jobs.spark.session
    from jobs.lake.base import published_assignment
    from jobs.run import run_plan, run_publish, run_validate

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("a stage asked for a Spark session")

    monkeypatch.setenv(IO_ENV, "native")
    monkeypatch.setattr(jobs.spark.session, "get_spark", refuse)
    run_validate(JOB_ID, P1)
    planned = run_plan(JOB_ID, P1)
    published = run_publish(JOB_ID, P1)
    assert (published.status, published.version) == ("published", 1)
    manifest = json.loads((collected_home.published / JOB_ID / "v1.json").read_text())
    assert published_assignment(None, collected_home, JOB_ID, 1) == manifest["assignment"]
    assert manifest["assignment"] == {k: str(v) for k, v in planned.plan_json["assignment"].items()}
    status = rows_where(None, collected_home, PLANS.name,
                        period_predicate(JOB_ID, P1), "status")
    assert status == [{"status": "published"}]


def test_a_lazy_session_is_made_once_though_several_threads_use_it_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading
    import time
    from types import SimpleNamespace

    import jobs.spark.session

    made: list[int] = []

    def slow_session(*_: object, **__: object) -> SimpleNamespace:
        made.append(1)
        time.sleep(0.05)  # long enough for the other threads to arrive while it is being made
        return SimpleNamespace(version="4.x")

    monkeypatch.setattr(jobs.spark.session, "get_spark", slow_session)
    session = jobs.spark.session.lazy_spark()
    assert made == []  # nothing until it is used
    seen: list[str] = []
    threads = [threading.Thread(target=lambda: seen.append(session.version)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == [1] and seen == ["4.x"] * 8


@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True),
                       st.sampled_from(["node-00", "node-01", "node-99"]), max_size=40),
       st.integers(1, 2**40))
@settings(deadline=None)  # the first example imports the publish stage
def test_publish_writes_the_rows_it_wrote_as_dicts_as_columns(assignment: dict[str, str],
                                                               version: int) -> None:
    """publish's `assignments` rows as Arrow columns are the rows it wrote one dict per row."""
    from jobs.publish.version import assignment_rows
    from schemas.tables import ASSIGNMENTS

    rows = [{"job_id": JOB_ID, "version": version, "keygroup": k, "node": v}
            for k, v in sorted(assignment.items())]
    keys = sorted(assignment)
    assert assignment_rows(JOB_ID, version, keys, [assignment[k] for k in keys]).equals(
        records_table(rows, ASSIGNMENTS))
