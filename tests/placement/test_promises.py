"""Promises broken outside the benchmark grids (nodes of B, unequal capacities, a bound that
cannot be met, another declaration order, arrivals), one regression test each."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from herding_testlib import qa_state

from placement.facets import Link, Network, Site, Source, Stream
from placement.model import Budget, ClusterState, Edge, KeyGroup, Node, SolverStatus
from placement.registry import get_strategy
from runtime.routing.policies import KeyTable, route


def test_herding_exact_drains_nodes_marked_for_removal() -> None:
    state = qa_state([[0], [1], [0, 1], [2], [2], [0]], [1.0, 2.0, 3.0], 3, current=[2] * 6,
                     marked=[2])
    plan = get_strategy("herding_exact")(state, Budget())
    assert "n2" not in plan.assignment.values()
    assert plan.status is SolverStatus.OPTIMAL
    limited = get_strategy("herding_exact")(state, Budget(max_migrations=2))
    assert list(limited.assignment.values()).count("n2") == 4  # as far as the budget allows
    assert "4 unit(s) stay on nodes marked for removal" in limited.message


def _band_state() -> ClusterState:
    """a and b at 0.80 (inside 0.75–0.85), c marked for removal with two small VWs."""
    kgs = [KeyGroup(f"k{i}", "op", 20.0) for i in range(8)]
    kgs += [KeyGroup("x0", "op", 5.0), KeyGroup("x1", "op", 5.0)]
    assignment = {**{f"k{i}": "a" if i < 4 else "b" for i in range(8)}, "x0": "c", "x1": "c"}
    return ClusterState((Node("a"), Node("b"), Node("c", marked_for_removal=True)),
                        tuple(kgs), assignment)


def test_cg_drains_a_marked_node_when_the_others_sit_inside_the_band() -> None:
    plan = get_strategy("cg")(_band_state(), Budget())
    assert [m.src for m in plan.moves] == ["c"]  # one VW per signal and round
    assert "stay on nodes marked for removal" in plan.message and "rounds" in plan.message
    drained = get_strategy("cg")(_band_state(), Budget(), rounds=2)
    assert "c" not in drained.assignment.values()


def test_cg_says_why_when_every_node_of_a_is_busy() -> None:
    state = _band_state()
    state = dataclasses.replace(state, keygroups=tuple(
        dataclasses.replace(k, load=23.0) if k.id.startswith("k") else k
        for k in state.keygroups))
    plan = get_strategy("cg")(state, Budget())
    assert plan.moves == () and "every node of A is busy" in plan.message


def _sprawl_state(bound: float) -> tuple[ClusterState, dict[str, object]]:
    """src pinned at s1 -> op -> sink pinned at s3, 10 ms per hop; the query bounded."""
    net = Network((Site("s1"), Site("s2"), Site("s3")),
                  (Link("s1", "s2", 10.0), Link("s2", "s3", 10.0)))
    kgs = (KeyGroup("src", "op", 1.0), KeyGroup("op", "op", 10.0), KeyGroup("sink", "op", 1.0))
    state = ClusterState((Node("s1"), Node("s2"), Node("s3")), kgs,
                         {"src": "s1", "op": "s2", "sink": "s3"},
                         (Edge("src", "op", 5.0), Edge("op", "sink", 5.0)), network=net,
                         pinned={"src": "s1", "sink": "s3"})
    return state, {"queries": [{"id": "q", "sink": "sink", "latency_bound_ms": bound}]}


@pytest.mark.parametrize("constraints", ["none", "resources", "all"])
def test_sprawl_latency_metrics_agree(constraints: str) -> None:
    state, params = _sprawl_state(2.0)
    plan = get_strategy("sprawl")(state, Budget(), constraints=constraints, **params)
    fm = plan.facet_metrics
    assert fm["latency_ratio_q"] == pytest.approx(10.0)  # 20 ms against 2 ms
    assert fm["max_latency_ratio"] == pytest.approx(10.0)
    assert fm["latency_violations"] == 1.0
    if constraints != "all":
        assert "does not enforce latency bounds" in plan.message


def test_sprawl_infeasible_names_the_latency_bound_and_keeps_metrics() -> None:
    state, params = _sprawl_state(2.0)
    plan = get_strategy("sprawl")(state, Budget(), **params)
    assert plan.status is SolverStatus.INFEASIBLE
    assert "latency bound" in plan.message and "q (L_q 2 ms" in plan.message
    assert plan.facet_metrics["latency_ratio_q"] == pytest.approx(10.0)
    assert plan.facet_before["cost_total"] == plan.facet_metrics["cost_total"] > 0


def test_sprawl_infeasible_names_the_budget() -> None:
    state, params = _sprawl_state(100.0)
    hot = dataclasses.replace(state, nodes=(Node("s1"), Node("s2", 0.05), Node("s3")))
    plan = get_strategy("sprawl")(hot, Budget(max_migrations=0), **params)
    assert plan.status is SolverStatus.INFEASIBLE
    assert plan.message.startswith("the budget: a placement meeting every constraint needs 1")


def _mqp_state(order: list[int]) -> ClusterState:
    subs = [[0, 1], [0, 1], [2, 3], [2, 3], [0, 2], [1, 3], [0], [3]]
    state = qa_state(subs, [1.0, 2.0, 3.0, 4.0], 3)
    return dataclasses.replace(state, sources=tuple(state.sources[i] for i in order),
                               nodes=tuple(reversed(state.nodes)))


@pytest.mark.parametrize("name,params", [("herding_offline", {"algorithm": "mqp"}),
                                         ("herding_offline", {"algorithm": "ic"}),
                                         ("herding_online", {}), ("herding_exact", {}),
                                         ("cg", {})])
def test_the_plan_does_not_depend_on_declaration_order(name: str, params: dict[str, str]
                                                       ) -> None:
    plans = [get_strategy(name)(_mqp_state(order), Budget(), **params).assignment
             for order in ([0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1])]
    assert plans[0] == plans[1] == plans[2]


def test_unequal_capacities_mqp_fills_the_large_server_first() -> None:
    """Capacities 1, 2, 5 declared smallest first: MQP's tie no longer goes to the smallest
    server (traffic 7 before, 6 now; herding_exact 5; docs/algorithms.md has the averages)."""
    subs = [[0, 1], [0], [1], [0, 1], [0, 2], [0, 1], [0, 2], [0, 1]]
    state = qa_state(subs, [1.0, 1.0, 1.0], 3, caps=[1.0, 2.0, 5.0])
    mqp = get_strategy("herding_offline")(state, Budget(), algorithm="mqp")
    assert mqp.facet_metrics["stream_traffic"] == 6.0
    assert get_strategy("herding_exact")(state, Budget()).facet_metrics["stream_traffic"] == 5.0


def _rod_state(low: float) -> ClusterState:
    kgs = tuple(KeyGroup(f"u{i}", "op", 10.0) for i in range(4))
    return ClusterState((Node("n0"), Node("n1")), kgs, {f"u{i}": f"n{i % 2}" for i in range(4)},
                        streams=(Stream("i0", 100.0, low),),
                        load_model={f"u{i}": {"i0": 1.0} for i in range(4)})


def test_rod_says_when_the_lower_bounds_overload_the_cluster() -> None:
    plan = get_strategy("rod")(_rod_state(60.0), Budget())  # 4 × 60 % on 200 %
    assert "lower bounds B already overload the cluster" in plan.message
    assert plan.facet_metrics["lower_bound_load"] == pytest.approx(1.2)
    fine = get_strategy("rod")(_rod_state(20.0), Budget())
    assert "overload" not in fine.message
    assert fine.facet_metrics["lower_bound_load"] == pytest.approx(0.4)


@pytest.mark.parametrize("code", [-1, 4])
def test_routing_a_key_code_outside_the_table_names_it(code: int) -> None:
    table = KeyTable.build(4, 2)
    with pytest.raises(ValueError, match=rf"key code {code} \(message 1\) is outside"):
        route("kg", np.array([0, code]), table)


@pytest.mark.parametrize("name", ["cg", "rod", "llf", "connected_lb"])
def test_cg_and_rod_place_arrivals(name: str) -> None:
    kgs = tuple(KeyGroup(f"k{i}", "op", 10.0) for i in range(3))
    state = ClusterState((Node("n0"), Node("n1")), kgs, {"k0": "n0", "k1": "n0"},
                         edges=(Edge("k0", "k2", 1.0),), arrivals=frozenset({"k2"}),
                         sources=(Source("s", 1.0),),
                         streams=(Stream("i", 10.0),),
                         load_model={f"k{i}": {"i": 1.0} for i in range(3)})
    plan = get_strategy(name)(state, Budget(max_migrations=0))
    assert plan.assignment["k2"] in {"n0", "n1"} and plan.moves == ()


def test_a_sprawl_query_on_an_unknown_unit_is_refused_with_where_and_fix() -> None:
    from placement.registry import StrategyInputError

    state, _ = _sprawl_state(2.0)
    with pytest.raises(StrategyInputError, match="names unknown sink unit 'nope'") as err:
        get_strategy("sprawl")(state, Budget(), queries=[{"id": "q", "sink": "nope"}])
    assert "where:" in str(err.value) and "fix:" in str(err.value)
