"""The `sprawl` strategy and the topology file: validation at load, budget, gap, repair."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from placement.facets import Network
from placement.model import Budget, ClusterState, Edge, KeyGroup, Node, SolverStatus
from placement.registry import get_spec, get_strategy
from placement.sprawl.netgen import clusters
from placement.sprawl.topology import TopologyError, load_topology, query_params, with_topology

GOOD = """
[[sites]]
node = "us-1"
zone = "us"
border = true
[[sites]]
node = "us-2"
zone = "us"
[[sites]]
node = "eu-1"
zone = "eu"
border = true
cpu_cost = 2.0

[[links]]
a = "us-1"
b = "us-2"
latency_ms = 5.0
[[links]]
a = "us-1"
b = "eu-1"
latency_ms = 80.0
bandwidth = 100.0
cost = 3.0

[pinned]
src = "us-2"
sink = "eu-1"

[[queries]]
id = "q1"
sink = "sink"
latency_bound_ms = 200.0
"""


def test_a_good_topology_loads(tmp_path: Path) -> None:
    path = tmp_path / "topo.toml"
    path.write_text(GOOD)
    topo = load_topology(path)
    assert topo.network.site_ids == ("us-1", "us-2", "eu-1")
    assert topo.pinned == {"src": "us-2", "sink": "eu-1"}
    assert topo.queries[0].client == "eu-1" and topo.queries[0].latency_bound_ms == 200.0


@pytest.mark.parametrize(("change", "expected"), [
    (lambda t: t.replace('a = "us-1"\nb = "eu-1"', 'a = "us-2"\nb = "us-1"'),
     "not connected"),
    (lambda t: t.replace('sink = "eu-1"', 'sink = "asia-9"'), "unknown site 'asia-9'"),
    (lambda t: t.replace("latency_ms = 5.0", "latency_ms = -5.0"), "greater than 0"),
    (lambda t: t.replace("latency_ms = 5.0", "latency_ms = 0.0"), "greater than 0"),
    (lambda t: t.replace('b = "us-2"', 'b = "mars"'), "unknown site 'mars'"),
    (lambda t: t + '\n[[sites]]\nnode = "us-1"\n', "more than once"),
    (lambda t: t.replace("[[queries]]", "[[queries]]\nbogus = 1"), "bogus"),
])
def test_a_bad_topology_is_a_clear_error_at_load(tmp_path: Path, change, expected: str) -> None:
    path = tmp_path / "topo.toml"
    path.write_text(change(GOOD))
    with pytest.raises(TopologyError, match=expected) as caught:
        load_topology(path)
    assert str(path) in str(caught.value)


def test_json_topologies_and_unreadable_files(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"sites": [{"node": "a"}, {"node": "b"}],
                                "links": [{"a": "a", "b": "b", "latency_ms": 1.0}]}))
    assert load_topology(path).network.site_ids == ("a", "b")
    path.write_text("{not json")
    with pytest.raises(TopologyError, match="not valid JSON"):
        load_topology(path)
    with pytest.raises(TopologyError, match="cannot be read"):
        load_topology(tmp_path / "missing.toml")


def _state(net: Network, assignment: dict[str, str] | None = None) -> ClusterState:
    sites = net.site_ids
    kgs = (KeyGroup("s1", "src", 5, migration_cost=1.0), KeyGroup("s2", "src", 5,
                                                                  migration_cost=1.0),
           KeyGroup("f", "filter", 10, migration_cost=2.0),
           KeyGroup("j", "join", 30, migration_cost=4.0),
           KeyGroup("k", "sink", 1, migration_cost=1.0))
    edges = (Edge("s1", "f", 10), Edge("f", "j", 5), Edge("s2", "j", 8), Edge("j", "k", 3))
    pinned = {"s1": sites[0], "s2": sites[5], "k": sites[10]}
    assign = assignment or {"s1": sites[0], "s2": sites[5], "k": sites[10], "f": sites[11],
                            "j": sites[1]}
    return ClusterState(tuple(Node(s) for s in sites), kgs, assign, edges, network=net,
                        pinned=pinned)


QUERY = [{"id": "q", "sink": "k", "latency_bound_ms": 400.0}]


def test_sprawl_is_registered_with_the_network_facet() -> None:
    spec = get_spec("sprawl")
    assert spec.facets == ("network",) and spec.guarantee == "exact"


def test_an_unconstrained_plan_is_optimal_with_zero_gap() -> None:
    state = _state(clusters(3, zones=3, size=4))
    plan = get_strategy("sprawl")(state, Budget(), queries=QUERY)
    assert plan.status is SolverStatus.OPTIMAL
    m = plan.facet_metrics
    assert m["gap"] == 0.0 and m["cost_total"] == pytest.approx(plan.lower_bound)
    assert m["cost_total"] == pytest.approx(m["cost_cpu"] + m["cost_network"])
    assert m["cost_total"] < plan.facet_before["cost_total"]
    assert m["latency_violations"] == 0.0 and m["max_latency_ratio"] <= 1.0
    assert m["latency_ratio_q"] == m["max_latency_ratio"]


@pytest.mark.parametrize("mode", ["move_cost", "repair"])
@pytest.mark.parametrize("budget", [Budget(max_migrations=1), Budget(max_migration_cost=2.0),
                                    Budget(max_migrations=0)])
def test_the_budget_is_kept_and_the_gap_is_honest(mode: str, budget: Budget) -> None:
    state = _state(clusters(3, zones=3, size=4))
    free = get_strategy("sprawl")(state, Budget(), queries=QUERY)
    plan = get_strategy("sprawl")(state, budget, queries=QUERY, budget_mode=mode)
    cost = plan.facet_metrics["cost_total"]
    assert cost >= free.facet_metrics["cost_total"] - 1e-9
    assert plan.lower_bound is not None and free.lower_bound is not None
    # the MILP's bound is one of the budgeted problem: between the free optimum and the plan
    assert free.lower_bound - 1e-6 <= plan.lower_bound <= cost + 1e-6
    gap = plan.facet_metrics["gap"]
    assert gap == pytest.approx((plan.facet_metrics["cost_total"] - plan.lower_bound)
                                / plan.facet_metrics["cost_total"])


def test_repair_moves_only_what_violates() -> None:
    """§5.4.1: a tight latency bound on a plan whose join sits far away: only the query's
    operators may move; a second, unrelated operator chain stays put."""
    net = clusters(3, zones=3, size=4)
    state = _state(net)
    plan = get_strategy("sprawl")(state, Budget(), budget_mode="repair",
                                  queries=[{"id": "q", "sink": "k", "latency_bound_ms": 250.0}])
    moved = {m.keygroup for m in plan.moves}
    assert moved and moved <= {"f", "j"}
    assert plan.facet_metrics["latency_violations"] == 0.0


def test_a_non_tree_job_is_solved_by_the_milp() -> None:
    net = clusters(3, zones=2, size=3)
    sites = net.site_ids
    kgs = tuple(KeyGroup(k, "op", 5) for k in ("s", "a", "b", "k"))
    edges = (Edge("s", "a", 3), Edge("s", "b", 2), Edge("a", "k", 1), Edge("b", "k", 4))
    state = ClusterState(tuple(Node(s) for s in sites), kgs,
                         {"s": sites[0], "a": sites[1], "b": sites[2], "k": sites[5]}, edges,
                         network=net, pinned={"s": sites[0], "k": sites[5]})
    plan = get_strategy("sprawl")(state, Budget())
    assert plan.status is SolverStatus.OPTIMAL and "milp optimal" in plan.message
    milp = plan.phase("MILP")  # its solve timed as data on the plan
    assert milp is not None and milp.outcome == "optimal" and milp.seconds > 0
    assert plan.facet_metrics["gap"] == pytest.approx(0.0, abs=1e-6)


def test_without_a_network_the_strategy_says_what_is_missing() -> None:
    state = ClusterState((Node("a"),), (KeyGroup("k", "op", 1.0),), {"k": "a"})
    with pytest.raises(ValueError, match="network facet"):
        get_strategy("sprawl")(state, Budget())


def test_bad_params_name_the_field() -> None:
    state = _state(clusters(3, zones=3, size=4))
    with pytest.raises(ValueError, match="beta"):
        get_strategy("sprawl")(state, Budget(), beta=-1.0)
    with pytest.raises(ValueError, match="unknown sink unit"):
        get_strategy("sprawl")(state, Budget(), queries=[{"id": "q", "sink": "nope"}])


def test_a_topology_file_drives_the_strategy(tmp_path: Path) -> None:
    """The file's network, pins and queries, attached to a job's state, plan a placement."""
    path = tmp_path / "topo.toml"
    path.write_text(GOOD)
    topo = load_topology(path)
    kgs = (KeyGroup("src", "src", 5.0), KeyGroup("f", "filter", 20.0),
           KeyGroup("sink", "sink", 1.0))
    state = ClusterState(tuple(Node(s) for s in topo.network.site_ids), kgs,
                         {"src": "us-2", "f": "us-1", "sink": "eu-1"},
                         (Edge("src", "f", 10.0), Edge("f", "sink", 2.0)))
    state = with_topology(state, topo, str(path))
    plan = get_strategy("sprawl")(state, Budget(), queries=query_params(topo))
    assert plan.assignment["src"] == "us-2" and plan.assignment["sink"] == "eu-1"
    assert plan.facet_metrics["latency_violations"] == 0.0
    missing = ClusterState((Node("us-1"),), (KeyGroup("x", "op", 1.0),), {"x": "us-1"})
    with pytest.raises(TopologyError, match="does not fit"):
        with_topology(missing, topo, str(path))


def _tie_state(at: str) -> ClusterState:
    """A filter between a source on s1 and a sink on s2, on one of two equally good sites
    (a and b: the same CPU weight, 10 ms from each end); s1 and s2 cost 5× the CPU."""
    from placement.facets import Link, Site

    net = Network((Site("s1", "z", cpu_cost=5.0), Site("a", "z"), Site("b", "z"),
                   Site("s2", "z", cpu_cost=5.0)),
                  (Link("s1", "a", 10.0), Link("s1", "b", 10.0), Link("a", "s2", 10.0),
                   Link("b", "s2", 10.0)))
    kgs = (KeyGroup("src", "src", 1.0), KeyGroup("f", "filter", 10.0),
           KeyGroup("sink", "sink", 1.0))
    return ClusterState(tuple(Node(s) for s in net.site_ids), kgs,
                        {"src": "s1", "f": at, "sink": "s2"},
                        (Edge("src", "f", 4.0), Edge("f", "sink", 2.0)), network=net,
                        pinned={"src": "s1", "sink": "s2"})


@pytest.mark.parametrize("mode", ["move_cost", "repair"])
@pytest.mark.parametrize("budget", [Budget(), Budget(max_migrations=1)])
@pytest.mark.parametrize("at", ["a", "b"])
def test_an_exact_tie_stays_where_it_is(mode: str, budget: Budget, at: str) -> None:
    """Staying and moving cost the same: no move (the budget would allow one)."""
    plan = get_strategy("sprawl")(_tie_state(at), budget, budget_mode=mode)
    assert plan.assignment["f"] == at and not plan.moves
    assert plan.status is SolverStatus.OPTIMAL
    assert plan.facet_metrics["cost_total"] == pytest.approx(plan.lower_bound)


def test_a_strictly_better_site_is_still_taken() -> None:
    plan = get_strategy("sprawl")(_tie_state("s2"), Budget(max_migrations=1))
    assert plan.assignment["f"] in {"a", "b"} and len(plan.moves) == 1
    assert plan.status is SolverStatus.OPTIMAL


def test_the_milps_moves_that_gain_nothing_are_put_back() -> None:
    """HiGHS may return either of two tied placements: a move that gains nothing is undone,
    a move that gains is kept."""
    from placement.sprawl.core import _stay_on_ties, state_instance
    from placement.sprawl.params import SprawlParams

    inst, units = state_instance(_tie_state("b"), SprawlParams())
    site = {s: i for i, s in enumerate(inst.routing.sites)}
    current = np.array([site[s] for s in ("b", "s2", "s1")])  # f, sink, src (unit order)
    assert units == ["f", "sink", "src"]
    tied = current.copy()
    tied[0] = site["a"]
    assert list(_stay_on_ties(inst, tied, current)) == list(current)
    from_s2 = current.copy()
    from_s2[0] = site["s2"]
    gains = current.copy()
    gains[0] = site["a"]
    assert list(_stay_on_ties(inst, gains, from_s2)) == list(gains)
