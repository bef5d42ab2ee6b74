"""ALBIC: Autonomic Load Balancing with Integrated Collocation (paper §4.3.2, Algorithm 2).

Objective: collocate the key-group pairs that talk most (out(g_i, g_j) above avg·sF) while the
load distance stays within maxLD; the balancing itself is the MILP's (milp/).
Hard constraints: the MILP's (the budget, nothing onto B, resource caps), with pinned pairs
counted against the same budget. Guarantee: the status of the MILP that produced the plan
(OPTIMAL for a constrained level is optimal for the constrained problem); never worse than the
plain MILP, which is the fallback at maxPL 0.
Steps: `scores` (1, beneficial pairs), `partitions` (2, maintain collocation with METIS),
`collocate` (3, improve collocation by the paper's three cases), `contract` (4, the constrained
MILP by contraction) and `core` (the driver and the maxPL recursion). Strategies: `plan_albic`
(the paper: one pair per invocation) and `plan_albic_many` (as many pairs as the budget allows);
parameters in `params` (`AlbicParams`, `AlbicManyParams`).
"""
from typing import TYPE_CHECKING

from placement.exports import lazy

if TYPE_CHECKING:
    from placement.albic.collocate import Constraint, Improvement, improve_collocation
    from placement.albic.contract import solve_constrained
    from placement.albic.core import plan_albic, plan_albic_many
    from placement.albic.params import AlbicManyParams, AlbicParams
    from placement.albic.partitions import calc_sets, maintain_collocation
    from placement.albic.scores import Scores, calc_scores, pair_rates

__getattr__ = lazy(__name__, {
    **dict.fromkeys(("Constraint", "Improvement", "improve_collocation"),
                    "placement.albic.collocate"),
    "solve_constrained": "placement.albic.contract",
    **dict.fromkeys(("plan_albic", "plan_albic_many"), "placement.albic.core"),
    **dict.fromkeys(("AlbicManyParams", "AlbicParams"), "placement.albic.params"),
    **dict.fromkeys(("calc_sets", "maintain_collocation"), "placement.albic.partitions"),
    **dict.fromkeys(("Scores", "calc_scores", "pair_rates"), "placement.albic.scores"),
})

__all__ = [
    "AlbicManyParams",
    "AlbicParams",
    "Constraint",
    "Improvement",
    "Scores",
    "calc_scores",
    "calc_sets",
    "improve_collocation",
    "maintain_collocation",
    "pair_rates",
    "plan_albic",
    "plan_albic_many",
    "solve_constrained",
]
