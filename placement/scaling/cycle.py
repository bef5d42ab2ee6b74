"""Algorithm 1 of the paper (§4.1): scaling integrated with balancing and collocation.

Each cycle:
1. every node marked for removal (set B) in an earlier cycle that holds no key group is
   terminated (a node that still holds one never is);
2. plan = the configured strategy's allocation on the current nodes;
3. the policy (`scaling/policy.py`) judges that plan; if it scales, the plan is recomputed on the
   new node set (added nodes empty, reinstated nodes back in A, nodes to remove marked = B), so
   the strategy decides with one migration budget what to drain and what to rebalance;
4. the plan is returned with its `ScalingActions`; the plan stage publishes both together.

Finishing the drain (our addition, docs/algorithms.md "Scaling"): with whole key groups Lemma
4.2 does not hold (the MILP may keep the last key groups on B forever, because moving them
raises d), so when the plan leaves key groups on B while its LD is already within `max_ld`, the
strategy is run once more with draining weighted like d (`w_b = DRAIN_W_B = w1`), and that plan
is taken if its LD stays within max(max_ld, the first plan's LD). Urgent rebalancing still
comes first (the boost only runs once the balance is good), and B empties in a few rounds.

`ScalingActions.nodes_to_mark` lists the *whole* set B after the cycle (nodes marked earlier and
still draining, plus the newly marked ones; the reason names the new ones), so the newest
manifest alone tells the runtime and the next cycle which nodes are draining.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from placement import registry
from placement.model import Budget, ClusterState, Node, Plan, ScalingActions
from placement.scaling.policy import (
    ScalingDecision,
    ScalingHistory,
    ScalingPolicy,
    decide,
)

__all__ = ["DRAIN_W_B", "ScalingOutcome", "finish_drain", "scaling_cycle", "terminate_empty"]

DRAIN_W_B = 1.0  # = the MILP's w1: a unit of load drained from B is worth a unit of d


@dataclass(frozen=True)
class ScalingOutcome:
    """One cycle of Algorithm 1: the plan (with its scaling actions) and what it was made on."""

    plan: Plan
    decision: ScalingDecision
    state: ClusterState  # the nodes (A ∪ B after the decision) the published plan is made on
    terminated: tuple[str, ...]

    @property
    def marked(self) -> tuple[str, ...]:
        return tuple(n.id for n in self.state.nodes if n.marked_for_removal)


def terminate_empty(state: ClusterState) -> tuple[ClusterState, tuple[str, ...]]:
    """Step 1: drop every node of B that holds no key group; (state without them, their ids)."""
    busy = set(state.assignment.values())
    gone = tuple(n.id for n in state.nodes if n.marked_for_removal and n.id not in busy)
    if not gone:
        return state, ()
    nodes = tuple(n for n in state.nodes if n.id not in gone)
    return replace(state, nodes=nodes), gone


def _rescaled(state: ClusterState, decision: ScalingDecision, policy: ScalingPolicy
              ) -> ClusterState:
    mark, back = set(decision.mark), set(decision.reinstate)
    nodes = [Node(n.id, n.capacity, (n.marked_for_removal or n.id in mark) and n.id not in back)
             for n in state.nodes]
    nodes += [Node(node_id, policy.new_node_capacity) for node_id in decision.add]
    return replace(state, nodes=tuple(nodes))


def finish_drain(state: ClusterState, budget: Budget, plan: Plan, strategy: str, max_ld: float,
                 **params: Any) -> Plan:
    """The plan, or a re-plan with draining weighted like d if the balance is already good."""
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    if not marked & set(plan.assignment.values()) or plan.after.load_distance > max_ld:
        return plan
    if not registry.get_spec(strategy).params.weighs_b:
        return plan
    run = registry.get_strategy(strategy)
    boosted = run(state, budget, **{**params, "w_b": DRAIN_W_B})
    left = sum(1 for node in boosted.assignment.values() if node in marked)
    before = sum(1 for node in plan.assignment.values() if node in marked)
    if left < before and boosted.after.load_distance <= max(max_ld, plan.after.load_distance):
        note = f"drain boost (w_b = {DRAIN_W_B:g}): {before - left} more key group(s) off B"
        return replace(boosted, message=f"{boosted.message}; {note}".lstrip("; "))
    return plan


def scaling_cycle(
    state: ClusterState,
    budget: Budget,
    *,
    strategy: str = "milp",
    policy: ScalingPolicy | None = None,
    history: ScalingHistory | None = None,
    scale: bool = True,
    **params: Any,
) -> ScalingOutcome:
    """Run Algorithm 1 once on `state` (nodes of B carry `marked_for_removal`).

    `scale=False` skips the policy (steps 1, 2 and 4 only: drain the given B, terminate it).
    """
    started = time.perf_counter()
    policy = policy or ScalingPolicy()
    history = history or ScalingHistory()
    run = registry.get_strategy(strategy)
    state, terminated = terminate_empty(state)
    plan = run(state, budget, **params)
    decision = (decide(state, plan, policy, history) if scale
                else ScalingDecision("none", reason="scaling decisions off"))
    if decision.direction != "none":
        state = _rescaled(state, decision, policy)
        plan = run(state, budget, **params)
    plan = finish_drain(state, budget, plan, strategy, policy.max_ld, **params)
    busy = set(plan.assignment.values())
    assert not busy & set(terminated), "a terminated node may not hold key groups"
    marked = tuple(n.id for n in state.nodes if n.marked_for_removal)
    reason = decision.reason
    if terminated:
        reason = f"terminate empty {', '.join(terminated)}; {reason}"
    actions = ScalingActions(nodes_to_add=decision.add, nodes_to_mark=marked,
                             nodes_to_terminate=terminated, reason=reason)
    plan = replace(plan, scaling=actions, wall_s=time.perf_counter() - started)
    return ScalingOutcome(plan, decision, state, terminated)

