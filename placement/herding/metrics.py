"""Herding's metrics (Zong et al. 2015 §2.1, §6.1): pure functions of a state and an assignment.

- stream traffic Σ_j f(Q_j), f(Q') = w(∪_{q∈Q'} S_q): a source is shipped once to every node
  hosting at least one of its readers (local fan-out is free);
- replication factor = traffic / w(sources used) (§6.1; 1.0 when no source is read);
- query balance max_j |Q_j| / (n·c_j/C) and load balance max_j L_j / (L·c_j/C), C = Σ_{j∈A} c_j
  (the paper's max|Q_j|/(n/k) with capacity weights; 1.0 with no unit or no load);
- lower bounds: w(sources used) (every source read is shipped at least once; Thm 3's proof),
  and, for assignments with at most U_j units on node j, Σ_s w(s)·r_s where r_s is the fewest
  nodes whose U_j sum to |N(s)| (N(s): the readers of s must fit on the nodes s is shipped to).

Each has an array form (`*_arrays`) used by the algorithms and the benchmark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from placement.herding.instance import FloatArray, Instance, IntArray, capacities, from_state
from placement.model import ClusterState

__all__ = [
    "capacity_bound",
    "facet_metrics",
    "load_balance",
    "node_of",
    "query_balance",
    "query_balance_arrays",
    "replication_factor",
    "stream_traffic",
    "traffic_arrays",
    "traffic_lower_bound",
    "undo_traffic",
]


def node_of(inst: Instance, state: ClusterState, assignment: Mapping[str, str]) -> IntArray:
    """The assignment as an array over `inst.unit_ids` (−1 for a unit it does not place)."""
    index = {nd: j for j, nd in enumerate(inst.node_ids)}
    return np.array([index[assignment[u]] if u in assignment else -1 for u in inst.unit_ids],
                    dtype=np.int64)


def traffic_arrays(inst: Instance, node: IntArray) -> float:
    """Σ_j w(∪_{q on j} S_q) for units placed on `node` (−1: not placed, not counted)."""
    deg = np.diff(inst.indptr)
    rep = np.repeat(node, deg)
    keep = rep >= 0
    codes = np.unique(rep[keep] * np.int64(max(inst.m, 1)) + inst.indices[keep])
    return float(inst.rates[codes % max(inst.m, 1)].sum()) if inst.m else 0.0


def query_balance_arrays(inst: Instance, node: IntArray, weights: FloatArray | None = None
                         ) -> float:
    """max_j (Σ_{q on j} weight_q / c_j) / (Σ_q weight_q / C): unit weights count queries."""
    weight = np.ones(inst.n) if weights is None else weights
    placed = node >= 0
    total = float(weight[placed].sum())
    if total <= 0:
        return 1.0
    per_node = np.bincount(node[placed], weights=weight[placed], minlength=inst.k)
    c_a = float(inst.capacity[inst.in_a].sum())
    return float((per_node / inst.capacity).max() / (total / c_a))


def capacity_bound(inst: Instance, upper: IntArray) -> float:
    """Σ_s w(s)·r_s, r_s the fewest nodes whose caps U_j reach |N(s)| (≥ 1 if s is read).

    Valid for every assignment with at most U_j units on node j: the readers of s sit on the
    nodes s is shipped to, whose capacities must hold them all."""
    if inst.m == 0 or inst.n == 0:
        return 0.0
    readers = np.bincount(inst.indices, minlength=inst.m)
    caps = np.sort(np.asarray(upper, dtype=np.int64))[::-1]
    prefix = np.cumsum(caps)
    need = np.searchsorted(prefix, readers, side="left") + 1  # fewest nodes holding N(s)
    need = np.minimum(need, len(caps))
    need = np.where(readers > 0, need, 0)
    return float((inst.rates * need).sum())


def stream_traffic(state: ClusterState, assignment: Mapping[str, str]) -> float:
    """Σ_j w(∪_{q on j} S_q) of `assignment` (units it does not place are not counted)."""
    inst = from_state(state)
    return traffic_arrays(inst, node_of(inst, state, assignment))


def undo_traffic(state: ClusterState, assignment: Mapping[str, str],
                 moves: Sequence[tuple[str, str]]) -> dict[str, tuple[float, float]]:
    """Per move (unit q, the node `src` it left): (traffic with that move alone undone, traffic
    of `assignment`), from one count of readers per (node, source): undoing q ships s to `src`
    when no other reader of s is there, and stops shipping it to q's node when q was its only
    reader there. O(n + Σ|S_q| + moves·d), where evaluating every undone assignment afresh
    is O(moves·n). A move whose unit or node the state does not know is left out (the
    caller evaluates it afresh). On rates whose sums are exact in floating point the values
    equal `stream_traffic`'s; otherwise they may differ by rounding."""
    inst = from_state(state)
    node = node_of(inst, state, assignment)
    total = traffic_arrays(inst, node)
    m = max(inst.m, 1)
    rep = np.repeat(node, np.diff(inst.indptr))
    placed = rep >= 0
    codes, counts = np.unique(rep[placed] * np.int64(m) + inst.indices[placed],
                              return_counts=True)
    readers = dict(zip(codes.tolist(), counts.tolist(), strict=True))
    unit_index = {u: i for i, u in enumerate(inst.unit_ids)}
    node_index = {nd: j for j, nd in enumerate(inst.node_ids)}
    rates = inst.rates.tolist()
    out: dict[str, tuple[float, float]] = {}
    for unit, src in moves:
        q, j_src = unit_index.get(unit), node_index.get(src)
        if q is None or j_src is None or node[q] < 0:
            continue
        j_dst, delta = int(node[q]), 0.0
        if j_dst != j_src:
            for s in inst.sources_of(q).tolist():
                if readers[j_dst * m + s] == 1:
                    delta -= rates[s]
                if (j_src * m + s) not in readers:
                    delta += rates[s]
        out[unit] = (total + delta, total)
    return out


