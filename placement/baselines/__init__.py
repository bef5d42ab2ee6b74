"""Baseline strategies the MILP is compared against (paper §5): Flux, greedy, random."""

from placement.baselines.flux import plan_flux
from placement.baselines.greedy import greedy_assignment, plan_greedy
from placement.baselines.random_moves import plan_random

__all__ = ["greedy_assignment", "plan_flux", "plan_greedy", "plan_random"]
