"""validate_stats against real Great Expectations: each rule must catch its bad period."""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from period_frames import KEYGROUPS, NODES, clean_edges, clean_keygroups, clean_nodes

from jobs.validate import ge
from jobs.validate.suites import MAX_ROWS, SUITE_DIR, Failure, ValidationReport, validate_stats
from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS

Frames = dict[str, pd.DataFrame]


def run(frames: Frames) -> ValidationReport:
    return validate_stats(
        frames["keygroups"],
        frames["edges"],
        frames["nodes"],
        expected_keygroups=KEYGROUPS,
        known_nodes=NODES,
    )


def only_failure(report: ValidationReport) -> Failure:
    assert not report.success
    assert len(report.failures) == 1, report.summary()
    return report.failures[0]


def set_value(table: str, row: int, column: str, value: Any) -> Callable[[Frames], None]:
    def mutate(frames: Frames) -> None:
        frame = frames[table]
        if isinstance(value, float) and frame[column].dtype.kind == "i":
            frames[table] = frame = frame.astype({column: "float64"})
        frame.loc[row, column] = value

    return mutate


def duplicate_row(table: str, row: int) -> Callable[[Frames], None]:
    def mutate(frames: Frames) -> None:
        frames[table] = pd.concat([frames[table], frames[table].iloc[[row]]], ignore_index=True)

    return mutate


def test_clean_period_passes(frames: Frames) -> None:
    report = run(frames)
    assert report.success, report.summary()
    assert report.failures == ()
    assert "passed" in report.summary()
    assert json.loads(json.dumps(report.to_dict())) == {
        "success": True,
        "failure_count": 0,
        "failures": [],
    }


