"""ALBIC: Autonomic Load Balancing with Integrated Collocation (paper §4.3.2, Algorithm 2).

Steps: `scores` (1, beneficial pairs), `partitions` (2, maintain collocation with METIS),
`collocate` (3, improve collocation by the paper's three cases), `contract` (4, the constrained
MILP by contraction) and `core` (the driver and the maxPL recursion). Strategies: `plan_albic`
(the paper: one pair per invocation) and `plan_albic_many` (as many pairs as the budget allows).
"""

from placement.albic.collocate import Constraint, Improvement, improve_collocation
from placement.albic.contract import solve_constrained
from placement.albic.core import (
    DEFAULT_MAX_LD,
    DEFAULT_MAX_PL,
    DEFAULT_PAIR_SHARE,
    DEFAULT_SF,
    DEFAULT_STEP_PL,
    check_albic_params,
    plan_albic,
    plan_albic_many,
)
from placement.albic.partitions import calc_sets, maintain_collocation
from placement.albic.scores import Scores, calc_scores, pair_rates

__all__ = [
    "DEFAULT_MAX_LD",
    "DEFAULT_MAX_PL",
    "DEFAULT_PAIR_SHARE",
    "DEFAULT_SF",
    "DEFAULT_STEP_PL",
    "Constraint",
    "Improvement",
    "Scores",
    "calc_scores",
    "calc_sets",
    "check_albic_params",
    "improve_collocation",
    "maintain_collocation",
    "pair_rates",
    "plan_albic",
    "plan_albic_many",
    "solve_constrained",
]
