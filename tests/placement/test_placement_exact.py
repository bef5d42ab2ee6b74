"""The MILP is exact: it matches brute-force enumeration on tiny instances."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from placement_testlib import brute_force_min_d, make_state, tiny_instances

from placement.metrics import max_deviation, mean_load
from placement.milp import plan_milp
from placement.model import Budget, ClusterState, SolverStatus


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances())
def test_milp_matches_brute_force(case: tuple[ClusterState, Budget]) -> None:
    state, budget = case
    plan = plan_milp(state, budget, w2=0.0, w_b=0.0, candidates="all", time_limit_s=20)
    full = brute_force_min_d(state, budget, into_b=True)
    if full is None:
        assert plan.status is SolverStatus.INFEASIBLE
        assert plan.assignment == dict(state.assignment)
        return
    assert plan.status is SolverStatus.OPTIMAL, plan.message
    assert abs(max_deviation(state, plan.assignment) - full) <= 1e-6
    assert plan.lower_bound is not None and plan.lower_bound <= full + 1e-6


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
