"""The scaling policy of Algorithm 1 (paper §4.1, §4.2): explainable, one reason per decision.

The paper leaves the policy open; this one judges the *planned* allocation (what the configured
strategy would do on the current nodes), so a better allocation can remove the need to scale out
and a scale-in never happens when the remaining nodes could not be balanced:

- **scale out** when the planned allocation leaves a node of A above the target utilisation *and*
  the total load does not fit on A's capacity at the target. Capacity needed = total load /
  target; nodes of B that are still draining are reinstated first (they already hold state),
  then `ceil(missing capacity / new_node_capacity)` new, empty nodes are added. A node above the
  target while the total fits is a balancing problem: no scale-out, the reason says so.
- **scale in** when no node of A is above the target in the planned allocation, the total load
  fits on fewer nodes at the target, and the remaining nodes can be balanced within `max_ld`
  (the load distance of an unbudgeted LPT allocation of every key group onto them, an upper
  bound on what the balancer reaches once B is drained). The nodes removed are the cheapest to
  drain: least state, then least load, then id.
- bounds on the number of nodes of A (`min_nodes`, `max_nodes`; never below 1), and a cool-down:
  no decision opposite to one taken in the last `cooldown_cycles` cycles.

Units: key-group loads are % of a reference node (metrics.py), so a utilisation of
`target_utilisation` (a fraction) is `100 · target_utilisation` in node-load units.
"""
from __future__ import annotations

import heapq
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from placement.common import EPS
from placement.metrics import node_loads
from placement.model import ClusterState, Plan

__all__ = [
    "DECISIONS",
    "ScalingDecision",
    "ScalingHistory",
    "ScalingPolicy",
    "decide",
    "lpt_load_distance",
    "new_node_ids",
]

DECISIONS = ("out", "in", "none")
_NUMBERED = re.compile(r"^(.*?)(\d+)$")


@dataclass(frozen=True)
class ScalingPolicy:
    """Policy parameters; `target_utilisation` is a fraction of a node's capacity (0, 1]."""

    target_utilisation: float = 0.8
    min_nodes: int = 1
    max_nodes: int | None = None
    cooldown_cycles: int = 3
    max_ld: float = 10.0
    new_node_capacity: float = 1.0

    def __post_init__(self) -> None:
        t = self.target_utilisation
        if isinstance(t, bool) or not isinstance(t, int | float) or not (0 < t <= 1):
            raise ValueError(f"scaling: target_utilisation must be in (0, 1], got {t!r}")
        for name in ("min_nodes", "cooldown_cycles"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"scaling: {name} must be an integer >= 0, got {value!r}")
        if self.max_nodes is not None and (
                isinstance(self.max_nodes, bool) or not isinstance(self.max_nodes, int)
                or self.max_nodes < max(1, self.min_nodes)):
            raise ValueError(f"scaling: max_nodes must be an integer >= max(1, min_nodes = "
                             f"{self.min_nodes}), got {self.max_nodes!r}")
        if not (math.isfinite(self.max_ld) and self.max_ld >= 0):
            raise ValueError(f"scaling: max_ld must be a finite number >= 0, got {self.max_ld!r}")
        if not (math.isfinite(self.new_node_capacity) and self.new_node_capacity > 0):
            raise ValueError(f"scaling: new_node_capacity must be > 0, got "
                             f"{self.new_node_capacity!r}")

    @property
    def target_load(self) -> float:
        """The target as a node load (% of a reference node per unit of capacity)."""
        return 100.0 * self.target_utilisation

    @property
    def floor(self) -> int:
        """The fewest nodes A may keep: never the last node."""
        return max(1, self.min_nodes)


@dataclass(frozen=True)
class ScalingHistory:
    """What earlier cycles decided (oldest first) and every node id ever used (never reused).

    Built from data the pipeline keeps (the published plans' scaling sections), not from
    process memory, so a restarted scheduler keeps the cool-down.
    """

    decisions: tuple[str, ...] = ()
    used_node_ids: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        bad = [d for d in self.decisions if d not in DECISIONS]
        if bad:
            raise ValueError(f"scaling history: unknown decision(s) {bad}; known: {DECISIONS}")

    def after(self, decision: str, nodes: Iterable[str] = ()) -> ScalingHistory:
        """The history one cycle later."""
        return ScalingHistory((*self.decisions, decision), self.used_node_ids | set(nodes))

    def blocked_by(self, direction: str, cooldown: int) -> int | None:
        """How many cycles ago the opposite decision was taken, if within `cooldown` cycles."""
        opposite = "in" if direction == "out" else "out"
        recent = self.decisions[-cooldown:] if cooldown > 0 else ()
        for ago, decision in enumerate(reversed(recent), start=1):
            if decision == opposite:
                return ago
        return None


