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

import bisect
import heapq
import math

import numpy as np
import numpy.typing as npt

from placement.baselines.params import DEFAULT_COLA_MAX_LD, ColaParams
from placement.common import make_plan
from placement.graphpart import graph_part_pairs, pair_rates
from placement.metrics import mean_load
from placement.model import Budget, ClusterState, Plan, SolverStatus

__all__ = ["cola_partitions", "plan_cola"]


class _Placer:
    """LPT placement of whole partitions on A, on arrays: the nodes of A in id order, so that
    numpy's first minimum is the paper's tie-break by node id; the same float operations as a
    loop over the nodes, O(nodes) per partition in C rather than in Python."""

    def __init__(self, state: ClusterState) -> None:
        a_nodes = sorted((n for n in state.nodes if not n.marked_for_removal), key=lambda n: n.id)
        self.ids = [n.id for n in a_nodes]
        self.cap = np.asarray([n.capacity for n in a_nodes], dtype=np.float64)
        self.mean = mean_load(state)
        self.uniform = len(self.cap) > 0 and bool(np.all(self.cap == self.cap[0]))

    def place(self, parts: list[list[str]], weights: list[float], firsts: list[str], *,
              assign: bool = True, order: list[int] | None = None
              ) -> tuple[dict[str, str], float]:
        """(assignment, load distance over A): largest partition first (ties by its smallest
        key group) onto the node with the lowest utilisation after receiving it. `assign`
        False: the load distance only (the assignment left empty), as the loop needs. `order`:
        the partitions in that order, when the caller keeps it."""
        raw = np.zeros(len(self.ids))
        assignment: dict[str, str] = {}
        if order is None:
            order = sorted(range(len(parts)), key=lambda j: (-weights[j], firsts[j]))
        if self.uniform and not assign:
            self._uniform(raw, [weights[i] for i in order])
        else:
            for i in order:
                at = int(np.argmin((raw + weights[i]) / self.cap))
                raw[at] += weights[i]
                if assign:
                    node = self.ids[at]
                    for k in parts[i]:
                        assignment[k] = node
        return assignment, float(np.max(np.abs(raw / self.cap - self.mean)))

    def _uniform(self, raw: npt.NDArray[np.float64], weights: list[float]) -> None:
        """LPT on nodes of one capacity: the node of least (raw + w) / cap is one of least raw,
        ties by id. The nodes are kept in buckets of equal raw (a heap of ids each) under a heap
        of the distinct raws; the buckets whose (raw + w) / cap rounds to the least one's (a
        float tie) are compared by their least id, as the loop over the nodes does."""
        cap = float(self.cap[0])
        values = [0.0]
        buckets: dict[float, list[int]] = {0.0: list(range(len(raw)))}  # index order = id order
        for w in weights:
            key = (values[0] + w) / cap
            seen = [heapq.heappop(values)]
            while values and (values[0] + w) / cap == key:
                seen.append(heapq.heappop(values))
            low = seen[0] if len(seen) == 1 else min(seen, key=lambda v: buckets[v][0])
            at = heapq.heappop(buckets[low])
            if not buckets[low]:
                del buckets[low]
                seen.remove(low)
            for v in seen:
                heapq.heappush(values, v)
            new = low + w
            raw[at] = new
            bucket = buckets.get(new)
            if bucket is None:
                buckets[new] = [at]
                heapq.heappush(values, new)
            else:
                heapq.heappush(bucket, at)


def cola_partitions(state: ClusterState, max_ld: float = DEFAULT_COLA_MAX_LD, *, seed: int = 0
                    ) -> tuple[list[list[str]], dict[str, str], float]:
    """Split from one partition until the LPT placement's LD ≤ `max_ld`; (parts, placement, LD).

    While there are fewer partitions than nodes of A and the mean is above `max_ld`, a node of A
    stays empty, so the LD is at least the mean and the placement is not computed: the loop
    splits on as the paper's would (the same partitions, the same final placement)."""
    load = {k.id: k.load for k in state.keygroups}
    out = pair_rates(state)
    placer = _Placer(state)
    parts: list[list[str]] = [sorted(load)] if load else []
    weights = [sum(load[k] for k in p) for p in parts]
    firsts = [min(p) for p in parts]

    # the LPT order kept as partitions split: (-weight, smallest key group, index), as the
    # stable sort by (-weight, smallest key group) orders them
    lpt = sorted((-weights[j], firsts[j], j) for j in range(len(parts)))

    def placed(assign: bool = False) -> tuple[dict[str, str], float]:
        return placer.place(parts, weights, firsts, assign=assign,
                            order=[j for _, _, j in lpt])

    def surely_over() -> bool:  # an empty node of A: LD ≥ mean > max_ld
        return len(parts) < len(placer.ids) and placer.mean > max_ld

    assignment, ld = ({}, math.inf) if surely_over() else placed()
    heap = [(-weights[i], i) for i, p in enumerate(parts) if len(p) > 1]
    heapq.heapify(heap)
    while ld > max_ld and heap:
        _, i = heapq.heappop(heap)
        members = parts[i]
        del lpt[bisect.bisect_left(lpt, (-weights[i], firsts[i], i))]
        halves = graph_part_pairs(members, load, out, 2, seed=seed)
        parts[i] = halves[0]
        parts.extend(halves[1:])
        for j, half in zip([i, *range(len(parts) - len(halves) + 1, len(parts))], halves,
                           strict=True):
            w = sum(load[k] for k in half)
            if j < len(weights):
                weights[j], firsts[j] = w, min(half)
            else:
                weights.append(w)
                firsts.append(min(half))
            bisect.insort(lpt, (-w, firsts[j], j))
            if len(half) > 1:
                heapq.heappush(heap, (-w, j))
        assignment, ld = ({}, math.inf) if surely_over() else placed()
    if parts:  # the loop's placements kept only their LD: the final one, whole
        assignment, ld = placed(assign=True)
    return parts, assignment, ld


def plan_cola(state: ClusterState, budget: Budget, params: ColaParams) -> Plan:
    """COLA from scratch; `budget` is ignored on purpose (the point of the comparison)."""
    max_ld, seed = params.max_ld, params.seed
    parts, assignment, ld = cola_partitions(state, max_ld, seed=seed)
    return make_plan(state, assignment, status=SolverStatus.HEURISTIC, lower_bound=None,
                     message=f"{len(parts)} partitions, LPT load distance {ld:.3f} "
                             f"(target {max_ld:g}); migration budget ignored")
