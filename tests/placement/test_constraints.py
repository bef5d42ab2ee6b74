"""Topology constraints: every registered strategy's plan keeps them, or the job is refused at
load (schemas/constraints.py, placement/constraints.py, the registry's post-check).

The property test writes a real config file for each registered strategy with a random
constraint table over random labelled clusters: the loader either refuses it (a constraint the
file shows to be wrong, or a kind the strategy does not hold: the message names it) or the
strategy's plan breaks no constraint more than the current assignment, and none at all when the
current assignment keeps them. The MILP with an unlimited budget repairs every constraint of an
instance built around a witness assignment that keeps them all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement.constraints import MoveCheck, amounts, broken, raised
from placement.model import Budget, ClusterState, KeyGroup, Node
from placement.registry import StrategyInputError, get_spec, get_strategy, strategy_names
from schemas.config import load_jobs
from schemas.constraints import KINDS, Constraints, Pin, Spread, parse_constraints
from schemas.errors import ConfigError
from schemas.strategies import STRATEGIES

ZONES = ("a", "b", "c")


def toml_value(value: Any) -> str:
    """A TOML inline value of nested dicts, lists, strings and ints."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


def write_job(path: Path, strategy: str, table: dict[str, Any]) -> Path:
    path.write_text(f'[jobs.j]\nstrategy = "{strategy}"\nconstraints = {toml_value(table)}\n')
    return path


@st.composite
def cases(draw: st.DrawFn) -> tuple[ClusterState, dict[str, Any], Budget]:
    n_nodes = draw(st.integers(2, 5))
    zones = [draw(st.sampled_from(ZONES)) for _ in range(n_nodes)]
    labelled = [i == 0 or draw(st.booleans()) for i in range(n_nodes)]
    nodes = tuple(Node(f"n{i}", draw(st.sampled_from([1.0, 1.5, 2.0])),
                       labels=(("rack", f"r{i}"), ("zone", zones[i])) if labelled[i] else ())
                  for i in range(n_nodes))
    n_units = draw(st.integers(2, 8))
    units = [f"k{j}" for j in range(n_units)]
    kgs = tuple(KeyGroup(u, draw(st.sampled_from(["op1", "op2"])),
                         draw(st.floats(0, 20, allow_nan=False)), migration_cost=1.0)
                for u in units)
    assignment = {u: f"n{draw(st.integers(0, n_nodes - 1))}" for u in units}
    table: dict[str, Any] = {"node_labels": {n.id: dict(n.labels) for n in nodes if n.labels}}
    if draw(st.booleans()):
        spread: dict[str, Any] = {"label": draw(st.sampled_from(["zone", "rack", "host"]))}
        if draw(st.booleans()):
            spread["operator"] = draw(st.sampled_from(["op1", "op2"]))
        else:
            spread["units"] = draw(st.lists(st.sampled_from(units), min_size=1, max_size=4,
                                            unique=True))
        if draw(st.booleans()):
            spread["min_domains"] = draw(st.integers(1, 4))
        if draw(st.booleans()) or "min_domains" not in spread:
            spread["max_per_domain"] = draw(st.integers(1, 4))
        table["spread"] = [spread]
    if draw(st.booleans()):
        table["anti_affinity"] = [{"units": draw(st.lists(st.sampled_from(units), min_size=2,
                                                          max_size=3, unique=True))}]
    if draw(st.booleans()):
        table["pin"] = [{"units": draw(st.lists(st.sampled_from(units), min_size=1, max_size=2,
                                                unique=True)),
                         "labels": {"zone": draw(st.sampled_from(ZONES))}}]
    if draw(st.booleans()):
        table["max_units_per_node"] = draw(st.integers(1, 6))
    if draw(st.booleans()):
        table["exclude_nodes"] = [f"n{draw(st.integers(0, n_nodes - 1))}"]
    budget = draw(st.sampled_from([Budget(), Budget(max_migrations=2), Budget(max_migrations=0)]))
    return ClusterState(nodes, kgs, assignment), table, budget


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(case=cases())
def test_every_strategy_keeps_the_constraints_or_the_job_is_refused_at_load(
        tmp_path: Path, case: tuple[ClusterState, dict[str, Any], Budget]) -> None:
    bare, table, budget = case
    for name in strategy_names():
        path = write_job(tmp_path / f"{name}.toml", name, table)
        try:
            job = load_jobs(path)["j"]
        except ConfigError as exc:
            text = str(exc)
            assert "jobs.j.constraints" in text or "cannot hold the constraint(s)" in text, text
            try:
                cons = parse_constraints(table)
            except ValueError:
                continue  # the file itself is wrong: refused whatever the strategy
            unheld = [k for k in cons.kinds if k not in STRATEGIES[name].constraints]
            assert unheld and all(k in text for k in unheld), text
            state = ClusterState(bare.nodes, bare.keygroups, bare.assignment, constraints=cons)
            with pytest.raises(StrategyInputError, match="cannot hold the topology"):
                get_strategy(name)(state, budget)  # the registry refuses it as well
            continue
        assert job.constraints is not None
        if not job.constraints:
            continue  # labels alone: nothing to keep (a strategy may still lack its facets)
        assert set(job.constraints.kinds) <= set(get_spec(name).constraints)
        state = ClusterState(bare.nodes, bare.keygroups, bare.assignment,
                             constraints=job.constraints)
        plan = get_strategy(name)(state, budget, time_limit_s=2.0)
        assert raised(state, plan.assignment) == [], (name, plan.assignment)
        if not broken(state, state.assignment):
            assert broken(state, plan.assignment) == [], (name, plan.assignment)
        for still in broken(state, plan.assignment):
            assert still in plan.message


