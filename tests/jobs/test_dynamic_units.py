"""A dynamic job's plan state, config flag and facet validation, without Spark.

Arrivals are the period's units the running assignment lacks, departed units leave the state,
strategies that do not place arrivals get them pre-placed on the least utilised node, and a
strategy whose facets the data lack is refused. Bad facet rows are named by the GE suites.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.errors import StageError
from jobs.facets.dynamic import check_strategy_facets, preplace_arrivals, with_sources
from jobs.plan.stage import build_state
from jobs.validate.suites import validate_facets
from placement.model import ClusterState, KeyGroup, Node
from schemas.config import ConfigError, JobConfig, resolve_job
from schemas.strategies import STRATEGIES, STREAM_TRAFFIC, StrategyEntry

DYNAMIC = JobConfig("q", units="dynamic")


def _kg(unit: str, node: str, load: float = 10.0) -> dict[str, object]:
    return {"keygroup": unit, "operator": "query", "node": node, "load_pct": load,
            "state_bytes": 1024}


NODES = [{"node": "n0", "capacity": 1.0}, {"node": "n1", "capacity": 2.0}]
SOURCES = [{"source": "s1", "tuples_per_s": 3.0, "bytes_per_s": 300.0},
           {"source": "s2", "tuples_per_s": 1.0, "bytes_per_s": 100.0}]


def _subs(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"keygroup": u, "source": s, "node": "n0"} for u, s in pairs]


def test_arrivals_are_the_units_the_running_assignment_lacks_and_departed_ones_leave() -> None:
    kgs = [_kg("a", "n0"), _kg("b", "n1"), _kg("c", "n0")]  # c arrived (the runtime put it on n0)
    current = {"a": "n1", "b": "n1", "gone": "n0"}  # the version the runtime ran; gone left
    state = build_state(DYNAMIC, kgs, NODES, [], current)
    state = with_sources(state, DYNAMIC, kgs, SOURCES, _subs(("a", "s1"), ("b", "s2"),
                                                              ("c", "s1"), ("c", "s2")),
                         current, 1)
    assert state.arrivals == {"c"}
    assert dict(state.assignment) == {"a": "n1", "b": "n1"}
    assert {k.id for k in state.keygroups} == {"a", "b", "c"}
    assert state.subscriptions["c"] == {"s1", "s2"}
    assert {"sources", "arrivals"} <= state.facets


def test_before_anything_is_published_every_unit_is_an_arrival() -> None:
    kgs = [_kg("a", "n0"), _kg("b", "n1")]
    state = build_state(DYNAMIC, kgs, NODES, [], {})
    state = with_sources(state, DYNAMIC, kgs, SOURCES, _subs(("a", "s1"), ("b", "s1")), {}, None)
    assert state.arrivals == {"a", "b"} and not state.assignment
    fixed = JobConfig("f")  # a fixed job keeps the runtime's initial allocation
    kept = with_sources(build_state(fixed, kgs, NODES, [], {}), fixed, kgs, SOURCES,
                        _subs(("a", "s1"), ("b", "s1")), {}, None)
    assert not kept.arrivals and dict(kept.assignment) == {"a": "n0", "b": "n1"}


def test_arrivals_go_to_the_least_utilised_node_by_capacity() -> None:
    state = ClusterState(
        nodes=(Node("n0", 1.0), Node("n1", 2.0), Node("n2", 1.0, marked_for_removal=True)),
        keygroups=(KeyGroup("a", "query", 30.0), KeyGroup("x", "query", 20.0),
                   KeyGroup("y", "query", 20.0), KeyGroup("z", "query", 20.0)),
        assignment={"a": "n1"}, arrivals=frozenset({"x", "y", "z"}))
    placed_state, placed = preplace_arrivals(state, "greedy")
    # x: n0 (20/1 = 20) vs n1 (50/2 = 25) -> n0; y: n0 (40) vs n1 (25) -> n1;
    # z: n0 (40) vs n1 (70/2 = 35) -> n1; never the node marked for removal
    assert placed == {"x": "n0", "y": "n1", "z": "n1"}
    assert not placed_state.arrivals and placed_state.assignment["x"] == "n0"


@settings(max_examples=60, deadline=None)
@given(loads=st.lists(st.floats(0, 100), min_size=1, max_size=12),
       capacities=st.lists(st.floats(0.5, 4), min_size=1, max_size=4))
def test_preplacement_places_every_arrival_once_on_a_node_of_a(loads: list[float],
                                                               capacities: list[float]) -> None:
    nodes = tuple(Node(f"n{i}", c) for i, c in enumerate(capacities))
    units = tuple(KeyGroup(f"u{i}", "query", x) for i, x in enumerate(loads))
    state = ClusterState(nodes=nodes, keygroups=units, assignment={},
                         arrivals=frozenset(u.id for u in units))
    after, placed = preplace_arrivals(state, "greedy")
    assert set(placed) == {u.id for u in units} and dict(after.assignment) == placed
    # the rule: no arrival could have gone to a node that was less utilised after taking it
    # (checked for the last arrival, whose choice saw every other placement)
    last = sorted(placed)[-1]
    load = {n.id: 0.0 for n in nodes}
    for unit, node in placed.items():
        if unit != last:
            load[node] += loads[int(unit[1:])]
    mine = loads[int(last[1:])]
    chosen = (load[placed[last]] + mine) / after.node(placed[last]).capacity
    assert all(chosen <= (load[n.id] + mine) / n.capacity + 1e-9 for n in nodes)


def test_a_strategy_that_places_arrivals_gets_them_unplaced(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    monkeypatch.setitem(STRATEGIES, "placer", StrategyEntry("m:f", "m:P", "heuristic",
                                                            ("sources",), places_arrivals=True,
                                                            objective=STREAM_TRAFFIC))
    state = ClusterState(nodes=(Node("n0"),), keygroups=(KeyGroup("x", "query", 1.0),),
                         assignment={}, arrivals=frozenset({"x"}))
    same, placed = preplace_arrivals(state, "placer")
    assert same is state and placed == {}
    with pytest.raises(StageError, match="sources") as refused:
        check_strategy_facets(DYNAMIC, "placer", state)  # no sources in this state
    assert "units = \"dynamic\"" in refused.value.fix


def test_units_is_fixed_by_default_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "jobs.toml"
    path.write_text('[jobs.a]\n[jobs.b]\nunits = "dynamic"\n[jobs.c]\nunits = "sometimes"\n')
    assert not resolve_job("a", path).dynamic and resolve_job("b", path).dynamic
    with pytest.raises(ConfigError, match="units: must be \"fixed\""):
        resolve_job("c", path)


def test_bad_facet_rows_are_named() -> None:
    stamp = pd.Timestamp("2026-01-01T00:05:00Z")
    sources = pd.DataFrame({"job_id": "q", "period_end": stamp, "source": ["s1", "s2", "s3"],
                            "tuples_per_s": [1.0, -2.0, math.inf], "bytes_per_s": 1.0})
    subs = pd.DataFrame({"job_id": "q", "period_end": stamp,
                         "keygroup": ["a", "b", "b", "c"], "node": ["n0", "n0", "n1", "n0"],
                         "source": ["s1", "s1", "s1", "nowhere"]})
    report = validate_facets(sources, subs, running_units={"a", "b", "c", "d"},
                             known_nodes={"n0", "n1"})
    text = report.summary()
    assert not report.success
    assert "source=s2 tuples_per_s=-2.0" in text and "source=s3 tuples_per_s=inf" in text
    assert "keygroup=c source=nowhere" in text  # a subscription to an unknown source
    assert "keygroup=b source=s1" in text  # a unit twice (here: on two nodes)
    assert "missing (1): d" in text  # a running query that reads nothing
    good = validate_facets(sources.iloc[:1], subs.iloc[:1], running_units={"a"},
                           known_nodes={"n0"})
    assert good.success, good.summary()


def test_placements_name_the_sources_already_on_the_node_and_the_traffic_added() -> None:
    from jobs.tracking.placements import placement_rows
    from placement.facets import Source
    from placement.model import Plan, PlanMetrics, SolverStatus

    m = PlanMetrics(0.0, 0.0, 0.0, 0.0)
    state = ClusterState(
        nodes=(Node("n0"), Node("n1")),
        keygroups=tuple(KeyGroup(u, "query", 1.0) for u in ("a", "b", "x", "y")),
        assignment={"a": "n0", "b": "n1"}, arrivals=frozenset({"x", "y"}),
        sources=(Source("s1", 5.0), Source("s2", 2.0), Source("s3", 1.0)),
        subscriptions={"a": frozenset({"s1"}), "b": frozenset({"s3"}),
                       "x": frozenset({"s1", "s2"}), "y": frozenset({"s2", "s3"})})
    plan = Plan("herding_online", {"a": "n0", "b": "n1", "x": "n0", "y": "n0"}, (), m, m,
                SolverStatus.HEURISTIC, None, 0.0)
    rows = {r["keygroup"]: r for r in placement_rows(state, plan, {"x": "n1", "y": "n1"}, "r")}
    assert rows["x"]["already_on_node"] == "s1" and rows["x"]["traffic_added"] == 2.0
    # y comes after x in id order: s2 is on n0 by then, s3 is not (b reads it on n1)
    assert rows["y"]["already_on_node"] == "s2" and rows["y"]["traffic_added"] == 1.0
    assert rows["y"]["node_before"] == "n1" and rows["y"]["how"] == "arrival"


def test_a_herding_plan_of_arrivals_is_logged_against_where_the_runtime_ran() -> None:
    """herding_online places arrivals itself (no pre-placement); the state the cycle is logged
    against has every unit where the runtime ran it, so the audit tables can be built."""
    from jobs.facets.dynamic import prepare_units
    from jobs.tracking.audit_trail import explain_moves, keygroup_rows, node_rows
    from jobs.tracking.placements import PLACEMENTS_ARTIFACT
    from placement.model import Budget
    from placement.registry import get_strategy

    kgs = [_kg("a", "n0"), _kg("b", "n1"), _kg("c", "n0"), _kg("d", "n1")]
    subs = _subs(("a", "s1"), ("b", "s2"), ("c", "s1"), ("d", "s1"))
    current = {"a": "n0", "b": "n1"}  # c and d arrived
    state = build_state(DYNAMIC, kgs, NODES, [], current)
    prepared = prepare_units(DYNAMIC, "herding_online", state, kgs, (SOURCES, subs), current, 1)
    assert prepared.state.arrivals == {"c", "d"} and not prepared.preplaced
    plan = get_strategy("herding_online")(prepared.state, Budget(max_migrations=0))
    plan, logged, artifacts = prepared.finish(plan, prepared.state)
    assert not logged.arrivals and logged.assignment["d"] == "n1"  # where the runtime ran it
    rows = {r["keygroup"]: r for r in keygroup_rows(logged, plan)}
    assert rows["c"]["node_after"] == plan.assignment["c"]
    assert node_rows(logged, plan) and explain_moves(logged, plan) == []
    assert "keygroup,how,node_before" in artifacts[PLACEMENTS_ARTIFACT]
    assert plan.facet_metrics["traffic_lower_bound"] <= plan.facet_metrics["stream_traffic"]
    assert "stream_traffic" in plan.facet_before


def _zoned(per_node: int | None, spread_max: int | None, exclude: frozenset[str],
           loads: list[float]) -> ClusterState:
    from schemas.constraints import Constraints, Spread

    labels = {"n0": {"zone": "a"}, "n1": {"zone": "a"}, "n2": {"zone": "b"}, "n3": {"zone": "c"}}
    spread = () if spread_max is None else (Spread(label="zone", operator="query",
                                                   max_per_domain=spread_max),)
    cons = Constraints(node_labels=labels, spread=spread, max_units_per_node=per_node,
                       exclude_nodes=exclude)
    nodes = tuple(Node(n, 1.0, labels=(("zone", z["zone"]),)) for n, z in labels.items())
    units = tuple(KeyGroup(f"u{i}", "query", x) for i, x in enumerate(loads))
    return ClusterState(nodes=nodes, keygroups=units, assignment={},
                        arrivals=frozenset(u.id for u in units), constraints=cons)


@settings(max_examples=80, deadline=None)
@given(loads=st.lists(st.floats(0, 100), min_size=1, max_size=10),
       per_node=st.sampled_from([None, 1, 2, 3]), spread_max=st.sampled_from([None, 1, 2, 4]),
       exclude=st.sampled_from([frozenset(), frozenset({"n2"}), frozenset({"n0", "n1"})]))
def test_preplaced_arrivals_keep_the_constraints_or_are_refused_naming_them(
        loads: list[float], per_node: int | None, spread_max: int | None,
        exclude: frozenset[str]) -> None:
    from placement.constraints import broken

    state = _zoned(per_node, spread_max, exclude, loads)
    try:
        after, placed = preplace_arrivals(state, "greedy")
    except StageError as refused:
        assert "cannot be placed on any node without breaking" in str(refused)
        assert "[constraints]" in refused.fix
        return
    assert set(placed) == {u.id for u in state.keygroups}
    assert not broken(after, after.assignment)
    assert not set(placed.values()) & exclude


def test_an_arrival_no_node_can_take_is_refused_naming_the_constraint() -> None:
    state = _zoned(1, None, frozenset(), [5.0] * 5)  # 4 nodes, at most 1 unit each, 5 arrive
    with pytest.raises(StageError, match="at most 1 units per node") as refused:
        preplace_arrivals(state, "greedy")
    assert "u4" in str(refused.value)


def test_before_is_the_running_system_when_the_strategy_placed_the_arrivals() -> None:
    """A first period of a Herding job: nothing published, every unit an arrival the runtime
    already runs. herding_online sees them with no node, so its own "before" is empty (load
    distance 0, traffic 0); the logged plan's before is where the runtime ran them, the
    numbers the demo line, the run's description and `reconf audit` show."""
    from jobs.facets.dynamic import prepare_units
    from placement.herding.instance import from_state
    from placement.herding.metrics import facet_metrics, node_of
    from placement.metrics import plan_metrics
    from placement.model import Budget
    from placement.registry import get_strategy

    kgs = [_kg("a", "n0", 30.0), _kg("b", "n1"), _kg("c", "n0", 20.0), _kg("d", "n1")]
    subs = _subs(("a", "s1"), ("b", "s2"), ("c", "s2"), ("d", "s1"))
    state = build_state(DYNAMIC, kgs, NODES, [], {})
    prepared = prepare_units(DYNAMIC, "herding_online", state, kgs, (SOURCES, subs), {}, None)
    assert prepared.state.arrivals == {"a", "b", "c", "d"}
    raw = get_strategy("herding_online")(prepared.state, Budget(max_migrations=0))
    assert raw.before.load_distance == 0.0  # the strategy's own view: nothing placed yet
    plan, logged, _ = prepared.finish(raw, prepared.state)
    ran = {str(k["keygroup"]): str(k["node"]) for k in kgs}
    assert logged.assignment == ran
    assert plan.before == plan_metrics(logged, ran) and plan.before.load_distance > 0
    inst = from_state(prepared.state)
    assert plan.facet_before["stream_traffic"] == pytest.approx(
        facet_metrics(inst, node_of(inst, prepared.state, ran))["stream_traffic"])
    assert plan.facet_before["stream_traffic"] > 0
    assert plan.after == raw.after and plan.assignment == raw.assignment  # "after" untouched