def replication_factor(state: ClusterState, assignment: Mapping[str, str]) -> float:
    """Traffic / w(sources used) (§6.1); 1.0 when no unit reads a source."""
    inst = from_state(state)
    used = inst.used_weight()
    return traffic_arrays(inst, node_of(inst, state, assignment)) / used if used > 0 else 1.0


def query_balance(state: ClusterState, assignment: Mapping[str, str]) -> float:
    """max_j |Q_j| / (n·c_j/C): the paper's max|Q_j|/(n/k), capacity-weighted."""
    inst = from_state(state)
    return query_balance_arrays(inst, node_of(inst, state, assignment))


def load_balance(state: ClusterState, assignment: Mapping[str, str]) -> float:
    """max_j L_j / (L·c_j/C) with each unit's `load`: the balance of weighted units."""
    inst = from_state(state)
    return query_balance_arrays(inst, node_of(inst, state, assignment), inst.load)


def traffic_lower_bound(state: ClusterState, nu: float | None = None) -> float:
    """w(sources used) (valid for every assignment); with `nu`, the better bound for every
    assignment meeting eq. 1 (capacity-weighted caps, `capacity_bound`)."""
    inst = from_state(state)
    bound = inst.used_weight()
    if nu is not None:
        bound = max(bound, capacity_bound(inst, capacities(inst, nu)))
    return bound


def facet_metrics(inst: Instance, node: IntArray, caps: npt.ArrayLike | None = None
                  ) -> dict[str, float]:
    """The metrics a herding plan logs (Plan.facet_metrics): traffic, RF, balances, bound.

    The bound uses U_j = max(cap_j, |Q_j|), so it holds for the plan itself and for every
    assignment meeting the caps the plan was made under."""
    traffic = traffic_arrays(inst, node)
    used = inst.used_weight()
    counts = np.bincount(node[node >= 0], minlength=inst.k).astype(np.int64)
    upper = counts if caps is None else np.maximum(np.asarray(caps, dtype=np.int64), counts)
    out = {
        "stream_traffic": traffic,
        "replication_factor": traffic / used if used > 0 else 1.0,
        "balance": query_balance_arrays(inst, node),
        "load_balance": query_balance_arrays(inst, node, inst.load),
    }
    if (node >= 0).all():  # a bound on complete assignments: arrivals not yet placed ship nothing
        out["traffic_lower_bound"] = max(used, capacity_bound(inst, upper))
    return out
