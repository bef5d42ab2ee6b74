"""MILP: load balancing under a migration budget as the paper's MILP (§4.3.1).

Objective: min w1·d − w2·(d_u + d_l) + w_b·Σ_{n_i∈B} load_i, d the load distance (LD, §4.3.1).
Hard constraints: every key group on one node (1); the migration budget (2), in cost and count;
nothing moves onto a node of B (Lemma 1); resource caps (R) where given.
Guarantee: exact. OPTIMAL when the full model is proven optimal or the plan's d meets the
certified lower bound (`bounds`); else TIME_LIMITED, never worse than the current allocation,
greedy or Flux.
Modules: `core` (the driver, `plan_milp`), `model` (PuLP model, solve), `lns` (large-
neighbourhood search), `start` (warm start: the pairwise-exchange search), `bounds` (the lower
bound without a solver); the solver helpers it shares live in the core (placement/heuristics.py,
mip.py, highs.py). Its parameters, `MilpParams`, live in
placement/params.py (ALBIC and drain_then_balance take them too).
"""
from typing import TYPE_CHECKING

from placement.exports import lazy

if TYPE_CHECKING:
    from placement.milp.bounds import lower_bound_d
    from placement.milp.core import plan_milp
    from placement.params import DEFAULT_W1, DEFAULT_W2, DEFAULT_WB, MilpParams

__getattr__ = lazy(__name__, {
    "lower_bound_d": "placement.milp.bounds",
    "DEFAULT_W1": "placement.params",
    "DEFAULT_W2": "placement.params",
    "DEFAULT_WB": "placement.params",
    "plan_milp": "placement.milp.core",
    "MilpParams": "placement.params",
})

__all__ = ["DEFAULT_W1", "DEFAULT_W2", "DEFAULT_WB", "MilpParams", "lower_bound_d", "plan_milp"]