@dataclass(frozen=True)
class ScalingDecision:
    """The policy's verdict; `reason` carries the numbers it was made from."""

    direction: str
    add: tuple[str, ...] = ()
    reinstate: tuple[str, ...] = ()  # nodes of B taken back into A (scale-out)
    mark: tuple[str, ...] = ()  # nodes of A newly marked for removal (scale-in)
    reason: str = ""


def new_node_ids(existing: Iterable[str], count: int, used: Iterable[str] = ()) -> tuple[str, ...]:
    """`count` fresh node ids continuing the cluster's numbering.

    The most common `<prefix><digits>` pattern among the node ids (ties: the smallest prefix)
    continues from one past the highest number ever used with that prefix (`used` holds the ids
    of terminated nodes, so an id is never reused), zero-padded to the pattern's width:
    `node-07` → `node-08`, `n059` → `n060`. Without numbered ids: `node-00`, `node-01`, …
    """
    ids = set(existing) | set(used)
    groups: dict[str, list[tuple[int, int]]] = {}
    for node in ids:
        m = _NUMBERED.match(node)
        if m:
            groups.setdefault(m.group(1), []).append((int(m.group(2)), len(m.group(2))))
    if groups:
        prefix = min(groups, key=lambda p: (-len(groups[p]), p))
        start = max(n for n, _ in groups[prefix]) + 1
        width = max(w for _, w in groups[prefix])
    else:
        prefix, start, width = "node-", 0, 2
    out: list[str] = []
    number = start
    while len(out) < count:
        candidate = f"{prefix}{number:0{width}d}"
        if candidate not in ids:
            out.append(candidate)
        number += 1
    return tuple(out)


def lpt_load_distance(state: ClusterState, nodes: Sequence[str]) -> float:
    """LD of the LPT allocation (heaviest key group to the least utilised node) onto `nodes`.

    Every key group is placed, none stays elsewhere, so this is what the balancer can reach on
    `nodes` once B is drained (an upper bound on the optimum, exact enough to judge a scale-in).
    """
    cap = {n.id: n.capacity for n in state.nodes}
    total_cap = sum(cap[n] for n in nodes)
    heap = [(0.0, n) for n in sorted(nodes)]
    raw = dict.fromkeys(nodes, 0.0)
    for kg in sorted(state.keygroups, key=lambda k: (-k.load, k.id)):
        _, node = heapq.heappop(heap)
        raw[node] += kg.load
        heapq.heappush(heap, (raw[node] / cap[node], node))
    mean = sum(raw.values()) / total_cap
    return max(abs(raw[n] / cap[n] - mean) for n in nodes)


def _drain_cost(state: ClusterState, assignment: Mapping[str, str]) -> dict[str, tuple[float, float]]:
    cost = {n.id: (0.0, 0.0) for n in state.nodes}
    for kg in state.keygroups:
        s, ld = cost[assignment[kg.id]]
        cost[assignment[kg.id]] = (s + kg.state_bytes, ld + kg.load)
    return cost


def decide(state: ClusterState, plan: Plan, policy: ScalingPolicy,
           history: ScalingHistory) -> ScalingDecision:
    """Judge `plan` (the strategy's allocation on `state`'s nodes) and return the decision."""
    loads = node_loads(state, plan.assignment)
    a_nodes = [n for n in state.nodes if not n.marked_for_removal]
    b_nodes = [n for n in state.nodes if n.marked_for_removal]
    total = sum(kg.load for kg in state.keygroups)
    target = policy.target_load
    cap_a = sum(n.capacity for n in a_nodes)
    needed = total / target
    hot = sorted((n.id for n in a_nodes if loads[n.id] > target + EPS),
                 key=lambda n: (-loads[n], n))
    facts = (f"total load {total:.1f} needs capacity {needed:.2f} at target {target:.0f}%; "
             f"A has {len(a_nodes)} node(s), capacity {cap_a:.2f}; B has {len(b_nodes)}")
    if hot:
        peak = f"planned peak {hot[0]} at {loads[hot[0]]:.1f}% > {target:.0f}% ({len(hot)} hot)"
        if needed <= cap_a + EPS:
            return ScalingDecision("none", reason=f"no scaling: {peak}, but the total fits on A "
                                                  f"(balancing, not capacity); {facts}")
        return _scale_out(state, policy, history, loads, needed - cap_a, f"{peak}; {facts}")
    return _scale_in(state, plan, policy, history, needed, facts)


