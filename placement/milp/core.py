"""Load balancing as the paper's MILP (§4.3.1), built with PuLP, solved by HiGHS (or CBC).

The formulation (1)-(5), (R) with the paper's symbols (Table 2) is written out in
placement/milp/model.py, which builds it; this module chooses how to solve it.

Constraint (5) is relaxed where it cannot hold. With heterogeneous nodes or a hot spot the
current allocation often has d > mean, and one period's budget may not bring d below mean: the
paper's MILP is then infeasible and would leave the overloaded cluster as it is. Instead (5) is
kept as d's upper bound only when the incumbent meets it (the optimum then does too, so nothing
changes); otherwise it is dropped and d is still minimised; the plan's message says so
("constraint (5) relaxed: …"). INFEASIBLE remains only for resource caps that no plan within
the budget meets.

Exact reductions (the optimum is unchanged): a key group whose mc_k exceeds maxMigrCost gets no
variable (its x is forced to q); the budget (2) is written as Σ_k x_{q_k,k} ≥ |movers| − M, which
(1) makes equal to the paper's form. Lemma 1 reduction: no x_{i,k} for i ∈ B unless q_{i,k} = 1
(no move into B); the tests check on enumerated instances that this never changes the optimum.

Speed. The LP relaxation of this min–max model balances perfectly (fractional x), so a MIP
solver gets little guidance from it and the incumbent matters most:
1. warm start (`_start`): the best of the current allocation, greedy, Flux and the pairwise-
   exchange search (`milp/start.py`, moves *and* exchanges of key groups between the worst node
   and its partners, which fine-tunes nodes a fraction of a key group away from mean);
2. `candidates="all"`: the full model, warm-started, solved once (exact up to the time limit).
   `"auto"` (default) does the same for models of ≤ AUTO_MAX_VARS x-variables; for bigger ones
   it runs a large-neighbourhood search over the same MILP (`milp/lns.py`) and then, if time
   is left and the full model is small enough to build in it, the full model warm-started.
Either way a plan is OPTIMAL only when the full model is proven optimal or the certified lower
bound (`milp/bounds.py`) meets the plan's d; at the paper's sizes the bound is what proves it.
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping

from placement.common import EPS, MIN_SOLVE_S, is_frozen, make_plan, relaxed_five
from placement.constraints import broken
from placement.determinism import clock_cut, work_budgeted
from placement.heuristics import flux_assignment, greedy_assignment
from placement.metrics import max_deviation, mean_load
from placement.milp.bounds import lower_bound_d
from placement.milp.lns import Ctx, search
from placement.milp.model import Weights, build, caps_violation, objective, solve, valid
from placement.milp.start import exchange_search
from placement.model import Budget, ClusterState, KeyGroup, Phase, Plan, SolverStatus
from placement.params import MilpParams

__all__ = ["plan_milp"]

AUTO_MAX_VARS = 4000  # "auto" solves models up to this many x-variables in one go
#: measured cost per x-variable of a full model outside the solver's own clock: PuLP build +
#: transfer + post-processing (HiGHS), + MPS write/read and root work that ignores the limit
#: (CBC through PuLP: 1.5 s with a 0.05 s limit, 5.5 s with 2 s, at 72 000 variables). Used to
#: decide whether a full model fits in the time left, and to shorten the solver's limit so that
#: the call ends on time.
OVERHEAD_S_PER_VAR = {"highs": 1.2e-5, "cbc": 1.2e-4}
POST_S_PER_VAR = {"highs": 3e-6, "cbc": 8e-5}


def _start(ctx: Ctx) -> dict[str, str]:
    """The warm start: the best of the current allocation, greedy, Flux and the exchange search.

    Greedy and Flux always run (they take milliseconds and no clock), so the MILP's plan is
    never worse than theirs whatever the time limit or the machine's load; the exchange search
    (`milp/start.py`) runs from the better of the two and from the current allocation, each
    within a third of the time left, and only improves on its origin. Every option counts,
    also when the current allocation breaks (5) or a resource cap: an option is kept when it
    respects the budget and the caps. If none does, the current allocation is returned (and
    the caller finds it invalid).
    """
    state, budget = ctx.state, ctx.budget
    options = [dict(state.assignment), greedy_assignment(state, budget),
               flux_assignment(state, budget)[0]]
    ok = [a for a in options if valid(state, budget, a, ctx.caps)]
    heuristic = min(ok[1:] or ok or options[:1], key=lambda a: objective(state, a, ctx.weights))
    # a third of the time at most for each exchange search (the first one is the better); on
    # a work budget its own step bound is the budget and the call's deadline the safety net
    budgeted = work_budgeted()
    for origin in (heuristic, state.assignment):
        deadline = (ctx.deadline if budgeted
                    else time.perf_counter() + max(MIN_SOLVE_S, ctx.left() / 3))
        options.append(exchange_search(state, budget, origin, ctx.caps, deadline))
    ok = [a for a in options if valid(state, budget, a, ctx.caps)] or options[:1]
    return min(ok, key=lambda a: objective(state, a, ctx.weights))


def plan_milp(state: ClusterState, budget: Budget, params: MilpParams) -> Plan:
    """Solve the MILP within `time_limit_s` (model building included) and return the plan.

    OPTIMAL: the full model proven optimal, or the plan's d meets the certified lower bound.
    TIME_LIMITED: the best incumbent when the work budget, the size rule or (rarely, the
    safety net) the clock stopped the search; never worse (in the MILP's objective) than the
    current allocation, greedy or Flux. INFEASIBLE: only when the current allocation
    breaks a resource cap and no plan within the budget meets the caps; the current assignment
    is kept and `message` says why. `lower_bound` is a certified lower bound on the MILP's d
    (= LD unless a node of B sits above mean + LD) over every plan within the budget. The
    plan's phases time the warm start, the neighbourhood search (its outcome: sub-MILPs run
    and improved) and the full model's PuLP build, transfer to the solver and solve (its
    outcome: the solver's status, e.g. "optimal", "time_limit", "solver_error (…)").
    """
    started = time.perf_counter()
    weights = Weights(params.w1, params.w2, params.w_b)
    solver, candidates, w_b, w1 = params.solver, params.candidates, params.w_b, params.w1
    time_limit_s, gap_rel, seed = params.time_limit_s, params.gap_rel, params.seed
    caps = dict(params.resource_caps or {})
    ctx = Ctx(state, budget, caps, weights, solver, gap_rel, started + time_limit_s)

    def better(new: Mapping[str, str] | None, old: Mapping[str, str]) -> bool:
        return new is not None and valid(state, budget, new, caps) and (
            objective(state, new, weights) < objective(state, old, weights) - 1e-12)

    mean = mean_load(state)
    current_d = max_deviation(state, state.assignment)
    # the same tolerance as `fits` (greedy, Flux, `valid`): a key group the baselines may move
    # within the budget, the MILP may move too
    cost_cap = math.inf if budget.max_migration_cost is None else budget.max_migration_cost + EPS

    def can_move(kg: KeyGroup) -> bool:
        return not is_frozen(budget) and kg.migration_cost <= cost_cap

    phases: list[Phase] = []

    def keep(status: SolverStatus, bound: float | None, why: str) -> Plan:
        return make_plan(state, state.assignment, status=status, lower_bound=bound,
                         message=why, phases=tuple(phases))

    problem = caps_violation(state, state.assignment, caps)
    movers = [k for k in state.keygroups if can_move(k)]
    if not movers:
        why = "the budget allows no migration; current assignment kept"
        if problem:
            return keep(SolverStatus.INFEASIBLE, current_d, f"{why}; infeasible: {problem}")
        note = relaxed_five(current_d, mean, current_d)
        return keep(SolverStatus.OPTIMAL, current_d, "; ".join(filter(None, [why, note])))
    bound = lower_bound_d(state, budget, can_move)

    marked = {n.id for n in state.nodes if n.marked_for_removal}
    load_on_b = sum(k.load for k in state.keygroups if state.assignment[k.id] in marked)

    def certified(assignment: Mapping[str, str]) -> bool:
        """d meets the lower bound and (if w_b > 0) nothing is left on B: no better plan."""
        if w_b and marked & set(assignment.values()):
            return False
        if state.constraints and broken(state, assignment):  # a repair may still pay (T)
            return False
        return max_deviation(state, assignment) <= bound + 1e-7 * max(1.0, bound)

    def done(best: Mapping[str, str], status: SolverStatus, notes: list[str]) -> Plan:
        d = max_deviation(state, best)
        note = relaxed_five(d, mean, bound)
        return make_plan(state, best, status=status, lower_bound=min(bound, d),
                         message="; ".join(filter(None, [note, *notes])), phases=tuple(phases))

    t0 = time.perf_counter()
    start = _start(ctx)
    phases.append(Phase("warm start", time.perf_counter() - t0))
    best: dict[str, str] | None = start if valid(state, budget, start, caps) else None
    notes: list[str] = []
    if best is not None and certified(best):
        return done(best, SolverStatus.OPTIMAL, ["warm start certified by the lower bound"])
    # (5) is kept in the model when the incumbent meets it (the optimum then meets it too), and
    # relaxed otherwise: a cap the best plan known breaks would only make the model infeasible
    five = best is not None and max_deviation(state, best) <= mean
    a_nodes = [n.id for n in state.nodes if not n.marked_for_removal]
    full_vars = len(movers) * len(a_nodes)
    if candidates == "auto" and full_vars > AUTO_MAX_VARS and best is not None:
        t0 = time.perf_counter()
        best, searched = search(ctx, can_move, best, seed, certified, params.lns_steps)
        phases.append(Phase("neighbourhood search", time.perf_counter() - t0, searched))
        if certified(best):
            notes.append("certified by the lower bound")
            return done(best, SolverStatus.OPTIMAL, notes)
    status = SolverStatus.TIME_LIMITED
    fits_in_time = ctx.left() > full_vars * OVERHEAD_S_PER_VAR[solver] + 0.2
    # on a work budget, whether the full model runs is a size rule (above AUTO_MAX_VARS its
    # root alone outlasts a planning period: 30 s at 8 000 x-vars), not the time left; the
    # clock only vetoes it (docs/algorithms.md, "Deterministic plans")
    wanted = not work_budgeted() or full_vars <= AUTO_MAX_VARS
    if best is None or candidates == "all" or (wanted and fits_in_time):
        t0 = time.perf_counter()
        base = best or state.assignment
        built = build(state, budget, movers, a_nodes, base, weights, caps, five=five)
        t1 = time.perf_counter()
        limit = max(MIN_SOLVE_S, ctx.left() - full_vars * POST_S_PER_VAR[solver])
        solved = solve(state, built, solver, limit, gap_rel, base)
        phases += [Phase("PuLP build", t1 - t0, f"{len(built.x)} x-vars"),
                   Phase("transfer to solver", solved.transfer_s),
                   Phase("solve", time.perf_counter() - t1 - solved.transfer_s, solved.kind)]
        if (solved.objective_bound is not None and math.isfinite(solved.objective_bound)
                and not state.constraints):  # w_T·violation in the objective: no bound on d
            # obj = w1·d − w2·(d_u + d_l) + w_b·L_B with d_u, d_l ≥ 0 and L_B ≤ its current value
            # (nothing moves onto B), so d ≥ (bound − w_b·L_B(q)) / w1. With (5) kept, this
            # bounds the plans with d ≤ mean, and every other plan has d > mean ≥ the
            # incumbent's d ≥ the reported bound min(bound, d).
            bound = max(bound, (solved.objective_bound - w_b * load_on_b) / w1)
        new = solved.assignment
        if new is not None and ((best is None and valid(state, budget, new, caps))
                                or (best is not None and better(new, best))):
            best = new
        if best is not None and solved.kind == "optimal":
            status = SolverStatus.OPTIMAL
    elif wanted:
        notes.append("no time left for the full model")
        clock_cut("the full model (no time left)")
    else:
        notes.append(f"the full model ({full_vars} x-vars) is above the size a work-budgeted "
                     f"call solves ({AUTO_MAX_VARS}): the neighbourhood search's plan")
    if best is None:
        return keep(SolverStatus.INFEASIBLE, bound,
                    "; ".join([f"infeasible: {problem}", "no plan within the budget meets the "
                               "resource caps", "current assignment kept", *notes]))
    if status is not SolverStatus.OPTIMAL and certified(best):
        status = SolverStatus.OPTIMAL
        notes.append("certified by the lower bound")
    return done(best, status, notes)
