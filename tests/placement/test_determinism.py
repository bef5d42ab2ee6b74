"""Deterministic plans: the same inputs, budget, params and time limit give the same plan.

For every registered strategy on random states with its facets (verifier_lib.states): planning
twice gives identical moves and assignment, and the plan records what made it deterministic
(placement/determinism.py). A plan a clock cut says so; a node budget (HiGHS mip_max_nodes)
makes a MILP that would otherwise run into its clock stop at the same point every time.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verifier_lib import Case, call_params, states

from placement.model import Budget, ClusterState
from placement.registry import get_spec, get_strategy, strategy_names
from placement.workloads.synthetic import synthetic_state

NAMES = strategy_names()


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_planning_twice_gives_the_same_moves(name: str, data: st.DataObject) -> None:
    spec = get_spec(name)
    case: Case = data.draw(states(frozenset(spec.facets), arrivals=spec.places_arrivals))
    params = {**call_params(name, case), "time_limit_s": 20.0}  # no clock cut on tiny states
    first = get_strategy(name)(case.state, case.budget, **params)
    second = get_strategy(name)(case.state, case.budget, **params)
    assert first.moves == second.moves and dict(first.assignment) == dict(second.assignment)
    assert first.status is second.status
    assert first.determinism == second.determinism
    assert first.determinism.startswith("deterministic: seed 1"), first.determinism


def _big() -> tuple[ClusterState, Budget]:
    return synthetic_state(nodes=6, keygroups=90, operators=3, varies=0.6, seed=3), Budget(max_migrations=12)


def test_a_clock_cut_is_recorded_and_a_node_budget_makes_the_milp_reproducible() -> None:
    state, budget = _big()
    milp = get_strategy("milp")
    cut = milp(state, budget, time_limit_s=0.01, candidates="all")
    assert cut.determinism.startswith("clock-limited: the time limit stopped "), cut.determinism
    assert "node_limit" in cut.determinism  # the fix is named
    plans = [milp(state, budget, time_limit_s=60.0, candidates="all", node_limit=1, seed=4)
             for _ in range(2)]
    assert plans[0].moves == plans[1].moves
    assert plans[0].determinism == plans[1].determinism
    assert plans[0].determinism.startswith("deterministic: seed 4, HiGHS node budget 1")
    assert plans[0].phase("solve") is not None
    assert plans[0].phase("solve").outcome == "node_limit"  # type: ignore[union-attr]
    assert plans[0].to_dict()["determinism"] == plans[0].determinism
