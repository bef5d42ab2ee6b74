"""The planners: a small core and one folder per strategy family.

Core: `model` (ClusterState, Budget, Plan and its timed `Phase`s), `metrics` (LD, collocation
factor, load index), `params` (the shared strategy params and the MILP's), `registry`
(strategies by name, the table in schemas/strategies.py, and the wrapper every strategy runs
in), `common` (budget arithmetic, Plan assembly), `canonical` (one order for every state),
`facets` (the optional parts of a state), and the solver helpers several families share:
`heuristics` (Flux, greedy), `mip` (one solve of a placement MILP), `highs` (PuLP → HiGHS),
`graphpart` (METIS).
Families, one folder each: `milp/`, `albic/`, `baselines/`, `scaling/`, `rod/`, `sprawl/`,
`herding/`, `consistent_grouping/`, and `workloads/` (the generators). A family imports the
core, never another family (tests/test_import_graph.py); a strategy that builds on another
calls it by name (`registry.run_inner`). Every family's `__init__` is lazy and its `params`
module imports pydantic only, so the config loader checks a job's parameters without a solver.

**The strategy interface** (placement/registry.py): every strategy is
`plan(state, budget, params) -> Plan`; the registry's wrapper (`get_strategy(name)`) builds the
params, checks the inputs, canonicalises the state, times the call, names the plan and checks
its promises. Names below resolve on first use, so importing a light module stays light.
"""
from typing import TYPE_CHECKING

from placement.exports import lazy

if TYPE_CHECKING:
    from placement.metrics import (
        collocation_factor,
        load_distance,
        max_deviation,
        mean_load,
        node_loads,
        plan_metrics,
    )
    from placement.milp import lower_bound_d
    from placement.model import (
        Budget,
        ClusterState,
        Edge,
        KeyGroup,
        Move,
        Node,
        Phase,
        Plan,
        PlanMetrics,
        ScalingActions,
        SolverStatus,
        moves_between,
    )
    from placement.params import StrategyParams
    from placement.registry import check_params, get_strategy, register, strategy_names
    from placement.workloads.synthetic import synthetic_state

_MODEL = ("Budget", "ClusterState", "Edge", "KeyGroup", "Move", "Node", "Phase", "Plan",
          "PlanMetrics", "ScalingActions", "SolverStatus", "moves_between")
_METRICS = ("collocation_factor", "load_distance", "max_deviation", "mean_load", "node_loads",
            "plan_metrics")
__getattr__ = lazy(__name__, {
    **dict.fromkeys(_MODEL, "placement.model"),
    **dict.fromkeys(_METRICS, "placement.metrics"),
    "StrategyParams": "placement.params",
    "lower_bound_d": "placement.milp",
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
    "Phase",
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
    "plan_metrics",
    "register",
    "strategy_names",
    "synthetic_state",
]