@st.composite
def witnessed(draw: st.DrawFn) -> tuple[ClusterState, dict[str, str]]:
    """A labelled cluster, a random current assignment and constraints built so that a random
    witness assignment keeps them all."""
    n_nodes = draw(st.integers(3, 5))
    nodes = tuple(Node(f"n{i}", 1.0, labels=(("zone", ZONES[i % 3]),)) for i in range(n_nodes))
    n_units = draw(st.integers(3, 7))
    kgs = tuple(KeyGroup(f"k{j}", "op", draw(st.floats(0, 10, allow_nan=False)))
                for j in range(n_units))
    ids = [n.id for n in nodes]
    current = {k.id: draw(st.sampled_from(ids)) for k in kgs}
    witness = {k.id: draw(st.sampled_from(ids)) for k in kgs}
    zone = {n.id: dict(n.labels)["zone"] for n in nodes}
    per_zone: dict[str, int] = {}
    per_node: dict[str, int] = {}
    for n in witness.values():
        per_zone[zone[n]] = per_zone.get(zone[n], 0) + 1
        per_node[n] = per_node.get(n, 0) + 1
    cons = Constraints(
        node_labels={n.id: dict(n.labels) for n in nodes},
        spread=(Spread("zone", operator="op", min_domains=len(per_zone),
                       max_per_domain=max(per_zone.values())),),
        max_units_per_node=max(per_node.values()),
        exclude_nodes=frozenset(set(ids) - set(witness.values()) - set(current.values())))
    state = ClusterState(nodes, kgs, current, constraints=cons)
    assert broken(state, witness) == []
    return state, witness


@settings(max_examples=30, deadline=None)
@given(case=witnessed())
def test_the_milp_repairs_every_constraint_a_witness_shows_can_hold(
        case: tuple[ClusterState, dict[str, str]]) -> None:
    state, _ = case
    plan = get_strategy("milp")(state, Budget(), time_limit_s=5.0)
    assert broken(state, plan.assignment) == [], (plan.assignment, plan.message)


def test_the_registry_post_check_refuses_a_plan_that_breaks_a_kept_constraint() -> None:
    nodes = (Node("n0", labels=(("zone", "a"),)), Node("n1", labels=(("zone", "b"),)))
    kgs = (KeyGroup("k0", "op", 5.0), KeyGroup("k1", "op", 5.0))
    cons = Constraints(node_labels={"n0": {"zone": "a"}, "n1": {"zone": "b"}},
                       spread=(Spread("zone", operator="op", min_domains=2),))
    state = ClusterState(nodes, kgs, {"k0": "n0", "k1": "n1"}, constraints=cons)
    assert raised(state, {"k0": "n0", "k1": "n0"}) == [cons.spread[0].name]
    assert not MoveCheck(state).allows(state.assignment, "k1", "n0")
    assert amounts(state, state.assignment) == {cons.spread[0].name: 0}


