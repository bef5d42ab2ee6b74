"""Herding's metrics on hand-made assignments, and its lower bounds against brute force."""

from __future__ import annotations

import pytest
from herding_testlib import brute_force, qa_state, tiny
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.herding import metrics as hm


def test_traffic_ships_a_source_once_per_node_that_reads_it() -> None:
    # q0, q1 read s0 on n0 (s0 once); q2 reads s0, s1 on n1: 3 + 3 + 5 = 11
    state = qa_state([[0], [0], [0, 1]], [3.0, 5.0], 2, current=[0, 0, 1])
    a = dict(state.assignment)
    assert hm.stream_traffic(state, a) == 11.0
    assert hm.replication_factor(state, a) == pytest.approx(11.0 / 8.0)
    assert hm.query_balance(state, a) == pytest.approx(2 / 1.5)
    assert hm.traffic_lower_bound(state) == 8.0
    all_on_one = {q: "n0" for q in a}
    assert hm.stream_traffic(state, all_on_one) == 8.0
    assert hm.query_balance(state, all_on_one) == pytest.approx(2.0)


def test_balance_is_capacity_weighted() -> None:
    state = qa_state([[0]] * 3, [1.0], 2, current=[0, 0, 1], caps=[2.0, 1.0])
    assert hm.query_balance(state, dict(state.assignment)) == pytest.approx(1.0)


def test_capacity_bound_counts_the_nodes_a_popular_source_needs() -> None:
    # six readers of s0, caps ⌊1.0·6/3⌋ = 2 each: s0 must reach three nodes
    state = qa_state([[0]] * 6, [2.0], 3, current=[0, 0, 1, 1, 2, 2])
    assert hm.traffic_lower_bound(state) == 2.0
    assert hm.traffic_lower_bound(state, nu=0.0) == 6.0
    assert hm.stream_traffic(state, dict(state.assignment)) == 6.0


@settings(max_examples=60, deadline=None)
@given(case=tiny())
def test_lower_bounds_never_exceed_the_brute_force_optimum(case: tuple) -> None:
    subs, rates, k = case
    state = qa_state(subs, rates, k)
    opt = brute_force(state, 0.05)
    assert hm.traffic_lower_bound(state) <= opt + 1e-9
    assert hm.traffic_lower_bound(state, nu=0.05) <= opt + 1e-9


@settings(max_examples=80, deadline=None)
@given(case=tiny(max_n=8, max_k=4), data=st.data())
def test_every_undo_at_once_equals_the_undone_assignment_evaluated_afresh(
        case: tuple, data: st.DataObject) -> None:
    """`undo_traffic` (one count of readers for all moves) gives, per move, exactly the traffic
    of the plan with that move alone undone, on quarter rates (exact sums)."""
    subs, _, k = case
    rates = data.draw(st.lists(st.integers(0, 40).map(lambda x: x / 4), min_size=4, max_size=4))
    n = len(subs)
    cur = data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    after = data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    state = qa_state(subs, rates, k, current=cur)
    plan = {f"q{i:02d}": f"n{j}" for i, j in enumerate(after)}
    moves = [(u, state.assignment[u]) for u in sorted(plan) if plan[u] != state.assignment[u]]
    got = hm.undo_traffic(state, plan, moves)
    assert set(got) == {u for u, _ in moves}
    for unit, src in moves:
        assert got[unit] == (hm.stream_traffic(state, {**plan, unit: src}),
                             hm.stream_traffic(state, plan))
