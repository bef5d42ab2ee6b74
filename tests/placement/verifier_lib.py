"""The verifier's generators and checks (tests/placement/test_verifier.py runs them).

Like Cruise Control's OptimizationVerifier run by RandomGoalTest over every goal: `states`
draws a random ClusterState with exactly the facets asked for, `call_params` the parameters a
strategy's facets need (SPRAWL's queries), and `verify` checks one plan against the promises
every strategy makes (placement/registry.py) and those of its facets.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import strategies as st
from placement_testlib import within_budget

from placement.facets import Link, Network, Site, Source, Stream
from placement.herding.metrics import stream_traffic
from placement.metrics import max_deviation
from placement.model import Budget, ClusterState, Edge, KeyGroup, Node, Plan, SolverStatus
from placement.registry import B_NOTE, Spec

#: one small time limit for every solver: tiny instances, answers in milliseconds
TIME_LIMIT_S = 0.5
REL = 1e-6


@dataclass(frozen=True)
class Case:
    """A drawn state, its budget and the strategy-facing extras (SPRAWL's queries)."""

    state: ClusterState
    budget: Budget
    queries: tuple[dict[str, Any], ...] = ()


def _forest(draw: st.DrawFn, g: int) -> list[tuple[int, int]]:
    """Data edges child -> parent (a forest: SPRAWL's DP applies), parents of lower index."""
    edges = []
    for u in range(1, g):
        if draw(st.booleans()):
            edges.append((u, draw(st.integers(0, u - 1))))
    return edges


@st.composite
def states(draw: st.DrawFn, facets: frozenset[str], arrivals: bool) -> Case:
    """A small state with exactly `facets` (+ utilisation), arrivals if asked, nodes of B and
    unequal capacities drawn every time."""
    n = draw(st.integers(1, 4))
    g = draw(st.integers(1, 7))
    caps = draw(st.lists(st.sampled_from([0.5, 1.0, 1.0, 2.0, 4.0]), min_size=n, max_size=n))
    marked = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if all(marked):
        marked[draw(st.integers(0, n - 1))] = False
    nodes = tuple(Node(f"n{i}", caps[i], marked[i]) for i in range(n))
    loads = draw(st.lists(st.sampled_from([0.0, 5.0, 10.0]) | st.floats(0.0, 40.0),
                          min_size=g, max_size=g))
    costs = draw(st.lists(st.sampled_from([0.0, 1.0]) | st.floats(0.0, 5.0),
                          min_size=g, max_size=g))
    homes = draw(st.lists(st.integers(0, n - 1), min_size=g, max_size=g))
    units = [f"g{k}" for k in range(g)]
    kgs = tuple(KeyGroup(units[k], f"op{k % 2}", loads[k], migration_cost=costs[k])
                for k in range(g))
    new = set(draw(st.sets(st.integers(0, g - 1), max_size=2))) if arrivals else set()
    assignment = {units[k]: f"n{homes[k]}" for k in range(g) if k not in new}
    fields: dict[str, Any] = {}
    queries: list[dict[str, Any]] = []
    tree = _forest(draw, g)
    if "communication" in facets:
        rates = draw(st.lists(st.sampled_from([1.0, 10.0]) | st.floats(0.0, 50.0),
                              min_size=len(tree), max_size=len(tree)))
        fields["edges"] = tuple(Edge(units[a], units[b], r)
                                for (a, b), r in zip(tree, rates, strict=True))
    if "sources" in facets:
        m = draw(st.integers(1, 4))
        fields["sources"] = tuple(Source(f"s{i}", draw(st.sampled_from([1.0, 2.0, 5.0])))
                                  for i in range(m))
        fields["subscriptions"] = {
            u: frozenset(f"s{i}" for i in draw(st.sets(st.integers(0, m - 1), min_size=1)))
            for u in units}
    if "load_model" in facets:
        d = draw(st.integers(1, 3))
        rates = draw(st.lists(st.floats(1.0, 50.0), min_size=d, max_size=d))
        low = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=d, max_size=d))
        fields["streams"] = tuple(Stream(f"i{k}", rates[k], rates[k] * low[k]) for k in range(d))
        fields["load_model"] = {u: {f"i{k}": draw(st.sampled_from([0.0, 0.1, 0.5, 2.0]))
                                    for k in range(d)} for u in units}
    if "network" in facets:
        router = draw(st.booleans())
        sites = [Site(f"n{i}", zone=f"z{i % 2}") for i in range(n)]
        if router:
            sites.append(Site("r0", zone="z0"))
        links = []
        for i in range(1, len(sites)):  # a spanning tree, then maybe one more link
            j = draw(st.integers(0, i - 1))
            bw = draw(st.sampled_from([math.inf, 100.0, 1000.0]))
            links.append(Link(sites[j].node, sites[i].node, draw(st.floats(1.0, 40.0)), bw))
        fields["network"] = Network(tuple(sites), tuple(links))
        if draw(st.booleans()) and units[0] in assignment:  # a pinned source
            fields["pinned"] = {units[0]: assignment[units[0]]}
        sinks = sorted({units[b] for _, b in tree} or {units[0]})
        if draw(st.booleans()):
            sink = draw(st.sampled_from(sinks))
            queries.append({"id": "q0", "sink": sink,
                            "latency_bound_ms": draw(st.sampled_from([1.0, 30.0, 200.0]))})
    elif "communication" not in facets and tree and draw(st.booleans()):
        fields["edges"] = tuple(Edge(units[a], units[b], 1.0) for a, b in tree)
    state = ClusterState(nodes, kgs, assignment, arrivals=frozenset(units[k] for k in new),
                         **fields)
    count = draw(st.none() | st.integers(0, g))
    cost = draw(st.none() | st.floats(0.0, sum(costs) + 1.0))
    return Case(state, Budget(cost, count), tuple(queries))


