"""Flux (Shah et al., ICDE 2003) as the paper's baseline (§5.1, §5.2.1).

Each round sorts the nodes by utilisation and pairs the most loaded with the least loaded, the
second most with the second least, and so on. For each pair it moves the biggest *suitable* key
group from the more loaded node to the less loaded one: one whose move leaves both nodes
strictly between their old utilisations (receiver + g/cap_r < donor and donor − g/cap_d >
receiver) and whose mc_k fits the budget left. Rounds repeat until the budget is spent or a
round moves nothing.

With unit capacities the two conditions are one (Flux's "the move lowers the larger of the
pair"); with heterogeneous nodes the first alone let a small donor drop far below the mean (a
key group of load 1 off a node of capacity 1.5 onto one of capacity 4 took the donor from
0.67 to 0, the load distance from 0.30 to 0.36), so Flux could return a plan worse than the
current one. A key group of zero load moves only off B: elsewhere its migration changes nothing.

Ties: nodes sort by (utilisation, id), key groups by (load descending, id). Nodes marked for
removal (B) never receive; while they hold a key group, a round pairs only them (each with one
of the least utilised nodes of A), treated as infinitely loaded, so the budget drains B before
it balances (Flux knows nothing of scale-in, so B is drained as a separate concern, the paper's
"non-integrated" way).
A key group moves at most once per plan. Flux has no parameters of its own: `params` (the shared
ones) is accepted for the strategy interface and unused.
"""

from __future__ import annotations

import time

from placement.common import Loads, check_inputs, fits, make_plan
from placement.model import Budget, ClusterState, KeyGroup, Plan, SolverStatus
from placement.params import StrategyParams

__all__ = ["plan_flux"]


def plan_flux(state: ClusterState, budget: Budget, params: StrategyParams | None = None
              ) -> Plan:
    """The Flux heuristic under the budget; status HEURISTIC, no lower bound."""
    started = time.perf_counter()
    check_inputs(state, budget)
    assignment = dict(state.assignment)
    loads = Loads.of(state, assignment)
    on_node: dict[str, list[KeyGroup]] = {n.id: [] for n in state.nodes}
    for kg in state.keygroups:
        on_node[assignment[kg.id]].append(kg)
    for kgs in on_node.values():
        kgs.sort(key=lambda k: (-k.load, k.id))
    moved: set[str] = set()
    count, cost = 0, 0.0
    a_nodes = [n.id for n in state.nodes if not n.marked_for_removal]
    b_nodes = sorted(n.id for n in state.nodes if n.marked_for_removal)
    while True:
        any_move = False
        donors_b = [b for b in b_nodes if on_node[b]]
        order = sorted(a_nodes, key=lambda nid: (loads.util(nid), nid))
        if donors_b:  # B first: its rounds spend the budget before any balancing
            donors, receivers = donors_b, order
        else:
            donors, receivers = order[::-1][: len(order) // 2], order[: len(order) // 2]
        for donor, receiver in zip(donors, receivers, strict=False):
            if donor == receiver:
                continue
            for kg in on_node[donor]:
                if kg.id in moved or not fits(budget, count + 1, cost + kg.migration_cost):
                    continue
                after = loads.util(receiver) + kg.load / loads.cap[receiver]
                left = loads.util(donor) - kg.load / loads.cap[donor]
                if loads.in_b[donor] or (kg.load > 0 and after < loads.util(donor)
                                         and left > loads.util(receiver)):
                    on_node[donor].remove(kg)
                    on_node[receiver].append(kg)
                    on_node[receiver].sort(key=lambda k: (-k.load, k.id))
                    loads.move(kg.load, donor, receiver)
                    assignment[kg.id] = receiver
                    moved.add(kg.id)
                    count, cost = count + 1, cost + kg.migration_cost
                    any_move = True
                    break
        if not any_move:
            break
    return make_plan("flux", state, assignment, status=SolverStatus.HEURISTIC, lower_bound=None,
                     started=started, message=f"{count} moves")