def _scale_out(state: ClusterState, policy: ScalingPolicy, history: ScalingHistory,
               loads: Mapping[str, float], missing: float, facts: str) -> ScalingDecision:
    ago = history.blocked_by("out", policy.cooldown_cycles)
    if ago is not None:
        return ScalingDecision("none", reason=f"scale-out suppressed: scale-in {ago} cycle(s) ago, "
                                              f"cool-down {policy.cooldown_cycles}; {facts}")
    a_count = sum(1 for n in state.nodes if not n.marked_for_removal)
    room = math.inf if policy.max_nodes is None else policy.max_nodes - a_count
    if room <= 0:
        return ScalingDecision("none", reason=f"scale-out capped: A already has max_nodes = "
                                              f"{policy.max_nodes}; {facts}")
    reinstate: list[str] = []
    # the most loaded nodes of B first: they hold the most state, moving it back costs most
    for node in sorted((n for n in state.nodes if n.marked_for_removal),
                       key=lambda n: (-loads[n.id], n.id)):
        if missing <= EPS or len(reinstate) >= room:
            break
        reinstate.append(node.id)
        missing -= node.capacity
    count = max(0, math.ceil(missing / policy.new_node_capacity - EPS))
    capped = count > room - len(reinstate)
    count = int(min(count, room - len(reinstate)))
    add = new_node_ids(state.node_ids, count, history.used_node_ids)
    parts = ([f"reinstate {', '.join(reinstate)} from B"] if reinstate else []) + (
        [f"add {count} node(s) {', '.join(add)}"] if add else [])
    cap_note = f" (capped by max_nodes = {policy.max_nodes})" if capped else ""
    return ScalingDecision("out", add=add, reinstate=tuple(reinstate),
                           reason=f"scale-out: {'; '.join(parts)}{cap_note}; {facts}")


def _scale_in(state: ClusterState, plan: Plan, policy: ScalingPolicy, history: ScalingHistory,
              needed: float, facts: str) -> ScalingDecision:
    a_nodes = [n for n in state.nodes if not n.marked_for_removal]
    cost = _drain_cost(state, state.assignment)
    order = sorted(a_nodes, key=lambda n: (cost[n.id], n.id))
    keep_cap = sum(n.capacity for n in a_nodes)
    k = 0
    while (len(a_nodes) - k > policy.floor
           and keep_cap - order[k].capacity >= needed - EPS):
        keep_cap -= order[k].capacity
        k += 1
    if k == 0:
        why = (f"at min_nodes = {policy.floor}" if len(a_nodes) <= policy.floor
               else "the load does not fit on fewer nodes")
        return ScalingDecision("none", reason=f"no scaling: no node above target and {why}; "
                                              f"{facts}")
    ago = history.blocked_by("in", policy.cooldown_cycles)
    if ago is not None:
        return ScalingDecision("none", reason=f"scale-in suppressed: scale-out {ago} cycle(s) ago, "
                                              f"cool-down {policy.cooldown_cycles}; {facts}")
    while k > 0:
        remaining = [n.id for n in order[k:]]
        ld = lpt_load_distance(state, remaining)
        if ld <= policy.max_ld + EPS:
            mark = tuple(sorted(n.id for n in order[:k]))
            return ScalingDecision(
                "in", mark=mark,
                reason=(f"scale-in: mark {', '.join(mark)} (least state to drain); the "
                        f"{len(remaining)} remaining node(s) reach LD {ld:.2f} <= maxLD "
                        f"{policy.max_ld:g}; planned LD now {plan.after.load_distance:.2f}; "
                        f"{facts}"))
        k -= 1
    return ScalingDecision("none", reason=f"no scale-in: the load fits on fewer nodes, but they "
                                          f"could not be balanced within maxLD "
                                          f"{policy.max_ld:g}; {facts}")
