"""The MILP is exact: it matches brute-force enumeration on tiny instances."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from placement_testlib import brute_force_min_d, make_state, tiny_instances

from placement.metrics import load_distance, max_deviation, mean_load
from placement.milp.bounds import lower_bound_d
from placement.milp.start import exchange_search
from placement.model import Budget, ClusterState, KeyGroup, SolverStatus
from placement.registry import get_strategy

#: the checked strategies (placement/registry.py): a params object or keywords
plan_flux, plan_milp = get_strategy("flux"), get_strategy("milp")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances())
def test_milp_matches_brute_force(case: tuple[ClusterState, Budget]) -> None:
    state, budget = case
    """Where (5) cannot hold, the planner relaxes it: the optimum is then over every plan."""
    plan = plan_milp(state, budget, w2=0.0, w_b=0.0, candidates="all", time_limit_s=20)
    full = brute_force_min_d(state, budget, into_b=True, five=False)
    assert full is not None
    assert plan.status is SolverStatus.OPTIMAL, plan.message
    assert abs(max_deviation(state, plan.assignment) - full) <= 1e-6
    assert plan.lower_bound is not None and plan.lower_bound <= full + 1e-6
    paper = brute_force_min_d(state, budget, into_b=True)
    assert (paper is None) == ("constraint (5) relaxed" in plan.message)
    assert paper is None or abs(paper - full) <= 1e-9


@settings(max_examples=60, deadline=None)
@given(tiny_instances())
def test_lemma1_no_move_into_b_loses_nothing(case: tuple[ClusterState, Budget]) -> None:
    """Lemma 1, checked numerically: forbidding moves onto B never raises the optimal d."""
    state, budget = case
    assert brute_force_min_d(state, budget, into_b=False) == brute_force_min_d(
        state, budget, into_b=True)


def test_default_weights_close_to_lexicographic_optimum() -> None:
    state = make_state([7.0, 3.0, 5.0, 1.0, 4.0], [0, 0, 0, 1, 2], [1.0, 1.0, 2.0],
                       [False, False, False])
    budget = Budget(max_migrations=2)
    best = brute_force_min_d(state, budget, into_b=True)
    plan = plan_milp(state, budget, candidates="all")
    assert best is not None
    assert max_deviation(state, plan.assignment) <= best + 3e-4 * mean_load(state)


def test_cbc_matches_highs() -> None:
    state = make_state([6.0, 2.0, 5.0, 1.0, 4.0, 3.0], [0, 0, 0, 0, 1, 2], [1.0, 1.0, 1.0],
                       [False, False, True])
    budget = Budget(max_migrations=3)
    highs = plan_milp(state, budget, w2=0.0, w_b=0.0, candidates="all")
    cbc = plan_milp(state, budget, w2=0.0, w_b=0.0, candidates="all", solver="cbc")
    best = brute_force_min_d(state, budget, into_b=True)
    assert best is not None
    assert abs(highs.after.load_distance - cbc.after.load_distance) <= 1e-6
    assert abs(max_deviation(state, cbc.assignment) - best) <= 1e-6


@settings(max_examples=80, deadline=None)
@given(tiny_instances(max_nodes=4, max_kgs=5))
def test_counting_bound_is_a_lower_bound(case: tuple[ClusterState, Budget]) -> None:
    """milp/bounds.py never exceeds the true optimum (moves onto B allowed, as in the paper)."""
    state, budget = case
    cap = budget.max_migration_cost

    def movable(kg: KeyGroup) -> bool:
        return budget.max_migrations != 0 and cap != 0 and (cap is None or kg.migration_cost <= cap)

    full = brute_force_min_d(state, budget, into_b=True)
    bound = lower_bound_d(state, budget, movable)
    assert bound >= 0.0
    if full is not None:
        assert bound <= full + 1e-7


def _needs_an_exchange() -> ClusterState:
    """n0 = {3.0, 2.0} (5), n1 = {2.5, 1.5} (4): mean 4.5, LD 0.5; any single move overshoots."""
    return make_state([3.0, 2.0, 2.5, 1.5], [0, 0, 1, 1], [1.0, 1.0], [False, False])


def test_exchange_needs_two_migrations_hand_computed() -> None:
    state = _needs_an_exchange()
    two = exchange_search(state, Budget(max_migrations=2), state.assignment)
    assert load_distance(state, two) == pytest.approx(0.0)  # 3.0 <-> 2.5: both at 4.5
    assert two == {"g0": "n1", "g1": "n0", "g2": "n0", "g3": "n1"}
    one = exchange_search(state, Budget(max_migrations=1), state.assignment)
    assert one == dict(state.assignment)
    assert plan_flux(state, Budget(max_migrations=2)).moves == ()  # Flux moves only one way


def test_window_bound_certifies_that_one_move_cannot_help() -> None:
    """The window rule: n0 may shed at most 0.5 + δ < 2.0 (its smallest key group), so fixing
    it takes an exchange; with one migration the optimum is the current LD, 0.5."""
    state = _needs_an_exchange()
    budget = Budget(max_migrations=1)
    assert lower_bound_d(state, budget, lambda kg: True) == pytest.approx(0.5, abs=1e-6)
    plan = plan_milp(state, budget)
    assert plan.status is SolverStatus.OPTIMAL and plan.moves == ()
    assert plan.lower_bound == pytest.approx(0.5, abs=1e-6)
    two = plan_milp(state, Budget(max_migrations=2))
    assert two.after.load_distance == pytest.approx(0.0, abs=1e-9) and two.migrations == 2


def test_heterogeneous_hand_computed() -> None:
    """n0 has capacity 2, n1 capacity 1; loads 4, 2, 2, 1, 1 all on n1. mean = 10 / 3.

    n0 raw 7 (utilisation 3.5) and n1 raw 3 give LD = 1/3; n0 raw 6 gives |3 − 10/3| = 1/3 on
    n0 but |4 − 10/3| = 2/3 on n1; so the optimum is {4, 2, 1} | {2, 1}, LD 1/3.
    """
    state = make_state([4.0, 2.0, 2.0, 1.0, 1.0], [1] * 5, [2.0, 1.0], [False, False])
    plan = plan_milp(state, Budget(), candidates="all")
    assert plan.status is SolverStatus.OPTIMAL
    assert plan.after.load_distance == pytest.approx(1 / 3, abs=1e-6)
    on_n0 = sorted(k.load for k in state.keygroups if plan.assignment[k.id] == "n0")
    assert on_n0 == [1.0, 2.0, 4.0]
    assert plan.lower_bound is not None and plan.lower_bound <= 1 / 3 + 1e-6
