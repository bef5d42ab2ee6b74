"""Scaling: Algorithm 1 of the paper (§4.1, §4.2) and the non-integrated drain of §5.1.

Objective: enough nodes of A for the load at the target utilisation, B drained by the same
migration budget as balancing (Lemma 4.2), so one plan decides scaling and balancing together.
Hard constraints: a node is terminated only when it holds no key group; the strategy's own (the
budget, nothing moves onto B). Guarantee: heuristic (the policy); the plan inside is the
configured strategy's. `drain_then_balance` is the baseline of Figure 5: drain B evenly, then
balance (heuristic).
Modules: `cycle` (Algorithm 1: `scaling_cycle`), `policy` (when to scale out or in, one reason
per decision), `drain` (`plan_drain_then_balance`), `params` (`DrainParams`).
"""
from typing import TYPE_CHECKING

from placement.exports import lazy

if TYPE_CHECKING:
    from placement.scaling.cycle import DRAIN_W_B, ScalingOutcome, scaling_cycle, terminate_empty
    from placement.scaling.drain import drain_evenly, plan_drain_then_balance
    from placement.scaling.params import DrainParams
    from placement.scaling.policy import DECISIONS, ScalingDecision, ScalingHistory, ScalingPolicy

__getattr__ = lazy(__name__, {
    "DRAIN_W_B": "placement.scaling.cycle",
    "ScalingOutcome": "placement.scaling.cycle",
    "scaling_cycle": "placement.scaling.cycle",
    "terminate_empty": "placement.scaling.cycle",
    "drain_evenly": "placement.scaling.drain",
    "plan_drain_then_balance": "placement.scaling.drain",
    "DrainParams": "placement.scaling.params",
    "DECISIONS": "placement.scaling.policy",
    "ScalingDecision": "placement.scaling.policy",
    "ScalingHistory": "placement.scaling.policy",
    "ScalingPolicy": "placement.scaling.policy",
})

__all__ = ["DECISIONS", "DRAIN_W_B", "DrainParams", "ScalingDecision", "ScalingHistory",
           "ScalingOutcome", "ScalingPolicy", "drain_evenly", "plan_drain_then_balance",
           "scaling_cycle", "terminate_empty"]
