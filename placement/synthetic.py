"""The synthetic workload of paper §5.1 (Figures 2–4), seeded and deterministic.

Key groups are allocated evenly; each key group's load is the mean key-group load adjusted by a
random percentage in [−5 %, +5 %]; then 20 % of the nodes are adjusted by `varies`: half of them
lose 0.5·varies percentage points of load, half gain 0.5·varies, by changing the load of a random
set of their key groups. Choices the paper leaves open (docs/algorithms.md):

- mean node load 50 % of a reference node, so that ±0.5·varies (varies ≤ 100) stays in [0, 100];
- a changed node's delta is spread over a random subset (at least a quarter of its key groups)
  in proportion to their loads; a loss larger than the subset's load takes the whole node;
- state size: 1 MiB per % of load times a random factor in [0.5, 1.5] (state grows with traffic),
  migration cost mc_k = alpha·|σ_k| with alpha = 1e-8 s/byte (≈ 100 MB/s serialisation);
- operators: key groups are dealt to operators round-robin; each key group of operator o sends to
  two random key groups of operator o + 1 at a rate proportional to its load (for the
  collocation factor; the MILP ignores edges).
"""

from __future__ import annotations

import math
import random

from placement.model import ClusterState, Edge, KeyGroup, Node

__all__ = ["ALPHA_S_PER_BYTE", "MIB_PER_LOAD_PCT", "synthetic_state"]

ALPHA_S_PER_BYTE = 1e-8
MIB_PER_LOAD_PCT = 1.0


def _check(nodes: int, keygroups: int, operators: int, varies: float, mean: float) -> None:
    if nodes < 1:
        raise ValueError(f"synthetic: nodes must be >= 1, got {nodes}")
    if keygroups < nodes:
        raise ValueError(f"synthetic: keygroups ({keygroups}) must be >= nodes ({nodes})")
    if operators < 1 or operators > keygroups:
        raise ValueError(f"synthetic: operators must be in [1, keygroups], got {operators}")
    if not math.isfinite(varies) or varies < 0:
        raise ValueError(f"synthetic: varies must be a finite number >= 0, got {varies}")
    if not math.isfinite(mean) or mean <= 0:
        raise ValueError(f"synthetic: mean_node_load must be a finite number > 0, got {mean}")


def _adjust(loads: list[float], idx: list[int], delta: float, rng: random.Random) -> None:
    """Add `delta` (may be negative) to the node whose key groups are `idx`."""
    order = idx[:]
    rng.shuffle(order)
    size = rng.randint(max(1, len(order) // 4), len(order))
    chosen = order[:size]
    while delta < 0 and sum(loads[i] for i in chosen) < -delta and size < len(order):
        size += 1
        chosen = order[:size]
    subset = sum(loads[i] for i in chosen)
    factor = max(0.0, 1.0 + delta / subset) if subset > 0 else 1.0
    for i in chosen:
        loads[i] *= factor


def synthetic_state(
    nodes: int,
    keygroups: int,
    operators: int,
    varies: float,
    seed: int,
    mean_node_load: float = 50.0,
) -> ClusterState:
    """A ClusterState of `nodes` unit-capacity nodes and `keygroups` key groups (paper §5.1)."""
    _check(nodes, keygroups, operators, varies, mean_node_load)
    rng = random.Random(seed)
    node_ids = [f"n{i:03d}" for i in range(nodes)]
    kg_ids = [f"g{k:05d}" for k in range(keygroups)]
    home = [k % nodes for k in range(keygroups)]
    base = mean_node_load * nodes / keygroups
    loads = [base * (1.0 + rng.uniform(-0.05, 0.05)) for _ in range(keygroups)]
    per_node: list[list[int]] = [[] for _ in range(nodes)]
    for k, n in enumerate(home):
        per_node[n].append(k)
    half = round(0.1 * nodes)
    changed = rng.sample(range(nodes), 2 * half)
    for j, n in enumerate(changed):
        _adjust(loads, per_node[n], -0.5 * varies if j < half else 0.5 * varies, rng)
    kgs = []
    for k in range(keygroups):
        state_bytes = loads[k] * MIB_PER_LOAD_PCT * 2**20 * rng.uniform(0.5, 1.5)
        kgs.append(KeyGroup(
            id=kg_ids[k],
            operator=f"op{k % operators}",
            load=loads[k],
            state_bytes=state_bytes,
            migration_cost=ALPHA_S_PER_BYTE * state_bytes,
        ))
    by_op: list[list[int]] = [[] for _ in range(operators)]
    for k in range(keygroups):
        by_op[k % operators].append(k)
    edges = []
    for o in range(operators - 1):
        downstream = by_op[o + 1]
        for k in by_op[o]:
            for dst in rng.sample(downstream, min(2, len(downstream))):
                edges.append(Edge(kg_ids[k], kg_ids[dst], rate=loads[k] * 10.0))
    return ClusterState(
        nodes=tuple(Node(nid) for nid in node_ids),
        keygroups=tuple(kgs),
        assignment={kg_ids[k]: node_ids[home[k]] for k in range(keygroups)},
        edges=tuple(edges),
    )
