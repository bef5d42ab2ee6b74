"""Random moves: a floor that any planner must beat.

Budget-many random migrations (seeded): a random affordable key group that has not moved yet
goes to a random other node of A, until the count budget is reached or no affordable key group
is left. With no count budget, `moves` (default |G| // 10, at least 1) caps the number.
"""

from __future__ import annotations

import random

from placement.baselines.params import RandomParams
from placement.common import fits, make_plan
from placement.model import Budget, ClusterState, Plan, SolverStatus

__all__ = ["plan_random"]


def plan_random(state: ClusterState, budget: Budget, params: RandomParams) -> Plan:
    """Random migrations within the budget; status HEURISTIC, no lower bound."""
    seed, moves = params.seed, params.moves
    rng = random.Random(seed)
    target = budget.max_migrations if budget.max_migrations is not None else (
        moves if moves is not None else max(1, len(state.keygroups) // 10))
    if moves is not None:
        target = min(target, moves)
    a_nodes = sorted(n.id for n in state.nodes if not n.marked_for_removal)
    assignment = dict(state.assignment)
    pool = sorted(state.keygroups, key=lambda k: k.id)
    rng.shuffle(pool)
    count, cost = 0, 0.0
    for kg in pool:
        if count >= target:
            break
        options = [n for n in a_nodes if n != assignment[kg.id]]
        if not options or not fits(budget, count + 1, cost + kg.migration_cost):
            continue
        assignment[kg.id] = rng.choice(options)
        count, cost = count + 1, cost + kg.migration_cost
    return make_plan(state, assignment, status=SolverStatus.HEURISTIC, lower_bound=None,
                     message=f"seed {seed}")
