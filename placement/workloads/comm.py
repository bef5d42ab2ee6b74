"""Synthetic workload with a communication pattern, and the remote-traffic CPU cost model (§5.3).

The paper's §5.3 runs the §5.1 synthetic job "except that we control the maximum obtainable
collocation by ensuring x % of the key groups to have 1-1 communication". Here:

- Key groups, operators, compute loads, state sizes and migration costs come from
  `synthetic_state` (§5.1): key group k belongs to operator k mod O and starts on node k mod N.
- Operators form a chain op0 → op1 → … → op(O−1). Every key group of op o < O−1 emits the same
  rate R per period. A random x % of op o's key groups are *paired*: each sends all of R to one
  distinct random key group of op o+1 (one-to-one). The other key groups use full partitioning
  with even rates: R/|op o+1| to every key group of op o+1. So x % of the traffic is one-to-one;
  x is the maximum obtainable collocation factor (plus the little full-partitioning traffic that
  happens to share a node). Full-partitioning pairs sit exactly at avg(g_k), below ALBIC's
  avg·sF threshold for any sF ≥ 1; one-to-one pairs are |op o+1| times above it.
- Remote traffic costs CPU at both ends (serialisation at the sender, deserialisation at the
  receiver): a key group's load is its compute load plus `remote_cost` × (rate it sends to and
  receives from key groups on other nodes). `remote_cost` is calibrated so that with all traffic
  remote, remote traffic is `remote_share` of the total load (default 0.5: collocating
  everything halves the system load, the paper's Real Job 2). The initial allocation places op o
  on nodes ≡ o (mod gcd(N, O)), so when O divides N no edge is collocated at the start and the
  initial mean node load is `mean_node_load`.
- `fluctuate`: the load of 20 % of the nodes is adjusted by a random percentage in [−2 %, +2 %]
  (relative, applied to the compute load of the key groups on those nodes; rates stay).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass

from placement.model import ClusterState, Edge, KeyGroup, Node
from placement.workloads.synthetic import synthetic_state

__all__ = ["CommWorkload", "comm_workload", "fluctuate", "remote_loads"]


def remote_loads(
    base: Mapping[str, float],
    edges: tuple[Edge, ...],
    assignment: Mapping[str, str],
    remote_cost: float,
) -> dict[str, float]:
    """gLoad_k = base_k + remote_cost·(rate g_k sends off-node + rate it receives from off-node)."""
    loads = dict(base)
    for e in edges:
        if e.src != e.dst and assignment[e.src] != assignment[e.dst]:
            extra = remote_cost * e.rate
            loads[e.src] += extra
            loads[e.dst] += extra
    return loads


@dataclass(frozen=True)
class CommWorkload:
    """A synthetic job whose key-group loads depend on where their communication partners are.

    `keygroups` carry the compute (base) loads; `state(assignment, base)` is the ClusterState a
    planner sees when the job runs under `assignment`, loads including remote-traffic cost.
    """

    nodes: tuple[Node, ...]
    keygroups: tuple[KeyGroup, ...]
    edges: tuple[Edge, ...]
    initial: Mapping[str, str]
    remote_cost: float
    one_to_one: tuple[tuple[str, str], ...]
    max_collocation: float  # % of the traffic that is one-to-one

    def base_loads(self) -> dict[str, float]:
        return {k.id: k.load for k in self.keygroups}

    def loads(self, assignment: Mapping[str, str],
              base: Mapping[str, float] | None = None) -> dict[str, float]:
        return remote_loads(self.base_loads() if base is None else base, self.edges,
                            assignment, self.remote_cost)

    def state(self, assignment: Mapping[str, str],
              base: Mapping[str, float] | None = None) -> ClusterState:
        """The cluster as measured while running under `assignment` (current = `assignment`)."""
        loads = self.loads(assignment, base)
        kgs = tuple(KeyGroup(k.id, k.operator, loads[k.id], k.state_bytes, k.migration_cost)
                    for k in self.keygroups)
        return ClusterState(self.nodes, kgs, dict(assignment), self.edges)


def comm_workload(
    nodes: int,
    keygroups: int,
    operators: int,
    max_collocation: float,
    seed: int,
    *,
    varies: float = 20.0,
    mean_node_load: float = 50.0,
    remote_share: float = 0.5,
    rate: float = 1000.0,
) -> CommWorkload:
    """The §5.3 workload: x = `max_collocation` % of the key groups in one-to-one pairs."""
    if not (math.isfinite(max_collocation) and 0 <= max_collocation <= 100):
        raise ValueError(f"comm workload: max_collocation must be in [0, 100], got "
                         f"{max_collocation!r}")
    if operators < 2:
        raise ValueError(f"comm workload: operators must be >= 2 (a chain), got {operators}")
    if not (math.isfinite(remote_share) and 0 <= remote_share < 1):
        raise ValueError(f"comm workload: remote_share must be in [0, 1), got {remote_share!r}")
    if not (math.isfinite(rate) and rate > 0):
        raise ValueError(f"comm workload: rate must be a finite number > 0, got {rate!r}")
    compute = synthetic_state(nodes, keygroups, operators, varies, seed,
                              mean_node_load=mean_node_load * (1.0 - remote_share))
    rng = random.Random(f"comm-{seed}")
    by_op: list[list[str]] = [[] for _ in range(operators)]
    for i, kg in enumerate(compute.keygroups):
        by_op[i % operators].append(kg.id)
    edges: list[Edge] = []
    pairs: list[tuple[str, str]] = []
    one_to_one = total = 0.0
    for o in range(operators - 1):
        down = by_op[o + 1]
        n_pair = min(round(max_collocation / 100.0 * len(by_op[o])), len(down))
        senders = rng.sample(by_op[o], n_pair)
        receivers = rng.sample(down, n_pair)
        paired = dict(zip(senders, receivers, strict=True))
        for src in by_op[o]:
            total += rate
            if src in paired:
                edges.append(Edge(src, paired[src], rate))
                pairs.append((src, paired[src]))
                one_to_one += rate
            else:
                edges.extend(Edge(src, dst, rate / len(down)) for dst in down)
    remote_total = 2.0 * total  # every tuple crossing nodes is charged at both ends
    cost = remote_share * mean_node_load * len(compute.nodes) / remote_total if total else 0.0
    return CommWorkload(
        nodes=compute.nodes,
        keygroups=compute.keygroups,
        edges=tuple(edges),
        initial=dict(compute.assignment),
        remote_cost=cost,
        one_to_one=tuple(sorted(pairs)),
        max_collocation=100.0 * one_to_one / total if total else 0.0,
    )


def fluctuate(
    base: Mapping[str, float],
    assignment: Mapping[str, str],
    node_ids: tuple[str, ...],
    rng: random.Random,
    *,
    node_share: float = 0.2,
    max_pct: float = 2.0,
) -> dict[str, float]:
    """Adjust the compute load of `node_share` of the nodes by U[−max_pct, +max_pct] % each."""
    chosen = rng.sample(sorted(node_ids), max(1, round(node_share * len(node_ids))))
    factor = {n: 1.0 + rng.uniform(-max_pct, max_pct) / 100.0 for n in chosen}
    return {kg: v * factor.get(assignment[kg], 1.0) for kg, v in base.items()}
