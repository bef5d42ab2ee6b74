"""Constraint declaration order never changes a plan.

The same anti-affinity groups, pins, spreads and labels declared in another order (groups
reordered, units listed otherwise inside a group, label tables in another order) describe the
same instance; the canonical order (placement/canonical.py) covers constraints as it covers
nodes, units and edges, so every strategy that holds constraints gets the same plan.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from hypothesis import given, settings
from hypothesis import strategies as st

from placement.canonical import canonical_state
from placement.model import Budget, ClusterState, KeyGroup, Node
from placement.registry import get_strategy
from schemas.constraints import AntiAffinity, Constraints, Pin, Spread

ZONES = ("a", "b", "c")
T = TypeVar("T")


def _reordered(cons: Constraints, perm: st.DataObject) -> Constraints:
    """`cons` declared in another order: every tuple permuted, every unit list too."""
    def shuffle(items: tuple[T, ...], label: str) -> tuple[T, ...]:
        return tuple(perm.draw(st.permutations(items), label=label))

    anti = tuple(AntiAffinity(shuffle(a.units, "anti units")) for a in cons.anti_affinity)
    pins = tuple(Pin(shuffle(p.units, "pin units"), dict(reversed(list(p.labels.items()))))
                 for p in cons.pin)
    spread = tuple(dataclasses.replace(s, units=shuffle(s.units, "spread units"))
                   for s in cons.spread)
    labels = {n: dict(reversed(list(ls.items())))
              for n, ls in reversed(list(cons.node_labels.items()))}
    return dataclasses.replace(cons, node_labels=labels,
                               anti_affinity=shuffle(anti, "anti groups"),
                               pin=shuffle(pins, "pins"), spread=shuffle(spread, "spreads"))


@st.composite
def constrained(draw: st.DrawFn) -> tuple[ClusterState, Budget]:
    """A labelled cluster with several anti-affinity groups, pins and a spread."""
    n_nodes = draw(st.integers(3, 5))
    nodes = tuple(Node(f"n{i}", 1.0, labels=(("rack", f"r{i}"), ("zone", ZONES[i % 3])))
                  for i in range(n_nodes))
    n_units = draw(st.integers(6, 12))
    units = [f"k{j}" for j in range(n_units)]
    kgs = tuple(KeyGroup(u, "op", float(draw(st.integers(1, 30))), migration_cost=1.0)
                for u in units)
    assignment = {u: f"n{draw(st.integers(0, n_nodes - 1))}" for u in units}
    groups = draw(st.lists(st.lists(st.sampled_from(units), min_size=2, max_size=3, unique=True),
                           min_size=2, max_size=4))
    pins = draw(st.lists(st.tuples(st.lists(st.sampled_from(units), min_size=1, max_size=2,
                                            unique=True), st.sampled_from(ZONES)), max_size=2))
    spread = draw(st.lists(st.sampled_from(units), min_size=2, max_size=4, unique=True))
    cons = Constraints(
        node_labels={n.id: dict(n.labels) for n in nodes},
        anti_affinity=tuple(AntiAffinity(tuple(g)) for g in groups),
        pin=tuple(Pin(tuple(us), {"zone": z}) for us, z in pins),
        spread=(Spread("zone", units=tuple(spread), max_per_domain=2),))
    budget = draw(st.sampled_from([Budget(), Budget(max_migrations=3)]))
    return ClusterState(nodes, kgs, assignment, constraints=cons), budget


@settings(max_examples=25, deadline=None)
@given(case=constrained(), perm=st.data())
def test_constraint_declaration_order_never_changes_the_plan(
        case: tuple[ClusterState, Budget], perm: st.DataObject) -> None:
    state, budget = case
    other = dataclasses.replace(state, constraints=_reordered(state.constraints, perm))
    assert canonical_state(other).constraints == canonical_state(state).constraints
    for name in ("milp", "greedy"):
        first = get_strategy(name)(state, budget, time_limit_s=5.0)
        again = get_strategy(name)(other, budget, time_limit_s=5.0)
        assert again.assignment == first.assignment, name
        assert again.moves == first.moves, name


def test_milp_anti_affinity_groups_in_either_order_give_one_plan() -> None:
    """Two anti-affinity groups declared in either order: one plan (before the canonical order
    covered constraints, 7 moves to different nodes, the same load distance)."""
    nodes = tuple(Node(f"n{i}", 1.0) for i in range(4))
    loads = [20, 20, 20, 5, 10, 20, 5, 30, 30]
    homes = [1, 3, 1, 3, 1, 0, 1, 1, 1]
    kgs = tuple(KeyGroup(f"k{j}", "op", float(load), migration_cost=1.0)
                for j, load in enumerate(loads))
    assignment = {f"k{j}": f"n{home}" for j, home in enumerate(homes)}
    groups = (AntiAffinity(("k6", "k5", "k1")), AntiAffinity(("k0", "k4")))
    plans = [get_strategy("milp")(ClusterState(nodes, kgs, assignment,
                                               constraints=Constraints(anti_affinity=order)),
                                  Budget(), time_limit_s=5.0)
             for order in (groups, tuple(reversed(groups)))]
    assert plans[0].assignment == plans[1].assignment
