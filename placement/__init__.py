"""The planners: a small core and one folder per strategy family.

Core: `model` (ClusterState, Budget, Plan), `metrics` (LD, collocation factor, load index),
`params` (the shared strategy params), `registry` (strategies by name, the table in
schemas/strategies.py), `common` (budget arithmetic, Plan assembly), `graphpart` (METIS).
Families: `milp/`, `albic/`, `scaling/`, `baselines/`, and `workloads/` (the generators).
Names below resolve on first use, so importing a light module (a family's `params`) stays light.
"""
from typing import TYPE_CHECKING

from placement.exports import lazy

if TYPE_CHECKING:
    from placement.baselines import plan_flux, plan_greedy, plan_random
    from placement.metrics import (
        collocation_factor,
        load_distance,
        max_deviation,
        mean_load,
        node_loads,
        plan_metrics,
    )
    from placement.milp import lower_bound_d, plan_milp
    from placement.model import (
        Budget,
        ClusterState,
        Edge,
        KeyGroup,
        Move,
        Node,
        Plan,
        PlanMetrics,
        ScalingActions,
        SolverStatus,
        moves_between,
    )
    from placement.params import StrategyParams
    from placement.registry import check_params, get_strategy, register, strategy_names
    from placement.workloads.synthetic import synthetic_state

_MODEL = ("Budget", "ClusterState", "Edge", "KeyGroup", "Move", "Node", "Plan", "PlanMetrics",
          "ScalingActions", "SolverStatus", "moves_between")
_METRICS = ("collocation_factor", "load_distance", "max_deviation", "mean_load", "node_loads",
            "plan_metrics")
__getattr__ = lazy(__name__, {
    **dict.fromkeys(_MODEL, "placement.model"),
    **dict.fromkeys(_METRICS, "placement.metrics"),
    "StrategyParams": "placement.params",
    **dict.fromkeys(("plan_flux", "plan_greedy", "plan_random"), "placement.baselines"),
    **dict.fromkeys(("lower_bound_d", "plan_milp"), "placement.milp"),
    **dict.fromkeys(("check_params", "get_strategy", "register", "strategy_names"),
                    "placement.registry"),
    "synthetic_state": "placement.workloads.synthetic",
})

__all__ = [
    "Budget",
    "ClusterState",
    "Edge",
    "KeyGroup",
    "Move",
    "Node",
    "Plan",
    "PlanMetrics",
    "ScalingActions",
    "SolverStatus",
    "StrategyParams",
    "check_params",
    "collocation_factor",
    "get_strategy",
    "load_distance",
    "lower_bound_d",
    "max_deviation",
    "mean_load",
    "moves_between",
    "node_loads",
    "plan_flux",
    "plan_greedy",
    "plan_metrics",
    "plan_milp",
    "plan_random",
    "register",
    "strategy_names",
    "synthetic_state",
]
