"""Baselines the MILP and ALBIC are compared against (paper §5): Flux, greedy, random, COLA.

Objective: Flux and greedy lower the load distance move by move (Flux: pairs of the most and
least loaded nodes; greedy: the best single move), random moves at random, COLA (§2.1, §5.3)
splits a graph partition until the load is balanced enough and ignores the current allocation.
Hard constraints: the budget and nothing onto B (COLA ignores the budget on purpose).
Guarantee: heuristic (status HEURISTIC, no lower bound).
"""
from typing import TYPE_CHECKING

from placement.exports import lazy

if TYPE_CHECKING:
    from placement.baselines.cola import cola_partitions, plan_cola
    from placement.baselines.flux import plan_flux
    from placement.baselines.greedy import plan_greedy
    from placement.baselines.params import ColaParams, RandomParams
    from placement.baselines.random_moves import plan_random
    from placement.heuristics import greedy_assignment

__getattr__ = lazy(__name__, {
    "cola_partitions": "placement.baselines.cola",
    "plan_cola": "placement.baselines.cola",
    "plan_flux": "placement.baselines.flux",
    "greedy_assignment": "placement.heuristics",
    "plan_greedy": "placement.baselines.greedy",
    "ColaParams": "placement.baselines.params",
    "RandomParams": "placement.baselines.params",
    "plan_random": "placement.baselines.random_moves",
})

__all__ = ["ColaParams", "RandomParams", "cola_partitions", "greedy_assignment", "plan_cola",
           "plan_flux", "plan_greedy", "plan_random"]
