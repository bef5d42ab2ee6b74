"""One solve of a placement MILP through PuLP, by HiGHS or CBC: the part every MILP shares.

The MILP balancer (placement/milp/), its neighbourhood search, ALBIC's constrained MILP (by
way of the MILP strategy) and Herding's exact MILP build their own models; each model's
x-variables are `choices` (unit -> [(node, x)]), and this module solves it warm-started and
reads the assignment and the dual bound back. HiGHS runs through the bridge in
placement/highs.py (bulk build, real warm start, dual bound kept).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulp

from placement.determinism import clock_cut
from placement.highs import BulkHiGHS, model_status_name

__all__ = ["Solved", "solve_problem"]


@dataclass(frozen=True)
class Solved:
    """One solve: HiGHS-style kind, the assignment found (None if none) and the dual bound."""

    kind: str  # "optimal" | "time_limit" | "infeasible" | "no_solution" | other HiGHS status
    transfer_s: float  # PuLP -> solver model transfer time (HiGHS), part of the solve time
    assignment: dict[str, str] | None
    objective_bound: float | None  # a bound on the objective of the model that was solved


def solve_problem(prob: pulp.LpProblem, choices: Mapping[str, list[tuple[str, pulp.LpVariable]]],
                  warm: Mapping[pulp.LpVariable, float], solver: str, limit_s: float,
                  gap_rel: float, start: Mapping[str, str],
                  highs_options: Mapping[str, Any] | None = None,
                  caps: tuple[int, int] | None = None) -> Solved:
    """One solve of any placement model whose x-variables are `choices` (key group -> options).

    HiGHS gets the warm start through `Highs.setSolution` and reports its dual bound; CBC gets
    it through PuLP's `warmStart` and reports none. The assignment is `start` with every key
    group of `choices` on the option whose x is 1. A solver that fails (the cbc process dies,
    say) gives kind "solver_error (…)" and no assignment: the caller keeps its incumbent.
    `caps` = (checkpoints, nodes) caps this solve's HiGHS work budget below the call's
    (placement/determinism.py).
    """
    bound: float | None = None
    transfer = 0.0
    if solver == "highs":
        engine = BulkHiGHS(warm_start=warm, msg=False, timeLimit=limit_s, gapRel=gap_rel,
                           gapAbs=1e-9, deadline=time.perf_counter() + limit_s,
                           caps=caps, **dict(highs_options or {}))
        try:
            prob.solve(engine)
        except (pulp.PulpSolverError, OSError) as err:
            return Solved(f"solver_error ({type(err).__name__})", engine.transfer_s, None, None)
        kind = model_status_name(engine.model_status)
        bound = engine.dual_bound
        has_solution = engine.has_solution
        transfer = engine.transfer_s
    else:
        for var, val in warm.items():
            var.setInitialValue(val, check=False)
        try:
            status = prob.solve(pulp.PULP_CBC_CMD(msg=False, timeLimit=limit_s,
                                                  gapRel=gap_rel, warmStart=True))
        except (pulp.PulpSolverError, OSError) as err:  # e.g. the cbc process died
            return Solved(f"solver_error ({type(err).__name__})", 0.0, None, None)
        has_solution = prob.sol_status in (pulp.LpSolutionOptimal,
                                           pulp.LpSolutionIntegerFeasible)
        kind = {pulp.LpStatusInfeasible: "infeasible"}.get(status, "no_solution")
        if has_solution:
            kind = "optimal" if prob.sol_status == pulp.LpSolutionOptimal else "time_limit"
        if kind == "time_limit":
            clock_cut("a CBC solve")
    if not has_solution:
        return Solved("infeasible" if kind == "infeasible" else kind, transfer, None, bound)
    new = dict(start)
    for kg_id, options in choices.items():
        new[kg_id] = max(options, key=lambda opt: (opt[1].varValue or 0.0))[0]
    return Solved(kind, transfer, new, bound)
