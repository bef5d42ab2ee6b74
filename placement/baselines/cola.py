"""COLA (Khandekar et al., Middleware 2009) as the paper describes it (§2.1, §5.3).

"It first puts all operators into one partition, and then gradually splits the partitions until
a solution with a sufficient load balance is obtained. Splitting is done by a balanced graph
partitioning algorithm, which ensures the load of each partition is relatively even, while
minimizing the data sent across different partitions."

Here, on key groups:
1. one partition holding every key group;
2. place the partitions on the nodes of A: largest load first onto the node with the lowest
   utilisation after receiving it (LPT, capacity-aware; ties by node id);
3. if that placement's load distance is at most `max_ld` (the "sufficient load balance",
   default the same maxLD = 10 as ALBIC) or nothing can be split, stop; otherwise bisect the
   heaviest partition with METIS (vertex weight gLoad_k, edge weight out(g_i, g_j) summed over
   both directions: balanced, minimum weighted edge cut) and go back to 2.

COLA is a static optimiser: it re-optimises from scratch every period, ignores the current
allocation and the migration budget (the budget is accepted only for the strategy interface),
and never places anything on a node marked for removal (B). Status HEURISTIC, no lower bound.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

from placement.baselines.params import DEFAULT_COLA_MAX_LD, ColaParams
from placement.common import make_plan
from placement.graphpart import graph_part, pair_rates, undirected_weights
from placement.metrics import mean_load
from placement.model import Budget, ClusterState, Plan, SolverStatus

__all__ = ["cola_partitions", "plan_cola"]


def _place(parts: list[list[str]], load: Mapping[str, float], state: ClusterState
           ) -> tuple[dict[str, str], float]:
    """LPT placement of whole partitions on A; (assignment, load distance over A)."""
    a_nodes = [n for n in state.nodes if not n.marked_for_removal]
    raw = {n.id: 0.0 for n in a_nodes}
    cap = {n.id: n.capacity for n in a_nodes}
    weights = [sum(load[k] for k in p) for p in parts]
    assignment: dict[str, str] = {}
    for i in sorted(range(len(parts)), key=lambda j: (-weights[j], min(parts[j]))):
        node = min(raw, key=lambda n: ((raw[n] + weights[i]) / cap[n], n))
        raw[node] += weights[i]
        for k in parts[i]:
            assignment[k] = node
    mean = mean_load(state)
    return assignment, max(abs(raw[n] / cap[n] - mean) for n in raw)


def cola_partitions(state: ClusterState, max_ld: float = DEFAULT_COLA_MAX_LD, *, seed: int = 0
                    ) -> tuple[list[list[str]], dict[str, str], float]:
    """Split from one partition until the LPT placement's LD ≤ `max_ld`; (parts, placement, LD)."""
    load = {k.id: k.load for k in state.keygroups}
    out = pair_rates(state)
    parts: list[list[str]] = [sorted(load)] if load else []
    assignment, ld = _place(parts, load, state)
    heap = [(-sum(load[k] for k in p), i) for i, p in enumerate(parts) if len(p) > 1]
    heapq.heapify(heap)
    while ld > max_ld and heap:
        _, i = heapq.heappop(heap)
        members = parts[i]
        halves = graph_part(members, load, undirected_weights(out, set(members)), 2, seed=seed)
        parts[i] = halves[0]
        parts.extend(halves[1:])
        for j in [i, *range(len(parts) - len(halves) + 1, len(parts))]:
            if len(parts[j]) > 1:
                heapq.heappush(heap, (-sum(load[k] for k in parts[j]), j))
        assignment, ld = _place(parts, load, state)
    return parts, assignment, ld


def plan_cola(state: ClusterState, budget: Budget, params: ColaParams) -> Plan:
    """COLA from scratch; `budget` is ignored on purpose (the point of the comparison)."""
    max_ld, seed = params.max_ld, params.seed
    parts, assignment, ld = cola_partitions(state, max_ld, seed=seed)
    return make_plan(state, assignment, status=SolverStatus.HEURISTIC, lower_bound=None,
                     message=f"{len(parts)} partitions, LPT load distance {ld:.3f} "
                             f"(target {max_ld:g}); migration budget ignored")
