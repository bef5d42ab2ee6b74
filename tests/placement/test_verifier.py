"""The verifier: every registered strategy, on random states with every facet it declares.

Each strategy is drawn states with exactly its facets (sources & subscriptions, streams & load
models, networks with pinned units and latency bounds, communication), with arrivals when it
places them, unequal capacities and nodes marked for removal every time; each plan is checked
by `verifier_lib.verify` (complete, live nodes, budget, B drained or explained, honest status,
bound ≤ objective, facet metrics consistent), and must not change when the same instance is
listed in another order. Inputs a strategy cannot handle are refused by the registry's
pre-check with what/where/fix. A strategy registered with a facet no generator draws fails
`test_every_facet_has_a_generator`.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verifier_lib import Case, call_params, shuffled, states, verify

from placement.facets import FACET_NAMES
from placement.model import Budget, ClusterState, KeyGroup, Node
from placement.registry import StrategyInputError, get_spec, get_strategy, strategy_names

#: the facets `verifier_lib.states` draws ("utilisation" is always there)
GENERATED = frozenset({"communication", "sources", "load_model", "network", "arrivals",
                       "utilisation"})
NAMES = strategy_names()


def test_every_facet_has_a_generator() -> None:
    """A strategy registered with a facet `states` cannot draw fails here (and every
    registered strategy is a parameter of the verifier: NAMES is the registry's list)."""
    assert set(FACET_NAMES) <= GENERATED
    for name in NAMES:
        assert set(get_spec(name).facets) <= GENERATED, name


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_every_plan_keeps_every_promise(name: str, data: st.DataObject) -> None:
    spec = get_spec(name)
    case: Case = data.draw(states(frozenset(spec.facets), arrivals=spec.places_arrivals))
    strategy = get_strategy(name)
    plan = strategy(case.state, case.budget, **call_params(name, case))
    verify(spec, case, plan)
    rng = data.draw(st.randoms(use_true_random=False))
    again = strategy(shuffled(case.state, rng), case.budget, **call_params(name, case))
    assert dict(again.assignment) == dict(plan.assignment), "declaration order changed the plan"
    assert again.status is plan.status
    if spec.keeps_budget:  # a zero budget means no migration this round (arrivals are placed)
        frozen = Case(case.state, Budget(max_migrations=0), case.queries)
        still = strategy(frozen.state, frozen.budget, **call_params(name, frozen))
        assert still.moves == ()
        verify(spec, frozen, still)


def _with_arrival() -> ClusterState:
    return ClusterState((Node("n0"), Node("n1")), (KeyGroup("k1", "op", 1.0),
                                                   KeyGroup("k2", "op", 1.0)),
                        {"k1": "n0"}, arrivals=frozenset({"k2"}))


@pytest.mark.parametrize("name", [n for n in NAMES if not get_spec(n).places_arrivals])
def test_arrivals_refused_by_the_pre_check_naming_who_places_them(name: str) -> None:
    with pytest.raises(StrategyInputError) as err:
        get_strategy(name)(_with_arrival(), Budget())
    text = str(err.value)
    assert "k2" in text and "where:" in text and "fix:" in text
    assert "herding_online" in text and "jobs/facets/dynamic.py" in text


@pytest.mark.parametrize("name", [n for n in NAMES
                                  if set(get_spec(n).facets) - {"communication"}])
def test_a_missing_facet_is_refused_by_the_pre_check(name: str) -> None:
    state = ClusterState((Node("n0"),), (KeyGroup("k1", "op", 1.0),), {"k1": "n0"})
    with pytest.raises(StrategyInputError) as err:
        get_strategy(name)(state, Budget())
    assert "facet(s), which the state lacks" in str(err.value) and "fix:" in str(err.value)


@pytest.mark.parametrize("name", ["milp", "cg", "herding_online"])
def test_wrong_types_are_refused_with_what_where_fix(name: str) -> None:
    with pytest.raises(StrategyInputError, match="not a ClusterState"):
        get_strategy(name)({"nodes": []}, Budget())
    with pytest.raises(StrategyInputError, match="not a Budget"):
        get_strategy(name)(_with_arrival(), 3)
