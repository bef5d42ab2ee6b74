"""Greedy: fix the largest deviation first, one migration at a time, under the budget.

The algorithm is `greedy_assignment` in placement/heuristics.py (the MILP starts from it
too); greedy has no parameters of its own, so it takes the shared `StrategyParams` and ignores
them.
"""

from __future__ import annotations

from placement.common import make_plan
from placement.heuristics import greedy_assignment
from placement.model import Budget, ClusterState, Plan, SolverStatus
from placement.params import StrategyParams

__all__ = ["plan_greedy"]


def plan_greedy(state: ClusterState, budget: Budget, params: StrategyParams) -> Plan:
    """Largest-deviation-first moves under the budget; status HEURISTIC, no lower bound."""
    return make_plan(state, greedy_assignment(state, budget), status=SolverStatus.HEURISTIC,
                     lower_bound=None)
