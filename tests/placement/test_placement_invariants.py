"""Invariants every strategy keeps, and the scale-in behaviour of the MILP (Lemma 1, 4.2)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import make_state, tiny_instances, within_budget
from placement.model import Budget, ClusterState, SolverStatus
from placement.registry import get_strategy

STRATEGIES = ["milp", "flux", "greedy", "random"]


@st.composite
def small_instances(draw: st.DrawFn) -> tuple[ClusterState, Budget]:
    n = draw(st.integers(2, 6))
    g = draw(st.integers(1, 30))
    loads = draw(st.lists(st.floats(0.0, 30.0), min_size=g, max_size=g))
    costs = draw(st.lists(st.floats(0.0, 5.0), min_size=g, max_size=g))
    homes = draw(st.lists(st.integers(0, n - 1), min_size=g, max_size=g))
    caps = draw(st.lists(st.floats(0.25, 4.0), min_size=n, max_size=n))
    marked = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if all(marked):
        marked[-1] = False
    count = draw(st.none() | st.integers(0, 8))
    cost = draw(st.none() | st.floats(0.0, 10.0))
    return make_state(loads, homes, caps, marked, costs), Budget(cost, count)


@pytest.mark.parametrize("name", STRATEGIES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=small_instances())
def test_strategy_invariants(name: str, case: tuple[ClusterState, Budget]) -> None:
    state, budget = case
    plan = get_strategy(name)(state, budget, time_limit_s=2.0, seed=1)
    node_ids = set(state.node_ids)
    assert set(plan.assignment) == {k.id for k in state.keygroups}  # exactly one node each
    assert set(plan.assignment.values()) <= node_ids
    assert within_budget(state, budget, plan.assignment)
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    for move in plan.moves:  # Lemma 1: nothing moves onto a node marked for removal
        assert move.dst not in marked
        assert move.src == state.assignment[move.keygroup] != move.dst
    if name == "milp" and plan.status is not SolverStatus.INFEASIBLE:
        assert plan.lower_bound is not None
        assert plan.lower_bound <= plan.after.load_distance + 1e-6 or marked
        assert plan.after.load_distance <= plan.before.load_distance + 1e-9 or marked
    if plan.status is SolverStatus.INFEASIBLE:
        assert plan.assignment == dict(state.assignment) and plan.message


@st.composite
def scale_in_instances(draw: st.DrawFn) -> tuple[ClusterState, Budget]:
    """Fine-grained load (many small key groups) with one or two nodes marked for removal."""
    a = draw(st.integers(2, 3))
    b = draw(st.integers(1, 2))
    per_a = draw(st.integers(3, 5))
    on_b = draw(st.integers(1, 4))
    homes = [i for i in range(a) for _ in range(per_a)] + [a + (j % b) for j in range(on_b)]
    loads = draw(st.lists(st.floats(0.5, 1.5), min_size=len(homes), max_size=len(homes)))
    state = make_state(loads, homes, [1.0] * (a + b), [False] * a + [True] * b)
    return state, Budget(max_migrations=draw(st.integers(2, 4)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scale_in_instances())
def test_repeated_rounds_empty_b(case: tuple[ClusterState, Budget]) -> None:
    """Lemma 4.2: round after round, the MILP drains every node marked for removal."""
    state, budget = case
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    for _ in range(12):
        if not marked & set(state.assignment.values()):
            break
        plan = get_strategy("milp")(state, budget, candidates="all", time_limit_s=5.0)
        state = replace(state, assignment=plan.assignment)
    assert not marked & set(state.assignment.values())


@pytest.mark.parametrize("name", STRATEGIES)
@settings(max_examples=15, deadline=None)
@given(case=tiny_instances())
def test_zero_budget_means_no_moves(name: str, case: tuple[ClusterState, Budget]) -> None:
    state, _ = case
    for budget in (Budget(max_migrations=0), Budget(max_migration_cost=0.0)):
        plan = get_strategy(name)(state, budget, time_limit_s=1.0)
        assert plan.moves == () and plan.assignment == dict(state.assignment)
