"""The exact MILP against brute force on tiny instances, and its certified bound."""

from __future__ import annotations

from herding_testlib import brute_force, qa_state, tiny
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.model import Budget, SolverStatus
from placement.registry import get_strategy


@settings(max_examples=30, deadline=None)
@given(case=tiny(max_n=6, max_k=3), nu=st.sampled_from([0.0, 0.05, 0.5]))
def test_exact_milp_matches_brute_force(case: tuple, nu: float) -> None:
    subs, rates, k = case
    state = qa_state(subs, rates, k)
    plan = get_strategy("herding_exact")(state, Budget(), nu=nu, time_limit_s=5.0)
    opt = brute_force(state, nu)
    assert plan.status is SolverStatus.OPTIMAL
    solve = plan.phase("solve")  # HiGHS's run, timed as data on the plan
    assert solve is not None and solve.seconds > 0 and solve.outcome in ("optimal", "time_limit")
    assert abs(plan.facet_metrics["stream_traffic"] - opt) <= 1e-6 * max(1.0, opt)
    assert plan.facet_metrics["traffic_lower_bound"] <= opt + 1e-6 * max(1.0, opt)


@settings(max_examples=20, deadline=None)
@given(case=tiny(max_n=6, max_k=3), homes=st.lists(st.integers(0, 2), min_size=6, max_size=6),
       moves=st.integers(0, 2))
def test_exact_keeps_the_budget_and_beats_ic(case: tuple, homes: list[int], moves: int
                                             ) -> None:
    subs, rates, k = case
    state = qa_state(subs, rates, k, current=[h % k for h in homes[:len(subs)]])
    budget = Budget(max_migrations=moves)
    plan = get_strategy("herding_exact")(state, budget, time_limit_s=5.0)
    ic = get_strategy("herding_offline")(state, budget, algorithm="ic")
    assert plan.migrations <= moves
    assert plan.facet_metrics["stream_traffic"] <= ic.facet_metrics["stream_traffic"] + 1e-9
    assert plan.facet_metrics["traffic_lower_bound"] <= plan.facet_metrics["stream_traffic"] \
        + 1e-9


def test_exact_refuses_large_instances_and_keeps_ic() -> None:
    state = qa_state([[0]] * 5, [1.0], 2)
    plan = get_strategy("herding_exact")(state, Budget(), max_units=3)
    assert plan.status is SolverStatus.HEURISTIC and "max_units" in plan.message
