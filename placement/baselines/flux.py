"""Flux (Shah et al., ICDE 2003) as the paper's baseline (§5.1, §5.2.1): the strategy.

The algorithm is `flux_assignment` in placement/heuristics.py (the MILP starts from it too);
Flux has no parameters of its own, so it takes the shared `StrategyParams` and ignores them.
"""

from __future__ import annotations

from placement.common import make_plan
from placement.heuristics import flux_assignment
from placement.model import Budget, ClusterState, Plan, SolverStatus
from placement.params import StrategyParams

__all__ = ["plan_flux"]


def plan_flux(state: ClusterState, budget: Budget, params: StrategyParams) -> Plan:
    """The Flux heuristic under the budget; status HEURISTIC, no lower bound."""
    assignment, count = flux_assignment(state, budget)
    return make_plan(state, assignment, status=SolverStatus.HEURISTIC, lower_bound=None,
                     message=f"{count} moves")
