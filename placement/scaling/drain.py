"""The non-integrated scale-in of paper §5.1 (Figure 5): drain B evenly first, then balance.

The paper compares its integrated MILP (scale-in and load balancing in one model, §4.3.1) with
"a non-integrated approach, which first performs scale-in as an independent process and then
tries to move the key groups from the to-be-removed nodes to the other nodes evenly". Here:

1. *Drain* (scale-in on its own): the nodes of B are emptied one at a time, the one with the
   fewest key groups left first (a node that empties can be terminated); each of its key groups,
   largest gLoad_k first, goes to the node of A with the lowest utilisation at that moment, which
   spreads B's load evenly over A. A key group whose mc_k does not fit the budget left is
   skipped, and so is one that fits no node of A under the resource caps (if any). Drain stops
   when B is empty or the budget is spent.
2. *Balance* A with what is left of the budget (count and cost), with `balancer` ("milp" by
   default, so that a comparison with the integrated MILP isolates the integration; "flux" or
   "greedy" also work). The balancer sees the drained allocation as current, so a key group it
   moves again is charged twice: conservative, the plan never exceeds the budget.

Ties: B nodes by (key groups left, id), key groups by (load descending, id), A nodes by
(utilisation, id). Status HEURISTIC, no lower bound.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from placement.common import MIN_SOLVE_S, Loads, fits, is_frozen, make_plan
from placement.model import Budget, ClusterState, KeyGroup, Plan, SolverStatus
from placement.scaling.params import BALANCERS, DrainParams

__all__ = ["BALANCERS", "drain_evenly", "plan_drain_then_balance"]



def drain_evenly(state: ClusterState, budget: Budget,
                 resource_caps: Mapping[str, float] | None = None
                 ) -> tuple[dict[str, str], int, float]:
    """Phase 1: the drained allocation, the migrations it used and their cost.

    With `resource_caps` a key group goes only to a node of A where it fits every cap (the
    MILP's (R)); one that fits nowhere stays on B.
    """
    assignment = dict(state.assignment)
    if is_frozen(budget):
        return assignment, 0, 0.0
    loads = Loads.of(state, assignment)
    caps = dict(resource_caps or {})
    use = {(n.id, r): 0.0 for n in state.nodes for r in caps}
    for kg in state.keygroups:
        for r in caps:
            use[assignment[kg.id], r] += kg.loads.get(r, 0.0)

    def fits_caps(kg: KeyGroup, node: str) -> bool:
        return all(use[node, r] + kg.loads.get(r, 0.0) <= c * loads.cap[node] + 1e-7
                   for r, c in caps.items())

    a_nodes = sorted(n.id for n in state.nodes if not n.marked_for_removal)
    on_b: dict[str, list[KeyGroup]] = {n.id: [] for n in state.nodes if n.marked_for_removal}
    for kg in state.keygroups:
        if assignment[kg.id] in on_b:
            on_b[assignment[kg.id]].append(kg)
    count, cost = 0, 0.0
    for b in sorted(on_b, key=lambda nid: (len(on_b[nid]), nid)):
        for kg in sorted(on_b[b], key=lambda k: (-k.load, k.id)):
            room = [nid for nid in a_nodes if fits_caps(kg, nid)]
            if not room or not fits(budget, count + 1, cost + kg.migration_cost):
                continue
            dst = min(room, key=lambda nid: (loads.util(nid), nid))
            for r in caps:
                use[b, r] -= kg.loads.get(r, 0.0)
                use[dst, r] += kg.loads.get(r, 0.0)
            loads.move(kg.load, b, dst)
            assignment[kg.id] = dst
            count, cost = count + 1, cost + kg.migration_cost
    return assignment, count, cost


def _left(budget: Budget, count: int, cost: float) -> Budget:
    n = None if budget.max_migrations is None else budget.max_migrations - count
    c = None if budget.max_migration_cost is None else max(0.0, budget.max_migration_cost - cost)
    return Budget(max_migration_cost=c, max_migrations=n)


def plan_drain_then_balance(state: ClusterState, budget: Budget, params: DrainParams) -> Plan:
    """Drain B evenly under the budget, then balance A with the rest (module docstring).

    The balancer is the strategy of that name, its own function (`run_inner`): the MILP with
    the MILP's fields of `params` and the time left, Flux or greedy with the shared defaults."""
    from placement.registry import run_inner  # the registry imports this module to register it

    started = time.perf_counter()
    balancer, time_limit_s = params.balancer, params.time_limit_s
    drained, count, cost = drain_evenly(state, budget, params.resource_caps)
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    left_on_b = sum(1 for node in drained.values() if node in marked)
    note = f"drain: {count} key groups moved off B, {left_on_b} left on B"
    if left_on_b:
        why = ("no node of A has room for them under the resource caps"
               if params.resource_caps and fits(budget, count + 1, cost) else
               "the budget allows no more migrations")
        note += f" (nodes marked for removal: {why})"
    rest = _left(budget, count, cost)
    if rest.max_migrations != 0 and rest.max_migration_cost != 0 and not is_frozen(budget):
        mid = replace(state, assignment=drained)
        own: dict[str, Any] = {}
        if balancer == "milp":
            left_s = max(MIN_SOLVE_S, time_limit_s - (time.perf_counter() - started))
            own = {**params.model_dump(exclude={"balancer"}), "time_limit_s": left_s}
        bal = run_inner(balancer, mid, rest, own)
        drained = dict(bal.assignment)
        note += f"; balance ({balancer}): {bal.migrations} migrations, {bal.status.value}"
    return make_plan(state, drained, status=SolverStatus.HEURISTIC, lower_bound=None,
                     message=note)
