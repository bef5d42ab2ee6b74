"""Healing (placement/healing.py): the dead nodes' units all leave, first and within the
budget; only units of the reported nodes move; constraints are kept where a live node allows."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from placement_testlib import make_state

from placement.constraints import raised
from placement.healing import HealingRefused, HealingRequest, heal
from schemas.constraints import Constraints


@settings(max_examples=120, deadline=None)
@given(loads=st.lists(st.floats(0, 40, allow_nan=False), min_size=1, max_size=14),
       nodes=st.integers(2, 5), seed=st.integers(0, 10**6), budget=st.integers(1, 10),
       per_node=st.sampled_from([None, 3, 5]))
def test_a_heal_empties_the_dead_node_within_budget_and_moves_only_reported_units(
        loads: list[float], nodes: int, seed: int, budget: int, per_node: int | None) -> None:
    rng = random.Random(seed)
    state = make_state(loads, [rng.randrange(nodes) for _ in loads], [1.0] * nodes,
                       [False] * nodes)
    if per_node is not None:
        state = replace(state, constraints=Constraints(max_units_per_node=per_node))
    dead = frozenset({"n0"})
    over = frozenset({f"n{rng.randrange(1, nodes)}"})
    stranded = [k for k, n in state.assignment.items() if n == "n0"]
    request = HealingRequest(dead, over, budget)
    if len(stranded) > budget:
        with pytest.raises(HealingRefused, match="more than the healing budget"):
            heal(state, request)
        return
    plan = heal(state, request)
    assert "n0" not in plan.assignment.values()
    assert plan.migrations <= budget and plan.strategy == "healing"
    assert {m.keygroup for m in plan.moves} >= set(stranded)
    assert {m.src for m in plan.moves} <= dead | over  # nothing else moves
    if "no live node keeps every constraint" not in plan.message:
        assert not raised(replace(state, nodes=tuple(
            replace(n, marked_for_removal=n.id in dead) for n in state.nodes)), plan.assignment)


def test_the_dead_units_go_largest_first_to_the_least_loaded_live_node() -> None:
    state = make_state([10.0, 4.0, 1.0, 1.0], [0, 0, 1, 2], [1.0] * 3, [False] * 3)
    plan = heal(state, HealingRequest(frozenset({"n0"}), frozenset(), 2))
    assert plan.assignment == {"g0": "n1", "g1": "n2", "g2": "n1", "g3": "n2"}
    assert plan.after.load_distance < 5.0  # measured over the two nodes left


def test_an_over_capacity_node_sheds_units_with_the_budget_left() -> None:
    state = make_state([30.0, 30.0, 30.0, 5.0, 5.0], [1, 1, 1, 0, 2], [1.0] * 3, [False] * 3)
    plan = heal(state, HealingRequest(frozenset(), frozenset({"n1"}), 1))
    assert plan.migrations == 1 and plan.moves[0].src == "n1"


def test_no_live_node_left_refuses() -> None:
    state = make_state([1.0], [0], [1.0], [False])
    with pytest.raises(HealingRefused, match="no live node"):
        heal(state, HealingRequest(frozenset({"n0"}), frozenset(), 3))
