"""The top-k communication contract: honest collocation, refusal of bad totals, the replay's landing.

- a unit's heaviest k pairs plus the total of the rest give exactly the full collocation factor
  when k covers every pair, and never more than it otherwise (dropped traffic counts as remote);
- the plan's path (comm_totals + comm_stats -> `dropped_frame` -> `with_dropped`) carries the
  same dropped rates the contract dropped;
- GE refuses landed pairs above the declared total and negative totals, naming the rows; the
  model refuses a negative dropped rate naming the unit;
- the replay runtime lands at most k pairs per unit, plus every unit's total.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.facets.comm import dropped_frame, with_dropped
from jobs.validate.suites import validate_comm_totals
from placement.comm import CommEdges
from runtime.replay.source import landing_tables
from schemas.landing import COMM_TOTALS, EDGES
from schemas.topk import heaviest_pairs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime" / "replay"))
from test_replay_costs import hand_engine

UNITS = [f"u{i}" for i in range(8)]


@st.composite
def full_edges(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (src, dst) pairs with tuple counts, and a node per unit."""
    pairs = draw(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), min_size=1,
                          max_size=40, unique=True))
    tuples = draw(st.lists(st.integers(0, 1000), min_size=len(pairs), max_size=len(pairs)))
    node = draw(st.lists(st.integers(0, 2), min_size=8, max_size=8))
    src, dst = (np.array(c, np.int64) for c in zip(*pairs, strict=True))
    return src, dst, np.array(tuples, np.int64), np.array(node, np.int64)


def _topk_comm(src: np.ndarray, dst: np.ndarray, tuples: np.ndarray, k: int) -> CommEdges:
    keep, total = heaviest_pairs(src, dst, tuples, k)
    inter = keep & (src != dst)
    kept = np.bincount(src[inter], weights=tuples[inter], minlength=len(total))
    names = np.array(UNITS, dtype=object)
    return CommEdges.from_columns(names[src[keep]], names[dst[keep]],
                                  tuples[keep].astype(float),
                                  dropped=(names[:len(total)], total - kept))


def _node_of(comm: CommEdges, node: np.ndarray) -> np.ndarray:
    return np.array([node[UNITS.index(u)] for u in comm.units], np.int64)


@settings(max_examples=200, deadline=None)
@given(edges=full_edges(), k=st.integers(1, 10))
def test_topk_collocation_equals_the_full_one_when_k_covers_all_pairs_and_never_exceeds_it(
        edges: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], k: int) -> None:
    src, dst, tuples, node = edges
    names = np.array(UNITS, dtype=object)
    full = CommEdges.from_columns(names[src], names[dst], tuples.astype(float))
    want = full.collocation(_node_of(full, node))
    degree = int(np.bincount(src[src != dst], minlength=1).max()) if (src != dst).any() else 0
    covering = _topk_comm(src, dst, tuples, max(degree, 1))
    assert not covering.has_dropped
    assert covering.collocation(_node_of(covering, node)) == want
    top = _topk_comm(src, dst, tuples, k)
    assert top.collocation(_node_of(top, node)) <= want + 1e-9
    kept_pairs = int((heaviest_pairs(src, dst, tuples, k)[0] & (src != dst)).sum())
    assert kept_pairs <= k * len(set(src.tolist()))


@settings(max_examples=100, deadline=None)
@given(edges=full_edges(), k=st.integers(1, 4))
def test_the_plans_path_carries_the_dropped_rates_of_the_contract(
        edges: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], k: int) -> None:
    src, dst, tuples, _ = edges
    keep, total = heaviest_pairs(src, dst, tuples, k)
    names = np.array(UNITS, dtype=object)
    stats = pd.DataFrame({"src_keygroup": names[src[keep]], "dst_keygroup": names[dst[keep]],
                          "tuples": tuples[keep]})
    has = np.flatnonzero(np.bincount(src, minlength=len(total))[:len(total)] > 0)
    totals = pd.DataFrame({"src_keygroup": names[has], "tuples": total[has]})
    frame = dropped_frame(totals, stats)
    assert (frame["dropped_tuples"] >= 0).all()
    kept = CommEdges.from_columns(stats["src_keygroup"], stats["dst_keygroup"],
                                  stats["tuples"].to_numpy(float) * 1000.0 / 300_000.0)
    comm = with_dropped(kept, frame, 300_000.0)
    want = _topk_comm(src, dst, tuples, k)
    assert comm.dropped_of() == pytest.approx(
        {u: v * 1000.0 / 300_000.0 for u, v in want.dropped_of().items()})


