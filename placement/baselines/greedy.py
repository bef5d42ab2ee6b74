"""Greedy: fix the largest deviation first, one migration at a time, under the budget.

Each step takes the node with the largest deviation in the MILP's sense (|load − mean| on A,
load − mean on B) and considers every single move that touches it: out of it to any node of A
when it is above the mean, into it from any node when it is below. It applies the move that
lowers (d, Σ dev²) the most, lexicographically, and stops when no move helps or the budget is
spent. Ties: the smaller key-group id, then the smaller node id. A key group moves at most once.

Partners: with more than `PARTNERS` nodes, a step tries only the `PARTNERS` nodes deviating most
the other way (the least loaded nodes of A as destinations, the most loaded nodes as sources),
which keeps a step O(key groups per node × PARTNERS) instead of O(|G|) at 1 000 nodes; the
best move almost always involves one of them (moving to the least loaded node is what lowers
both d and Σ dev² most), but this is a restriction, not an equivalence. Greedy has no
parameters of its own: `params` (the shared ones) is accepted for the strategy interface.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from placement.common import Loads, check_inputs, fits, make_plan
from placement.model import Budget, ClusterState, KeyGroup, Plan, SolverStatus
from placement.params import StrategyParams

__all__ = ["PARTNERS", "greedy_assignment", "plan_greedy"]

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


def plan_greedy(state: ClusterState, budget: Budget, params: StrategyParams | None = None
                ) -> Plan:
    """Largest-deviation-first moves under the budget; status HEURISTIC, no lower bound."""
    started = time.perf_counter()
    check_inputs(state, budget)
    assignment = greedy_assignment(state, budget)
    return make_plan("greedy", state, assignment, status=SolverStatus.HEURISTIC,
                     lower_bound=None, started=started)