@pytest.mark.parametrize(("table", "message"), [
    ({"node_labels": {"n0": {"zone": "a"}}, "spread": [{"label": "rack", "operator": "o",
                                                        "min_domains": 1}]},
     "spread[0].label: unknown label 'rack'"),
    ({"node_labels": {"n0": {"zone": "a"}, "n1": {"zone": "b"}},
      "spread": [{"label": "zone", "operator": "o", "min_domains": 3}]},
     "spread[0].min_domains: unsatisfiable: 3 zones asked, the labelled nodes have 2"),
    ({"node_labels": {"n0": {"zone": "a"}}, "spread": [{"label": "zone", "units": ["k0", "k1"],
                                                        "max_per_domain": 1}]},
     "spread[0].max_per_domain: unsatisfiable: 2 units, at most 1 in each of 1 zones"),
    ({"node_labels": {"n0": {"zone": "a"}}, "pin": [{"units": ["k0"], "labels": {"zone": "z"}}]},
     "pin[0].labels: no node has zone = 'z'"),
    ({"max_units_per_node": 0}, "max_units_per_node: must be a whole number >= 1"),
    ({"affinity": []}, "unknown field(s) affinity"),
])
def test_bad_constraints_are_one_clear_error_at_load(tmp_path: Path, table: dict[str, Any],
                                                     message: str) -> None:
    path = write_job(tmp_path / "jobs.toml", "milp", table)
    with pytest.raises(ConfigError) as err:
        load_jobs(path)
    assert f"{path}: jobs.j.constraints: {message}" in str(err.value)


def test_a_strategy_that_cannot_hold_a_kind_is_refused_naming_it(tmp_path: Path) -> None:
    path = write_job(tmp_path / "jobs.toml", "flux", {"max_units_per_node": 4})
    with pytest.raises(ConfigError, match=r"jobs\.j\.strategy: strategy 'flux' cannot hold the "
                                          r"constraint\(s\) max_units_per_node .*greedy, milp"):
        load_jobs(path)
    assert set(KINDS) == set(STRATEGIES["milp"].constraints) == set(
        STRATEGIES["greedy"].constraints)


def _held_on_b(cons: Constraints) -> ClusterState:
    """k0 (load 40) on n0, marked for removal and alone in zone a; n1 and n2 in zone b."""
    nodes = (Node("n0", labels=(("zone", "a"),), marked_for_removal=True),
             Node("n1", labels=(("zone", "b"),)), Node("n2", labels=(("zone", "b"),)))
    kgs = (KeyGroup("k0", "op", 40.0), KeyGroup("k1", "op", 10.0), KeyGroup("k2", "op", 10.0))
    return ClusterState(nodes, kgs, {"k0": "n0", "k1": "n1", "k2": "n2"}, constraints=cons)


@pytest.mark.parametrize("name", ["milp", "greedy"])
@pytest.mark.parametrize("budget", [Budget(), Budget(max_migrations=1)])
@pytest.mark.parametrize(("cons", "named"), [
    (Constraints(node_labels={"n0": {"zone": "a"}, "n1": {"zone": "b"}, "n2": {"zone": "b"}},
                 pin=(Pin(("k0",), {"zone": "a"}),)), "pin of ['k0'] to {'zone': 'a'}"),
    (Constraints(max_units_per_node=1), "at most 1 units per node"),
])
def test_a_unit_a_hard_constraint_keeps_on_b_is_said_so_naming_the_constraint(
        name: str, budget: Budget, cons: Constraints, named: str) -> None:
    state = _held_on_b(cons)
    plan = get_strategy(name)(state, budget)
    assert plan.assignment["k0"] == "n0"
    assert "1 unit(s) stay on nodes marked for removal (k0)" in plan.message, plan.message
    assert f"k0 is held by hard constraint(s) {named}" in plan.message, plan.message
    assert "weighs the load left on B" not in plan.message, plan.message
    assert "moves only to lower d" not in plan.message, plan.message
    assert "does not cover draining" not in plan.message, plan.message
