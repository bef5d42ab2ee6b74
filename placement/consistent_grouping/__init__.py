"""Consistent Grouping (Nasir et al.): the planner side, VW pairing on heterogeneous nodes.

Objective: each node's share of the VWs (key groups) in proportion to its capacity, i.e. equal
utilisation U_w = L_w / c_w; one VW moves per (busy, idle) pair per signalling round (§5.2.1).
Hard constraints: the budget, nothing onto B. Guarantee: heuristic (status HEURISTIC, no lower
bound). `pairing` holds the pure pairing step a simulator reuses; `metrics` the imbalance and
VW-count metrics. The per-message routing (PORC and the other policies) lives in the runtime.
"""
from typing import TYPE_CHECKING

from placement.exports import lazy

if TYPE_CHECKING:
    from placement.consistent_grouping.core import cg_assignment, plan_cg
    from placement.consistent_grouping.metrics import cg_metrics
    from placement.consistent_grouping.pairing import (
        Thresholds,
        classify,
        imbalance,
        normalized_imbalance,
        optimal_vws,
        pair_step,
    )
    from placement.consistent_grouping.params import CgParams

__getattr__ = lazy(__name__, {
    "cg_assignment": "placement.consistent_grouping.core",
    "plan_cg": "placement.consistent_grouping.core",
    "cg_metrics": "placement.consistent_grouping.metrics",
    "Thresholds": "placement.consistent_grouping.pairing",
    "classify": "placement.consistent_grouping.pairing",
    "imbalance": "placement.consistent_grouping.pairing",
    "normalized_imbalance": "placement.consistent_grouping.pairing",
    "optimal_vws": "placement.consistent_grouping.pairing",
    "pair_step": "placement.consistent_grouping.pairing",
    "CgParams": "placement.consistent_grouping.params",
})

__all__ = ["CgParams", "Thresholds", "cg_assignment", "cg_metrics", "classify", "imbalance",
           "normalized_imbalance", "optimal_vws", "pair_step", "plan_cg"]
