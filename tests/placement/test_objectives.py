"""Every strategy declares its objective, and the core's evaluation is the family's own metric.

`placement/objectives.py` evaluates every objective a state's facets allow for any plan; here,
on random states with each strategy's facets (verifier_lib.states), the evaluated number of the
strategy's own objective equals the number its family logs on its own plan, the declared bound
certifies it in the declared direction, and the plan of another family is scored too.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verifier_lib import Case, call_params, states

from placement.model import ClusterState, KeyGroup, Node
from placement.objectives import (
    EVALUATORS,
    bound_value,
    evaluate_objectives,
    objective_of,
    objectives_for,
    plan_value,
)
from placement.registry import get_spec, get_strategy, strategy_names
from placement.sprawl.params import SprawlParams
from schemas.strategies import OBJECTIVES, STRATEGIES

NAMES = strategy_names()
REL = 1e-6


def test_every_registered_strategy_declares_an_objective_that_can_be_evaluated() -> None:
    assert set(STRATEGIES) == set(NAMES)
    assert set(EVALUATORS) == {o.name for o in OBJECTIVES}
    for name in NAMES:
        objective = get_spec(name).objective
        assert objective is STRATEGIES[name].objective is objective_of(name)
        assert objective.name in EVALUATORS and objective.label and objective.unit
        assert objective.direction in ("min", "max")
        # the facet it needs is one the strategy itself needs (or always there)
        assert objective.facet in {*get_spec(name).facets, "utilisation"}, name
        if get_spec(name).guarantee == "exact" and objective.bound is None:
            assert name in ("albic", "albic_many", "herding_exact") or objective.bound, name


def test_an_unknown_strategy_is_named_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown strategy 'nope'; known: albic"):
        objective_of("nope")


def test_a_plain_state_offers_the_utilisation_objectives_only() -> None:
    state = ClusterState((Node("n0"), Node("n1")), (KeyGroup("k1", "op", 10.0),
                                                    KeyGroup("k2", "op", 30.0)),
                         {"k1": "n0", "k2": "n0"})
    assert [o.name for o in objectives_for(state)] == ["load_distance", "utilisation_imbalance"]
    values = evaluate_objectives(state, {"k1": "n0", "k2": "n1"})
    assert values == pytest.approx({"load_distance": 10.0, "utilisation_imbalance": 10.0})


def _close(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= REL * max(1.0, abs(a), abs(b))


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_evaluation_agrees_with_the_familys_own_metric_on_its_own_plans(
        name: str, data: st.DataObject) -> None:
    spec = get_spec(name)
    case: Case = data.draw(states(frozenset(spec.facets), arrivals=spec.places_arrivals))
    params = call_params(name, case)
    plan = get_strategy(name)(case.state, case.budget, **params)
    extra = {"cost_total": SprawlParams(queries=params["queries"])} if name == "sprawl" else {}
    values = evaluate_objectives(case.state, plan.assignment, extra)
    objective = spec.objective
    own = plan_value(objective, plan)
    if objective.facet not in case.state.facets:  # no traffic: nothing to collocate
        assert objective.name == "collocation_factor" and own == 100.0
        return
    assert objective.name in values or own is None, (name, values)
    if own is not None:
        assert _close(values[objective.name], own), (name, values[objective.name], own)
    bound = bound_value(objective, plan)
    if bound is not None and math.isfinite(values[objective.name]):
        value = values[objective.name]
        slack = REL * max(1.0, abs(value))
        if objective.direction == "min" and objective.name != "load_distance":
            assert bound <= value + slack, (name, bound, value)
    # every other objective the facets allow is scored on this plan too
    assert {o.name for o in objectives_for(case.state)} - {"feasible_set_ratio"} <= set(values)
    # before: the family's own before-number, where it logs one (no arrivals)
    if not case.state.arrivals:
        before = evaluate_objectives(case.state, case.state.assignment, extra)
        own_before = plan_value(objective, plan, before=True)
        if own_before is not None:
            assert _close(before[objective.name], own_before), (name, before, own_before)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_plan_of_one_family_is_scored_in_every_familys_objective(data: st.DataObject) -> None:
    """The MILP's plan on a state with every facet: SPRAWL's cost, Herding's traffic, ROD's
    F/F*, collocation and CG's imbalance are all evaluated, each as its family computes it."""
    case: Case = data.draw(states(frozenset({"communication", "sources", "load_model",
                                             "network"}), arrivals=False))
    plan = get_strategy("milp")(case.state, case.budget, time_limit_s=0.5, seed=1)
    values = evaluate_objectives(case.state, plan.assignment,
                                 {"cost_total": SprawlParams(queries=list(case.queries))})
    expected = {o.name for o in OBJECTIVES} - {"feasible_set_ratio"}
    if "communication" not in case.state.facets:  # the forest drawn may have no edge
        expected.discard("collocation_factor")
    assert set(values) >= expected
    sprawl = get_strategy("sprawl")(case.state, case.budget, time_limit_s=0.5,
                                    queries=[dict(q) for q in case.queries])
    # SPRAWL's own cost of the current assignment is what the core evaluates for it too
    if sprawl.facet_before:
        now = evaluate_objectives(case.state, case.state.assignment,
                                  {"cost_total": SprawlParams(queries=list(case.queries))})
        assert _close(now["cost_total"], sprawl.facet_before["cost_total"])
    # SPRAWL, which minimises the cost, is never beaten by the MILP on it (within its gap)
    if sprawl.status.value == "optimal" and math.isfinite(values["cost_total"]):
        assert sprawl.facet_metrics["cost_total"] <= values["cost_total"] * (1 + REL) + REL