def call_params(name: str, case: Case) -> dict[str, Any]:
    """Every strategy's parameters for a verifier call: a small time limit, a fixed seed."""
    out: dict[str, Any] = {"time_limit_s": TIME_LIMIT_S, "seed": 1}
    if name == "sprawl":
        out["queries"] = [dict(q) for q in case.queries]
    return out


def shuffled(state: ClusterState, rng: random.Random) -> ClusterState:
    """The same instance with nodes, units, sources, streams, edges and sites re-listed."""

    def mix(items: Sequence[Any]) -> tuple[Any, ...]:
        out = list(items)
        rng.shuffle(out)
        return tuple(out)

    def mix_map(mapping: Mapping[str, Any]) -> dict[str, Any]:
        keys = list(mapping)
        rng.shuffle(keys)
        return {k: mapping[k] for k in keys}

    network = state.network
    if network is not None:
        network = Network(mix(network.sites), mix(network.links))
    return replace(state, nodes=mix(state.nodes), keygroups=mix(state.keygroups),
                   assignment=mix_map(state.assignment), edges=mix(state.edges),
                   sources=mix(state.sources), subscriptions=mix_map(state.subscriptions),
                   streams=mix(state.streams),
                   load_model={u: mix_map(c) for u, c in mix_map(state.load_model).items()},
                   network=network, pinned=mix_map(state.pinned))


def _d(state: ClusterState, plan: Plan) -> float:
    return max_deviation(state, plan.assignment)


def _sprawl_cost(state: ClusterState, plan: Plan) -> float:
    return plan.facet_metrics["cost_total"]


#: what a strategy's `lower_bound` bounds (an exact strategy that reports one must be listed)
OBJECTIVES: dict[str, Callable[[ClusterState, Plan], float]] = {
    "milp": _d, "albic": _d, "albic_many": _d, "sprawl": _sprawl_cost,
}


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL * max(1.0, abs(a), abs(b))


def check_facet_metrics(plan: Plan) -> None:
    """The facet metrics agree with each other (before and after alike)."""
    for fm in (plan.facet_metrics, plan.facet_before):
        ratios = {k: v for k, v in fm.items() if k.startswith("latency_ratio_")}
        if "max_latency_ratio" in fm:
            assert _close(fm["max_latency_ratio"], max(ratios.values(), default=0.0)), fm
            assert fm["latency_violations"] == sum(v > 1 + 1e-9 for v in ratios.values()), fm
        if "stream_traffic" in fm and "traffic_lower_bound" in fm:
            assert fm["traffic_lower_bound"] <= fm["stream_traffic"] * (1 + REL) + REL, fm
        if "feasible_set_ratio" in fm:
            assert -REL <= fm["feasible_set_ratio"] <= 1 + REL, fm
        heads = [v for k, v in fm.items() if k.startswith("headroom_")
                 and k not in ("headroom_all", "headroom_min")]
        if "headroom_min" in fm:
            assert _close(fm["headroom_min"], min(heads)), fm
        if fm.get("lower_bound_load", 0.0) > 1 + REL and "feasible_set_ratio_lb" in fm:
            assert fm["feasible_set_ratio_lb"] <= REL, fm  # B overloads every placement


def verify(spec: Spec, case: Case, plan: Plan) -> None:
    """Every promise of placement/registry.py, checked from the outside."""
    state, budget = case.state, case.budget
    units = {k.id for k in state.keygroups}
    assert set(plan.assignment) == units, "every unit placed once"
    assert set(plan.assignment.values()) <= set(state.node_ids), "only known nodes"
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    for move in plan.moves:
        assert move.dst not in marked and move.src == state.assignment[move.keygroup]
    assert all(plan.assignment[u] not in marked for u in state.arrivals), "arrival onto B"
    placed = {u: n for u, n in plan.assignment.items() if u in state.assignment}
    if spec.keeps_budget:
        present = ClusterState(state.nodes, tuple(k for k in state.keygroups
                                                  if k.id in state.assignment),
                               state.assignment)
        assert within_budget(present, budget, placed), plan.moves
    else:
        assert "budget ignored" in plan.message
    if marked & set(plan.assignment.values()):  # B left undrained: the plan says why
        assert B_NOTE in plan.message, plan.message
    if spec.guarantee == "heuristic":
        assert plan.status is not SolverStatus.OPTIMAL
    if plan.status is SolverStatus.INFEASIBLE:
        assert placed == dict(state.assignment) and plan.message
    if plan.lower_bound is not None:
        assert spec.name in OBJECTIVES, f"{spec.name}: what does its lower bound bound?"
        achieved = OBJECTIVES[spec.name](state, plan)
        assert plan.lower_bound <= achieved + REL * max(1.0, abs(achieved)), plan.message
        if plan.status is SolverStatus.OPTIMAL and spec.name == "sprawl":
            assert _close(plan.lower_bound, achieved), plan.message
    if spec.name == "herding_exact":
        traffic = stream_traffic(state, plan.assignment)
        assert _close(plan.facet_metrics["stream_traffic"], traffic)
        if plan.status is SolverStatus.OPTIMAL:  # the proof: the bound meets the traffic
            assert _close(plan.facet_metrics["traffic_lower_bound"], traffic), plan.facet_metrics
    check_facet_metrics(plan)
