"""Validation at the cost of aggregates: a table given as Arrow is judged by its witness rows
(jobs/validate/witness.py), with the same verdicts and the same named rows as a run over all."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from period_frames import KEYGROUPS, NODES, clean_edges, clean_keygroups, clean_nodes
from test_validation import CASES

from jobs.validate.suites import ValidationReport, load_suite, validate_stats
from jobs.validate.witness import DECIDED_BY, witnesses
from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS

Frames = dict[str, pd.DataFrame]


def _run(frames: Frames, arrow: bool, keygroups: list[str] = KEYGROUPS) -> ValidationReport:
    data = {k: pa.Table.from_pandas(v, preserve_index=False) if arrow else v
            for k, v in frames.items()}
    return validate_stats(data["keygroups"], data["edges"], data["nodes"],
                          expected_keygroups=keygroups, known_nodes=NODES)


def _clean() -> Frames:
    return {"keygroups": clean_keygroups(), "edges": clean_edges(), "nodes": clean_nodes()}


def test_every_rule_of_the_stats_suites_is_decided_by_witnesses() -> None:
    for table in (KEYGROUP_STATS, COMM_STATS, NODE_STATS):
        assert {e["type"] for e in load_suite(table.name)["expectations"]} <= DECIDED_BY.keys()


# every comm_stats case (the table read as Arrow), and one of each kind of the other tables
_ARROW_CASES = [c for c in CASES if CASES[c][1] == COMM_STATS.name] + [
    "duplicate keygroup", "NaN cpu is null", "+inf load", "capacity 0", "null period_end (NaT)"]


@pytest.mark.parametrize("case", _ARROW_CASES)
def test_arrow_tables_give_the_very_report_of_all_rows(case: str) -> None:
    frames = _clean()
    CASES[case][0](frames)
    whole, witnessed = _run(frames, arrow=False), _run(frames, arrow=True)
    assert not witnessed.success
    assert witnessed.to_dict() == whole.to_dict()


def test_a_clean_period_passes_on_its_witnesses() -> None:
    assert _run(_clean(), arrow=True).success


def _edges(n_units: int, fanout: int) -> pd.DataFrame:
    units = [f"kg-{i:06d}" for i in range(n_units)]
    src = np.repeat(np.arange(n_units), fanout)
    dst = (src + np.tile(np.arange(1, fanout + 1), n_units)) % n_units
    n = len(src)
    return pd.DataFrame({
        "job_id": ["job-1"] * n, "period_end": [pd.Timestamp("2024-05-01 12:05:00")] * n,
        "src_keygroup": np.array(units, dtype=object)[src],
        "dst_keygroup": np.array(units, dtype=object)[dst],
        "tuples": np.arange(n, dtype=np.int64), "bytes": np.arange(n, dtype=np.int64) * 64,
        "tuples_per_s": np.linspace(0.0, 50.0, n)})


def test_a_bad_row_in_a_large_batch_is_still_named() -> None:
    """200,000 edges, one of them negative: GE reads O(units) witness rows, finds the table
    bad, and the refusal names that row (and only it) as a run over every row does."""
    units = 5_000
    frames = _clean()
    edges = _edges(units, 40)
    bad = 123_457
    edges.loc[bad, "tuples_per_s"] = -2.5
    table = pa.Table.from_pandas(edges, preserve_index=False)
    ids = [f"kg-{i:06d}" for i in range(units)]
    rows = witnesses(table, load_suite(COMM_STATS.name))
    assert rows is not None and bad in rows.to_pylist() and len(rows) <= 2 * units + 20
    report = validate_stats(frames["keygroups"], table, frames["nodes"],
                            expected_keygroups=[*KEYGROUPS, *ids], known_nodes=NODES)
    failures = [f for f in report.failures if f.table == COMM_STATS.name]
    assert len(failures) == 1 and failures[0].column == "tuples_per_s"
    assert failures[0].unexpected_count == 1
    assert failures[0].rows[0]["src_keygroup"] == edges.loc[bad, "src_keygroup"]
    assert failures[0].rows[0]["dst_keygroup"] == edges.loc[bad, "dst_keygroup"]
    assert "-2.5" in report.summary()


_MUTATIONS = st.lists(st.tuples(
    st.sampled_from(["src_keygroup", "dst_keygroup", "tuples", "bytes", "tuples_per_s",
                     "duplicate"]),
    st.integers(0, 10_000),
    st.sampled_from([None, float("nan"), -1.0, float("inf"), 2e18, "ghost", "bad id!", 0.0])),
    max_size=3)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(units=st.integers(2, 40), fanout=st.integers(1, 3), mutations=_MUTATIONS)
def test_witnesses_decide_exactly_as_all_rows(units: int, fanout: int,
                                              mutations: list[tuple[str, int, Any]]) -> None:
    """For random edge tables with random bad values (nulls, NaN, negatives, inf, too large,
    unknown or malformed ids, repeated pairs) the witnessed run reports what GE reports over
    every row."""
    edges = _edges(units, min(fanout, units - 1))
    for column, at, value in mutations:
        row = at % len(edges)
        if column == "duplicate":
            edges = pd.concat([edges, edges.iloc[[row]]], ignore_index=True)
        elif column.endswith("keygroup"):
            edges[column] = edges[column].astype(object)
            edges.loc[row, column] = None if isinstance(value, float) and value != value else (
                value if isinstance(value, str) or value is None else str(value))
        elif not isinstance(value, str):
            edges[column] = edges[column].astype("float64")
            edges.loc[row, column] = value
    ids = [f"kg-{i:06d}" for i in range(units)]
    frames = {**_clean(), "edges": edges}
    whole = _run(frames, arrow=False, keygroups=[*KEYGROUPS, *ids])
    witnessed = _run(frames, arrow=True, keygroups=[*KEYGROUPS, *ids])
    assert witnessed.to_dict() == whole.to_dict()