# (mutation, table, expectation, column, the offending row's key and bad value)
CASES: dict[str, tuple[Callable[[Frames], None], str, str, str, dict[str, Any]]] = {
    "duplicate keygroup": (
        duplicate_row("keygroups", 2),
        "keygroup_stats", "expect_column_values_to_be_unique", "keygroup", {"keygroup": "kg-002"},
    ),
    "null operator": (
        set_value("keygroups", 4, "operator", None),
        "keygroup_stats", "expect_column_values_to_not_be_null", "operator",
        {"keygroup": "kg-004", "operator": None},
    ),
    "negative load": (
        set_value("keygroups", 3, "load_pct", -0.5),
        "keygroup_stats", "expect_column_values_to_be_between", "load_pct",
        {"keygroup": "kg-003", "load_pct": -0.5},
    ),
    "NaN cpu is null": (
        set_value("keygroups", 5, "cpu_ms", float("nan")),
        "keygroup_stats", "expect_column_values_to_not_be_null", "cpu_ms",
        {"keygroup": "kg-005", "cpu_ms": None},
    ),
    "+inf load": (
        set_value("keygroups", 6, "load_pct", float("inf")),
        "keygroup_stats", "expect_column_values_to_be_between", "load_pct",
        {"keygroup": "kg-006", "load_pct": "inf"},
    ),
    "-inf cpu": (
        set_value("keygroups", 1, "cpu_ms", float("-inf")),
        "keygroup_stats", "expect_column_values_to_be_between", "cpu_ms",
        {"keygroup": "kg-001", "cpu_ms": "-inf"},
    ),
    "+inf state bytes (BIGINT read as float)": (
        set_value("keygroups", 8, "state_bytes", float("inf")),
        "keygroup_stats", "expect_column_values_to_be_between", "state_bytes",
        {"keygroup": "kg-008", "state_bytes": "inf"},
    ),
    "unknown node on key group": (
        set_value("keygroups", 7, "node", "node-z"),
        "keygroup_stats", "expect_column_values_to_be_in_set", "node",
        {"keygroup": "kg-007", "node": "node-z"},
    ),
    "edge to unknown key group": (
        set_value("edges", 2, "dst_keygroup", "kg-999"),
        "comm_stats", "expect_column_values_to_be_in_set", "dst_keygroup",
        {"src_keygroup": "kg-002", "dst_keygroup": "kg-999"},
    ),
    "edge from unknown key group": (
        set_value("edges", 0, "src_keygroup", "ghost"),
        "comm_stats", "expect_column_values_to_be_in_set", "src_keygroup",
        {"src_keygroup": "ghost", "dst_keygroup": "kg-001"},
    ),
    "negative edge bytes": (
        set_value("edges", 4, "bytes", -1),
        "comm_stats", "expect_column_values_to_be_between", "bytes",
        {"src_keygroup": "kg-004", "dst_keygroup": "kg-005", "bytes": -1},
    ),
    "+inf tuples_per_s": (
        set_value("edges", 3, "tuples_per_s", float("inf")),
        "comm_stats", "expect_column_values_to_be_between", "tuples_per_s",
        {"src_keygroup": "kg-003", "dst_keygroup": "kg-004", "tuples_per_s": "inf"},
    ),
    "duplicate edge": (
        duplicate_row("edges", 5),
        "comm_stats", "expect_compound_columns_to_be_unique", "src_keygroup,dst_keygroup",
        {"src_keygroup": "kg-005", "dst_keygroup": "kg-006"},
    ),
    "capacity 0": (
        set_value("nodes", 1, "capacity", 0.0),
        "node_stats", "expect_column_values_to_be_between", "capacity",
        {"node": "node-b", "capacity": 0.0},
    ),
    "unknown node in node stats": (
        set_value("nodes", 2, "node", "node-z"),
        "node_stats", "expect_column_values_to_be_in_set", "node", {"node": "node-z"},
    ),
    "duplicate node": (
        duplicate_row("nodes", 0),
        "node_stats", "expect_column_values_to_be_unique", "node", {"node": "node-a"},
    ),
    "negative utilisation": (
        set_value("nodes", 0, "utilisation_pct", -3.0),
        "node_stats", "expect_column_values_to_be_between", "utilisation_pct",
        {"node": "node-a", "utilisation_pct": -3.0},
    ),
    "null period_end (NaT)": (
        set_value("nodes", 2, "period_end", pd.NaT),
        "node_stats", "expect_column_values_to_not_be_null", "period_end",
        {"node": "node-c", "period_end": None},
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_each_rule_fails_and_names_the_offender(frames: Frames, case: str) -> None:
    mutate, table, expectation, column, row = CASES[case]
    mutate(frames)
    report = run(frames)
    failure = only_failure(report)
    assert (failure.table, failure.expectation, failure.column) == (table, expectation, column)
    assert failure.unexpected_count >= 1
    assert any(row.items() <= offending.items() for offending in failure.rows), failure.rows
    assert failure.rule and failure.fix and failure.error is None

    text = report.summary()
    assert f"{table}.{column}" in text
    assert expectation in text
    assert next(iter(row.values())) and str(next(iter(row.values()))) in text
    assert "How to fix:" in text and "land the period again" in text
    json.dumps(report.to_dict(), allow_nan=False)  # strict JSON, even with inf/NaN/NaT


def test_missing_keygroup_is_named(frames: Frames) -> None:
    frames["keygroups"] = frames["keygroups"].drop(index=[7, 9])
    failure = only_failure(report := run(frames))
    assert failure.expectation == "expect_column_distinct_values_to_equal_set"
    assert (failure.table, failure.column) == ("keygroup_stats", "keygroup")
    assert failure.missing == ("kg-007", "kg-009")
    assert "missing (2): kg-007, kg-009" in report.summary()
    assert "fix the runtime's metrics for these key groups" in report.summary()


def test_unexpected_keygroup_is_named(frames: Frames) -> None:
    frames["keygroups"].loc[0, "keygroup"] = "kg-stray"
    failure = only_failure(run(frames))
    assert failure.expectation == "expect_column_distinct_values_to_equal_set"
    assert failure.missing == ("kg-000",)
    assert failure.rows == ({"keygroup": "kg-stray"},)


def test_empty_keygroups_fails_with_every_keygroup_missing(frames: Frames) -> None:
    frames["keygroups"] = frames["keygroups"].iloc[0:0]
    failure = only_failure(report := run(frames))
    assert failure.expectation == "expect_column_distinct_values_to_equal_set"
    assert failure.missing == tuple(KEYGROUPS)
    assert f"missing ({len(KEYGROUPS)})" in report.summary()
    assert f"(+{len(KEYGROUPS) - MAX_ROWS} more)" in report.summary()


@pytest.mark.parametrize("empty", [clean_edges().iloc[0:0], pd.DataFrame()], ids=["typed", "bare"])
def test_empty_edges_is_valid(frames: Frames, empty: pd.DataFrame) -> None:
    frames["edges"] = empty
    report = run(frames)
    assert report.success, report.summary()


def test_missing_column_is_reported_not_raised(frames: Frames) -> None:
    frames["nodes"] = frames["nodes"].drop(columns=["capacity"])
    report = run(frames)
    assert not report.success
    columns = [f for f in report.failures if f.expectation == "expect_table_columns_to_match_set"]
    assert len(columns) == 1 and columns[0].missing == ("capacity",)
    broken = [f for f in report.failures if f.column == "capacity"]
    assert broken and all(f.error and "capacity" in f.error for f in broken)
    assert "could not evaluate" in report.summary()


def test_many_bad_rows_count_all_but_show_a_few() -> None:
    many = [f"kg-{i:03d}" for i in range(40)]
    keygroups = pd.concat([clean_keygroups()] * 4, ignore_index=True).iloc[:40]
    keygroups["keygroup"] = many
    keygroups["load_pct"] = -1.0
    report = validate_stats(
        keygroups, clean_edges(), clean_nodes(), expected_keygroups=many, known_nodes=NODES
    )
    failure = only_failure(report)
    assert failure.unexpected_count == 40
    assert len(failure.rows) == MAX_ROWS
    assert "40 offending" in report.summary()


def test_nullable_and_numpy_dtypes(frames: Frames) -> None:
    kg = frames["keygroups"].astype({"state_bytes": "Int64", "tuples_in": "int32"})
    kg["state_bytes"] = kg["state_bytes"].astype(object).where(kg.index != 2, pd.NA).astype("Int64")
    kg["cpu_ms"] = kg["cpu_ms"].astype(np.float32)
    frames["keygroups"] = kg
    failure = only_failure(run(frames))
    assert (failure.expectation, failure.column) == (
        "expect_column_values_to_not_be_null",
        "state_bytes",
    )
    assert failure.rows[0]["keygroup"] == "kg-002"


def test_several_failures_are_all_reported_in_table_order(frames: Frames) -> None:
    frames["nodes"].loc[0, "capacity"] = -1.0
    frames["keygroups"].loc[0, "load_pct"] = np.nan
    frames["edges"].loc[0, "tuples"] = -5
    report = run(frames)
    assert [f.table for f in report.failures] == ["keygroup_stats", "comm_stats", "node_stats"]
    payload = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert payload["failure_count"] == 3 and payload["success"] is False
    assert {f["column"] for f in payload["failures"]} == {"load_pct", "tuples", "capacity"}


def test_inputs_are_not_modified(frames: Frames) -> None:
    before = {k: v.copy() for k, v in frames.items()}
    run(frames)
    for name, frame in frames.items():
        pd.testing.assert_frame_equal(frame, before[name])


def test_parameters_must_be_given(frames: Frames) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        validate_stats(
            frames["keygroups"], frames["edges"], frames["nodes"],
            expected_keygroups=KEYGROUPS, known_nodes=[],
        )  # fmt: skip
    # no key group expected (a dynamic job every unit of which has left): the reported ones are
    # unexpected, and an empty period passes
    report = validate_stats(frames["keygroups"], frames["edges"], frames["nodes"],
                            expected_keygroups=[], known_nodes=NODES)
    assert not report.success and "kg-000" in report.summary()
    empty = validate_stats(frames["keygroups"].iloc[:0], frames["edges"].iloc[:0],
                           frames["nodes"], expected_keygroups=[], known_nodes=NODES)
    assert empty.success, empty.summary()


def test_engine_is_reused_and_keeps_no_results(frames: Frames) -> None:
    run(frames)
    engine = ge.engine()
    run(frames)
    assert ge.engine() is engine
    assert engine._context.validation_results_store.list_keys() == []


@pytest.mark.parametrize("table", [KEYGROUP_STATS, COMM_STATS, NODE_STATS], ids=lambda t: t.name)
def test_suite_files_match_the_table_schema(table: Any) -> None:
    import great_expectations as gx

    spec = json.loads((SUITE_DIR / f"{table.name}.json").read_text())
    suite = gx.ExpectationSuite(**spec)
    assert len(suite.expectations) == len(spec["expectations"])
    by_type: dict[str, list[dict[str, Any]]] = {}
    for exp in spec["expectations"]:
        by_type.setdefault(exp["type"], []).append(exp["kwargs"])
        assert exp["meta"]["rule"]
    assert by_type["expect_table_columns_to_match_set"][0]["column_set"] == list(table.columns)
    not_null = {kw["column"] for kw in by_type["expect_column_values_to_not_be_null"]}
    assert not_null == set(table.columns)
    sets = [kw["value_set"] for kw in by_type["expect_column_values_to_be_in_set"]]
    assert sets and all(set(s) == {"$PARAMETER"} for s in sets)


def test_ids_given_as_a_string_are_refused(frames: Frames) -> None:
    with pytest.raises(TypeError):
        validate_stats(
            frames["keygroups"], frames["edges"], frames["nodes"],
            expected_keygroups="kg-000", known_nodes=NODES,
        )  # fmt: skip


def test_an_import_that_exits_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyspark without its connect extras calls sys.exit(0) while GE imports it under `python -c`.

    The pinned set ships those extras, so the exit is simulated: the stage must raise, never end
    the process "successfully" with nothing validated.
    """
    real_import = builtins.__import__

    def exiting_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] == "great_expectations":
            raise SystemExit(0)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(ge, "_ENGINES", {})
    monkeypatch.setattr(builtins, "__import__", exiting_import)
    with pytest.raises(RuntimeError, match="python -c"):
        validate_stats(
            pd.DataFrame(), pd.DataFrame(), pd.DataFrame(),
            expected_keygroups=["kg"], known_nodes=["n"],
        )  # fmt: skip
