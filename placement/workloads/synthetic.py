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

Two variants outside the paper's grid (`reconf bench balance --heterogeneous`):
- `heterogeneous`: the same workload on nodes of mixed capacity weight, `CAPACITY_MIX` (a fifth
  of the nodes at 2.0, a fifth at 0.5, the rest 1.0, placed at random, seeded). The key groups
  stay where the even allocation put them, as after nodes were replaced by others of a new
  type: the weak nodes start far above the mean utilisation, the strong ones far below;
- `hot_spot`: the key groups of a few random nodes carry `factor` (2–4) times their load, as
  when a few keys turn hot.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

from placement.model import ClusterState, Edge, KeyGroup, Node

__all__ = ["ALPHA_S_PER_BYTE", "CAPACITY_MIX", "MIB_PER_LOAD_PCT", "heterogeneous", "hot_spot",
           "synthetic_state"]

ALPHA_S_PER_BYTE = 1e-8
MIB_PER_LOAD_PCT = 1.0
#: capacity weight -> share of the nodes (`heterogeneous`); the rest are reference nodes (1.0)
CAPACITY_MIX: dict[float, float] = {2.0: 0.2, 0.5: 0.2}


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


def heterogeneous(state: ClusterState, seed: int,
                  mix: dict[float, float] | None = None) -> ClusterState:
    """`state` on nodes of mixed capacity weight: round(share·|N|) random nodes per weight of
    `mix` (default `CAPACITY_MIX`), the others 1.0; the assignment is unchanged."""
    rng = random.Random(seed)
    order = list(range(len(state.nodes)))
    rng.shuffle(order)
    weight = [1.0] * len(state.nodes)
    taken = 0
    for cap, share in (mix or CAPACITY_MIX).items():
        count = round(share * len(state.nodes))
        for i in order[taken:taken + count]:
            weight[i] = cap
        taken += count
    return replace(state, nodes=tuple(replace(n, capacity=weight[i])
                                      for i, n in enumerate(state.nodes)))


def hot_spot(state: ClusterState, hot: int, factor: float, seed: int) -> ClusterState:
    """`hot` random nodes whose key groups carry `factor` times their load (and state)."""
    if not 1 <= hot <= len(state.nodes) or not (math.isfinite(factor) and factor > 0):
        raise ValueError(f"hot_spot: need 1 <= hot <= {len(state.nodes)} and factor > 0, got "
                         f"hot={hot}, factor={factor}")
    chosen = set(random.Random(seed).sample([n.id for n in state.nodes], hot))
    kgs = tuple(replace(k, load=k.load * factor, state_bytes=k.state_bytes * factor,
                        migration_cost=k.migration_cost * factor,
                        loads={r: v * factor for r, v in k.loads.items()})
                if state.assignment[k.id] in chosen else k for k in state.keygroups)
    return replace(state, keygroups=kgs)