def test_pairs_above_the_declared_total_and_negative_totals_are_refused_naming_the_rows() -> None:
    stats = pd.DataFrame({"src_keygroup": ["a", "a", "b"], "dst_keygroup": ["b", "c", "c"],
                          "tuples": [50, 60, 5]})
    totals = pd.DataFrame({"job_id": "j", "period_end": pd.Timestamp("2026-01-01", tz="UTC"),
                           "src_keygroup": ["a", "b", "c"], "tuples": [100, 5, -3]})
    report = validate_comm_totals(dropped_frame(totals, stats), running_units={"a", "b", "c"})
    assert not report.success
    by_rule = {(f.column, f.expectation): f for f in report.failures}
    over = by_rule[("dropped_tuples", "expect_column_values_to_be_between")]
    # a's pairs (110) exceed its total (100); c's total is negative (its dropped share too)
    assert over.unexpected_count == 2
    assert [r["src_keygroup"] for r in over.rows] == ["a", "c"]
    assert "must not exceed its declared total" in over.rule and over.fix
    negative = by_rule[("tuples", "expect_column_values_to_be_between")]
    assert negative.rows[0]["src_keygroup"] == "c"
    good = validate_comm_totals(dropped_frame(totals.iloc[:2].assign(tuples=[110, 5]), stats),
                                running_units={"a", "b", "c"})
    assert good.success, good.failures


def test_a_negative_dropped_rate_is_refused_naming_the_unit() -> None:
    with pytest.raises(ValueError, match=r"unit 'b': the rate of its dropped pairs must be a "
                                         r"finite number >= 0, got -1.0"):
        CommEdges.from_columns(["a"], ["b"], [1.0], dropped=(["b"], [-1.0]))


def test_the_replay_lands_k_pairs_per_unit_and_every_units_total() -> None:
    engine = hand_engine()
    period = engine.step()
    src = np.array([0, 0, 0, 1, 1, 2], np.int64)
    dst = np.array([1, 2, 3, 2, 3, 3], np.int64)
    tuples = np.array([5, 9, 7, 1, 2, 4], np.int64)
    m = replace(period, edge_src=src, edge_dst=dst, edge_tuples=tuples, edge_bytes=tuples * 10)
    end = datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)
    full = landing_tables(m, engine.layout, end, 1.0)  # top_k 0: every pair, no totals
    assert COMM_TOTALS not in full and full[EDGES].num_rows == 6
    small = landing_tables(m, engine.layout, end, 1.0, top_k=5)  # k covers every unit
    assert COMM_TOTALS not in small and small[EDGES].num_rows == 6
    top = landing_tables(m, engine.layout, end, 1.0, top_k=1)
    edges = top[EDGES].to_pydict()
    names = engine.layout.names
    assert list(zip(edges["src_keygroup"], edges["dst_keygroup"], edges["tuples"],
                    strict=True)) == [(names[0], names[2], 9), (names[1], names[3], 2),
                                      (names[2], names[3], 4)]
    totals = top[COMM_TOTALS].to_pydict()
    assert dict(zip(totals["src_keygroup"], totals["tuples"], strict=True)) == {
        names[0]: 21, names[1]: 3, names[2]: 4}


def test_the_replay_sources_comm_top_k_is_read_and_checked() -> None:
    from runtime.replay.spec import ReplaySpec
    from schemas.topk import DEFAULT_TOP_K

    spec = ReplaySpec.from_mapping({"kind": "replay", "job": 2, "comm_top_k": 16}, job_id="j")
    assert spec.comm_top_k == 16
    assert ReplaySpec.from_mapping({"kind": "replay", "job": 2}, job_id="j").comm_top_k == \
        DEFAULT_TOP_K
    with pytest.raises(ValueError, match="comm_top_k must be an integer between 0 and 100000"):
        ReplaySpec.from_mapping({"kind": "replay", "job": 2, "comm_top_k": -1}, job_id="j")
