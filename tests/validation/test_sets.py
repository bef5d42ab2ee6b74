"""The set rules over run-time ids, checked over whole columns (jobs/validate/sets.py), give the
very reports GE gives when it judges them itself (`sets_by_ge=True`, validate as it ran before):
same verdict, same failures in the same order, same counts, same named rows, same missing ids."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from period_frames import KEYGROUPS, NODES, clean_edges, clean_keygroups, clean_nodes

from jobs.validate import ge
from jobs.validate.sets import SET_TYPES, set_rules
from jobs.validate.suites import ValidationReport, load_suite, validate_stats
from schemas.tables import COMM_STATS, COMM_TOTALS, KEYGROUP_STATS, NODE_STATS, SUBSCRIPTIONS

Frames = dict[str, pd.DataFrame]
_IDS = [*KEYGROUPS, "kg-stray", "ghost", "kg-999"]  # the job's ids and a few strangers
_NODE_IDS = [*NODES, "node-x"]


def _both(frames: Frames, expected: list[str], nodes: list[str], arrow: bool
          ) -> tuple[ValidationReport, ValidationReport]:
    edges: pd.DataFrame | pa.Table = frames["edges"]
    if arrow:
        edges = pa.Table.from_pandas(frames["edges"], preserve_index=False)
    runs = [validate_stats(frames["keygroups"], edges, frames["nodes"],
                           expected_keygroups=expected, known_nodes=nodes, sets_by_ge=by_ge)
            for by_ge in (False, True)]
    return runs[0], runs[1]


_CELL = st.one_of(st.none(), st.sampled_from(_IDS))
_EDITS = st.lists(st.one_of(
    st.tuples(st.just("keygroups"), st.sampled_from(["keygroup"]), st.integers(0, 99), _CELL),
    st.tuples(st.just("keygroups"), st.just("node"), st.integers(0, 99),
              st.one_of(st.none(), st.sampled_from(_NODE_IDS))),
    st.tuples(st.just("edges"), st.sampled_from(["src_keygroup", "dst_keygroup"]),
              st.integers(0, 99), _CELL),
    st.tuples(st.just("nodes"), st.just("node"), st.integers(0, 99),
              st.one_of(st.none(), st.sampled_from(_NODE_IDS))),
    st.tuples(st.sampled_from(["keygroups", "edges", "nodes"]), st.just("drop"),
              st.integers(0, 99), st.none()),
    st.tuples(st.sampled_from(["keygroups", "edges"]), st.just("repeat"),
              st.integers(0, 99), st.none()),
), max_size=5)


def _edited(edits: list[tuple[str, str, int, Any]]) -> Frames:
    frames = {"keygroups": clean_keygroups(), "edges": clean_edges(), "nodes": clean_nodes()}
    for table, column, at, value in edits:
        frame = frames[table]
        if frame.empty:
            continue
        row = frame.index[at % len(frame)]
        if column == "drop":
            frames[table] = frame.drop(index=row)
        elif column == "repeat":
            frames[table] = pd.concat([frame, frame.loc[[row]]], ignore_index=True)
        else:
            frame.loc[row, column] = value
    return frames


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=_EDITS, expected=st.sets(st.sampled_from(_IDS), max_size=len(_IDS)),
       extra=st.booleans(), nodes=st.sets(st.sampled_from(_NODE_IDS), min_size=1),
       arrow=st.booleans())
def test_set_rules_refuse_exactly_what_ge_refuses(
        edits: list[tuple[str, str, int, Any]], expected: set[str], extra: bool,
        nodes: set[str], arrow: bool) -> None:
    """Random good and bad periods (ids dropped, repeated, nulled, unknown; key groups or nodes
    expected but absent; comm_stats as pandas or Arrow): the reports are the same, and a good
    period passes both ways."""
    frames = _edited(edits)
    ids = sorted(set(KEYGROUPS) | expected) if extra else sorted(expected or KEYGROUPS)
    vectorised, by_ge = _both(frames, ids, sorted(nodes), arrow)
    assert vectorised.to_dict() == by_ge.to_dict()
    assert vectorised.summary() == by_ge.summary()


@pytest.mark.parametrize("arrow", [False, True], ids=["pandas", "arrow"])
def test_a_clean_period_passes_and_bad_ids_are_named(arrow: bool) -> None:
    frames = _edited([])
    assert _both(frames, KEYGROUPS, NODES, arrow)[0].success
    frames = _edited([("edges", "src_keygroup", 3, "ghost"), ("keygroups", "drop", 7, None),
                      ("keygroups", "node", 2, "node-x")])
    vectorised, by_ge = _both(frames, KEYGROUPS, NODES, arrow)
    assert vectorised.to_dict() == by_ge.to_dict()
    named = {(f.table, f.expectation, f.column): f for f in vectorised.failures}
    edge = named[COMM_STATS.name, "expect_column_values_to_be_in_set", "src_keygroup"]
    assert edge.rows == ({"dst_keygroup": "kg-004", "src_keygroup": "ghost"},)
    assert named[KEYGROUP_STATS.name, "expect_column_distinct_values_to_equal_set",
                 "keygroup"].missing == ("kg-007",)
    assert named[KEYGROUP_STATS.name, "expect_column_values_to_be_in_set", "node"].rows == (
        {"keygroup": "kg-002", "node": "node-x"},)


def test_ge_is_given_no_run_time_set() -> None:
    """GE's suites keep no rule over a run-time set, so it copies no list of ids; every such
    rule of every suite is one of the three types checked over columns."""
    engine = ge.engine()
    for table in (*ge.STATS_TABLES, SUBSCRIPTIONS, COMM_TOTALS):
        spec = load_suite(table.name)
        taken = set_rules(spec)
        assert {r.kind for r in taken} <= SET_TYPES
        with_sets = [r for r in spec["expectations"]
                     if isinstance((r.get("kwargs") or {}).get("value_set"), dict)]
        assert len(taken) == len(with_sets) > 0
        assert engine._needs[table.name] == frozenset()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(units=st.lists(st.one_of(st.none(), st.sampled_from(_IDS)), max_size=8),
       running=st.sets(st.sampled_from(_IDS), max_size=6))
def test_facet_set_rules_match_ge(units: list[str | None], running: set[str]) -> None:
    """The facet tables' set rules (a unit of the period's running units) too: comm_totals."""
    frame = pd.DataFrame({
        "job_id": ["job-1"] * len(units), "period_end": [pd.Timestamp("2024-05-01")] * len(units),
        "src_keygroup": units, "tuples": [10] * len(units), "kept_tuples": [5] * len(units),
        "dropped_tuples": [5] * len(units)})
    frame = ge.with_all_columns(frame, COMM_TOTALS)
    params = {"running_units": sorted(running)}
    assert (ge.engine().run(COMM_TOTALS, frame, params)
            == ge.engine(sets_by_ge=True).run(COMM_TOTALS, frame, params))


def test_a_table_without_its_key_names_rows_by_label() -> None:
    """A period lacking its key column is reported (each bad row by its label and value), not
    a crash: GE then gives row labels, not key dicts, and the translation took them for dicts."""
    nodes = clean_nodes().drop(columns=["node"]).assign(cpu_ms=-1.0)
    nodes.index = pd.Index([7, 8, 9])
    failures = ge.engine().run(NODE_STATS, nodes, {"known_nodes": NODES})
    between = [f for f in failures if f.column == "cpu_ms"]
    assert between and between[0].rows[0] == {"row": 7, "cpu_ms": -1.0}
    assert failures == ge.engine(sets_by_ge=True).run(NODE_STATS, nodes, {"known_nodes": NODES})


@pytest.mark.parametrize("arrow", [False, True], ids=["pandas", "arrow"])
def test_the_reference_engine_is_not_used_for_a_well_formed_period(
        arrow: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A period whose id columns are present is judged by the column checks, never handed to
    the every-rule-by-GE reference (which copies the ids per expectation and metric)."""
    reference = ge.engine(sets_by_ge=True)

    def refuse(*_: Any, **__: Any) -> list[Any]:
        raise AssertionError("the reference engine judged a well-formed period")

    monkeypatch.setattr(reference, "run", refuse)
    monkeypatch.setattr(reference, "run_arrow", refuse)
    frames = _edited([("edges", "src_keygroup", 3, "ghost")])
    edges: pd.DataFrame | pa.Table = frames["edges"]
    if arrow:
        edges = pa.Table.from_pandas(edges, preserve_index=False)
    report = validate_stats(frames["keygroups"], edges, frames["nodes"],
                            expected_keygroups=KEYGROUPS, known_nodes=NODES)
    assert [f.column for f in report.failures] == ["src_keygroup"]
