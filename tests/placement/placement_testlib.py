"""Instance builders and a brute-force reference for the placement tests."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from hypothesis import strategies as st

from placement.metrics import max_deviation, mean_load
from placement.model import Budget, ClusterState, KeyGroup, Node


def make_state(loads: list[float], homes: list[int], caps: list[float], marked: list[bool],
               costs: list[float] | None = None) -> ClusterState:
    nodes = tuple(Node(f"n{i}", capacity=c, marked_for_removal=m)
                  for i, (c, m) in enumerate(zip(caps, marked, strict=True)))
    kgs = tuple(KeyGroup(f"g{k}", "op", load=v, migration_cost=(costs or loads)[k])
                for k, v in enumerate(loads))
    return ClusterState(nodes, kgs, {f"g{k}": f"n{h}" for k, h in enumerate(homes)})


def within_budget(state: ClusterState, budget: Budget, new: Mapping[str, str]) -> bool:
    moved = [k for k in state.keygroups if new[k.id] != state.assignment[k.id]]
    if moved and (budget.max_migrations == 0 or budget.max_migration_cost == 0):
        return False
    if budget.max_migrations is not None and len(moved) > budget.max_migrations:
        return False
    cost = sum(k.migration_cost for k in moved)
    return budget.max_migration_cost is None or cost <= budget.max_migration_cost + 1e-9


def brute_force_min_d(state: ClusterState, budget: Budget, *, into_b: bool, five: bool = True
                      ) -> float | None:
    """min d over every assignment within budget with d <= mean (constraint (5)); None if none.

    `into_b=True` also enumerates moves onto nodes marked for removal (the paper's full model);
    `five=False` drops (5) (the planner's relaxation), so there is always an answer.
    """
    mean = mean_load(state)
    node_ids = list(state.node_ids)
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    best: float | None = None
    kg_ids = [k.id for k in state.keygroups]
    for combo in itertools.product(node_ids, repeat=len(kg_ids)):
        new = dict(zip(kg_ids, combo, strict=True))
        if not into_b and any(new[k] in marked and new[k] != state.assignment[k]
                              for k in kg_ids):
            continue
        if not within_budget(state, budget, new):
            continue
        d = max_deviation(state, new)
        if (d <= mean + 1e-9 or not five) and (best is None or d < best):
            best = d
    return best


@st.composite
def tiny_instances(draw: st.DrawFn, max_nodes: int = 3, max_kgs: int = 5
                   ) -> tuple[ClusterState, Budget]:
    n = draw(st.integers(2, max_nodes))
    g = draw(st.integers(1, max_kgs))
    loads = draw(st.lists(st.floats(0.5, 20.0), min_size=g, max_size=g))
    costs = draw(st.lists(st.floats(0.1, 5.0), min_size=g, max_size=g))
    homes = draw(st.lists(st.integers(0, n - 1), min_size=g, max_size=g))
    caps = draw(st.lists(st.sampled_from([0.5, 1.0, 1.0, 2.0]), min_size=n, max_size=n))
    marked = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if all(marked):
        marked[0] = False
    kind = draw(st.sampled_from(["count", "cost", "both"]))
    count = draw(st.integers(1, 3)) if kind in ("count", "both") else None
    cost = draw(st.floats(0.5, 8.0)) if kind in ("cost", "both") else None
    return make_state(loads, homes, caps, marked, costs), Budget(cost, count)
