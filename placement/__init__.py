"""The planners: the cluster model, metrics, the load-balancing MILP and its baselines."""

from placement.baselines import plan_flux, plan_greedy, plan_random
from placement.bounds import lower_bound_d
from placement.metrics import (
    collocation_factor,
    load_distance,
    max_deviation,
    mean_load,
    node_loads,
    plan_metrics,
)
from placement.milp import plan_milp
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
    node_ids_in,
)
from placement.registry import SHARED_PARAMS, check_params, get_strategy, register, strategy_names
from placement.synthetic import synthetic_state

__all__ = [
    "SHARED_PARAMS",
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
    "check_params",
    "collocation_factor",
    "get_strategy",
    "load_distance",
    "lower_bound_d",
    "max_deviation",
    "mean_load",
    "moves_between",
    "node_ids_in",
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
