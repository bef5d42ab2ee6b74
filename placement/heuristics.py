"""The two load-balancing heuristics several strategies share: Flux and greedy.

They are the baselines of the paper's evaluation (§5.1, registered as `flux` and `greedy` in
placement/baselines/), the warm starts of the MILP (placement/milp/core.py), and the balancers
drain_then_balance may choose; living in the core, none of those families imports another.
Both respect the budget, never move a key group onto a node of B, and move a key group at
most once.

## Flux

Flux (Shah et al., ICDE 2003) as the paper's baseline (§5.1, §5.2.1).

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
A key group moves at most once per plan.

## Greedy

Greedy: fix the largest deviation first, one migration at a time, under the budget.

Each step takes the node with the largest deviation in the MILP's sense (|load − mean| on A,
load − mean on B) and considers every single move that touches it: out of it to any node of A
when it is above the mean, into it from any node when it is below. It applies the move that
lowers (d, Σ dev²) the most, lexicographically, and stops when no move helps or the budget is
spent. Ties: the smaller key-group id, then the smaller node id. A key group moves at most once.

Partners: with more than `PARTNERS` nodes, a step tries only the `PARTNERS` nodes deviating most
the other way (the least loaded nodes of A as destinations, the most loaded nodes as sources),
which keeps a step O(key groups per node × PARTNERS) instead of O(|G|) at 1 000 nodes; the
best move almost always involves one of them (moving to the least loaded node is what lowers
both d and Σ dev² most), but this is a restriction, not an equivalence.

Topology constraints (placement/constraints.py): when the state has some, greedy first repairs
the ones the current assignment breaks (`_repair`: per broken constraint, in declaration order,
the first unit and least utilised node of A whose move lowers the summed violation and raises
none, under the budget), then balances with only the moves that raise no constraint's violation
(`MoveCheck.allows`). A plan therefore never breaks a constraint more than the current
assignment does.
"""

from __future__ import annotations

from collections.abc import Iterator

from placement.common import Loads, fits
from placement.constraints import MoveCheck
from placement.model import Budget, ClusterState, KeyGroup

__all__ = ["PARTNERS", "flux_assignment", "greedy_assignment"]


def flux_assignment(state: ClusterState, budget: Budget) -> tuple[dict[str, str], int]:
    """Flux's allocation under the budget, and how many key groups it moved."""
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
    return assignment, count


PARTNERS = 16


def _dev(loads: Loads, node: str, raw: float) -> float:
    """Deviation in the MILP's sense: |load − mean| on A, max(load − mean, 0) on B."""
    value = raw / loads.cap[node] - loads.mean
    return max(value, 0.0) if loads.in_b[node] else abs(value)


def greedy_assignment(state: ClusterState, budget: Budget) -> dict[str, str]:
    """The greedy allocation (also a warm start for the MILP)."""
    assignment = dict(state.assignment)
    loads = Loads.of(state, assignment)
    on_node: dict[str, list[KeyGroup]] = {n.id: [] for n in state.nodes}
    for kg in sorted(state.keygroups, key=lambda k: k.id):
        on_node[assignment[kg.id]].append(kg)
    a_nodes = sorted(n.id for n in state.nodes if not n.marked_for_removal)
    moved: set[str] = set()
    count, cost = 0, 0.0
    check = MoveCheck(state)
    if check.active:
        count, cost = _repair(state, budget, check, assignment, loads, on_node, moved)

    def candidates(worst: str) -> Iterator[tuple[KeyGroup, str, str]]:
        if loads.in_b[worst] or loads.util(worst) > loads.mean:
            dsts = sorted(a_nodes, key=lambda n: (loads.util(n), n))[:PARTNERS + 1]
            for kg in on_node[worst]:
                for dst in sorted(dsts):
                    if dst != worst:
                        yield kg, worst, dst
        else:
            srcs = sorted(on_node, key=lambda n: (not (loads.in_b[n] and on_node[n]),
                                                  -loads.util(n), n))
            for src in sorted(srcs[:PARTNERS + 1]):
                if src != worst:
                    for kg in on_node[src]:
                        yield kg, src, worst

    while True:
        devs = {node: _dev(loads, node, raw) for node, raw in loads.raw.items()}
        top = sorted(devs, key=lambda node: (-devs[node], node))[:3]
        d_now = devs[top[0]]
        sq_now = sum(v * v for v in devs.values())
        best: tuple[float, float, KeyGroup, str, str] | None = None
        for kg, src, dst in candidates(top[0]):
            if kg.id in moved or not fits(budget, count + 1, cost + kg.migration_cost):
                continue
            if check.active and not check.allows(assignment, kg.id, dst):
                continue
            dev_src = _dev(loads, src, loads.raw[src] - kg.load)
            dev_dst = _dev(loads, dst, loads.raw[dst] + kg.load)
            rest = next((devs[n] for n in top if n not in (src, dst)), 0.0)
            d_new = max(rest, dev_src, dev_dst)
            sq_new = sq_now - devs[src] ** 2 - devs[dst] ** 2 + dev_src**2 + dev_dst**2
            if best is None or (d_new, sq_new) < best[:2]:
                best = (d_new, sq_new, kg, src, dst)
        if best is None:
            break
        d_new, sq_new, kg, src, dst = best
        better = d_new < d_now - 1e-12 or (d_new <= d_now + 1e-12 and sq_new < sq_now - 1e-12)
        if not better:
            break
        loads.move(kg.load, src, dst)
        on_node[src].remove(kg)
        on_node[dst].append(kg)
        assignment[kg.id] = dst
        moved.add(kg.id)
        count, cost = count + 1, cost + kg.migration_cost
    return assignment


def _repair(state: ClusterState, budget: Budget, check: MoveCheck, assignment: dict[str, str],
            loads: Loads, on_node: dict[str, list[KeyGroup]], moved: set[str]
            ) -> tuple[int, float]:
    """Greedy's repair of the constraints the current assignment breaks (module docstring);
    updates `assignment`, `loads`, `on_node` and `moved`, returns (moves, their cost)."""
    count, cost = 0, 0.0
    a_nodes = [n.id for n in state.nodes if not n.marked_for_removal]
    by_id = {k.id: k for k in state.keygroups}
    while check.total(assignment) > 0:
        step = None
        for unit in sorted(assignment):
            kg = by_id[unit]
            if unit in moved or not fits(budget, count + 1, cost + kg.migration_cost):
                continue
            dst = next((n for n in sorted(a_nodes, key=lambda n: (loads.util(n), n))
                        if n != assignment[unit] and check.repairs(assignment, unit, n)), None)
            if dst is not None:
                step = (kg, assignment[unit], dst)
                break
        if step is None:
            return count, cost
        kg, src, dst = step
        loads.move(kg.load, src, dst)
        on_node[src].remove(kg)
        on_node[dst].append(kg)
        assignment[kg.id] = dst
        moved.add(kg.id)
        count, cost = count + 1, cost + kg.migration_cost
    return count, cost
