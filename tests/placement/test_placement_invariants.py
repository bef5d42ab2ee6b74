"""The scale-in behaviour of the MILP (Lemma 1, 4.2) and its warm start's invariants.

The invariants every strategy keeps (complete, budget, nothing onto B, a zero budget moves
nothing) are checked for all registered strategies by the verifier (test_verifier.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from placement_testlib import make_state, within_budget

from placement.metrics import max_deviation
from placement.milp.start import exchange_search
from placement.model import Budget, ClusterState, SolverStatus
from placement.registry import get_strategy


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


@st.composite
def scale_in_instances(draw: st.DrawFn) -> tuple[ClusterState, Budget]:
    """Two nodes in A (where draining B never raises d, see below), one or two in B."""
    b = draw(st.integers(1, 2))
    homes = draw(st.lists(st.integers(0, 1 + b), min_size=2, max_size=12))
    loads = draw(st.lists(st.floats(0.5, 3.0), min_size=len(homes), max_size=len(homes)))
    state = make_state(loads, homes, [1.0] * (2 + b), [False, False] + [True] * b)
    return state, Budget(max_migrations=draw(st.integers(1, 3)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scale_in_instances())
def test_repeated_rounds_empty_b(case: tuple[ClusterState, Budget]) -> None:
    """Lemma 4.2: round after round, the MILP drains every node marked for removal.

    With |A| = 2 moving a key group g from B to the less loaded node of A never raises d (that
    node sits at least L_B/2 ≥ g/2 below the mean), and the w_b term makes it strictly better,
    so every round lowers the objective until B is empty.
    """
    state, budget = case
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    for _ in range(30):
        if not marked & set(state.assignment.values()):
            break
        plan = get_strategy("milp")(state, budget, candidates="all", time_limit_s=5.0)
        assert plan.status is SolverStatus.OPTIMAL
        state = replace(state, assignment=plan.assignment)
    assert not marked & set(state.assignment.values())


def test_lemma_4_2_needs_the_w_b_tie_break() -> None:
    """7 equal key groups, A = 2 × 3, one on B: d = 0.5 either way; only w_b drains B."""
    state = make_state([1.0] * 7, [0, 0, 0, 1, 1, 1, 2], [1.0] * 3, [False, False, True])
    budget = Budget(max_migrations=2)
    paper = get_strategy("milp")(state, budget, w_b=0.0, candidates="all")
    ours = get_strategy("milp")(state, budget, candidates="all")
    assert paper.assignment["g6"] == "n2" and paper.after.load_distance == pytest.approx(0.5)
    assert ours.assignment["g6"] != "n2" and ours.after.load_distance == pytest.approx(0.5)


def test_lemma_4_2_fails_for_indivisible_key_groups() -> None:
    """A = 3 × 3 equal key groups, one on B: moving it raises d from 1/3 to 2/3, so the exact
    optimum keeps it on B whatever the budget; the paper's Lemma 4.2 assumes divisible load."""
    state = make_state([1.0] * 10, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3], [1.0] * 4,
                       [False, False, False, True])
    plan = get_strategy("milp")(state, Budget(max_migrations=5), candidates="all")
    assert plan.status is SolverStatus.OPTIMAL
    assert plan.assignment["g9"] == "n3"
    assert plan.after.load_distance == pytest.approx(1 / 3)


@settings(max_examples=150, deadline=None)
@given(case=small_instances())
def test_exchange_search_invariants(case: tuple[ClusterState, Budget]) -> None:
    """The MILP's warm start alone: within budget, nothing onto B, d never worse."""
    state, budget = case
    new = exchange_search(state, budget, state.assignment)
    assert set(new) == {k.id for k in state.keygroups}
    assert within_budget(state, budget, new)
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    assert all(new[k] == state.assignment[k] or new[k] not in marked for k in new)
    assert max_deviation(state, new) <= max_deviation(state, state.assignment) + 1e-9
