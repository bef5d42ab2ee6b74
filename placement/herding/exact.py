"""An exact MILP for QA (Zong et al. 2015 §2.1) on small instances, with a certified bound.

min Σ_{s,j} w(s)·z_sj  s.t.  Σ_j x_qj = 1 (each query on one server),
x_qj ≤ z_sj for s ∈ S_q (a server hosting a reader receives s), Σ_q x_qj ≤ cap_j (eq. 1,
capacity-weighted, or the node's current count if higher: a budget may not allow
fixing it; 0 on nodes marked for removal), and the migration budget over the units
that have a current node: Σ_q mc_q·(1 − x_{q,cur(q)}) ≤ maxMigrCost, Σ_q (1 − x_{q,cur(q)}) ≤
maxMigrations. Warm-started from IC's plan (within the budget); HiGHS's dual bound is the
certified lower bound on the optimal traffic (facet metric `traffic_lower_bound`, together
with the capacity bound of placement/herding/metrics.py). OPTIMAL when HiGHS proves it,
TIME_LIMITED otherwise. Nodes of B are drained first (lexicographically, as the heuristics
do): the budget covers moving at most D of the units on B (the cheapest first, `drainable`),
and the model requires that at most |on B| − D stay, so a unit stays on B only when the
budget cannot move it, never to save traffic; the plan's message says how many stay.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pulp

from placement.common import MIN_SOLVE_S, fits, is_frozen
from placement.herding.instance import capacities, from_state
from placement.herding.metrics import capacity_bound, traffic_arrays
from placement.herding.migrate import herding_plan, within_budget
from placement.herding.offline import run_offline
from placement.herding.params import ExactParams
from placement.mip import solve_problem
from placement.model import Budget, ClusterState, Phase, Plan, SolverStatus

__all__ = ["drainable", "plan_exact"]


def drainable(costs: list[float], budget: Budget) -> int:
    """The most units of B the budget can move: the cheapest first (cardinality is maximal
    when the cheapest are taken)."""
    count, total = 0, 0.0
    for mc in sorted(costs):
        if not fits(budget, count + 1, total + mc):
            break
        count, total = count + 1, total + mc
    return count


def plan_exact(state: ClusterState, budget: Budget, params: ExactParams) -> Plan:
    """The optimal QA assignment within the budget (or the best found in time_limit_s)."""
    started = time.perf_counter()  # time_limit_s counts from here (IC's start included)
    inst = from_state(state)
    caps = capacities(inst, params.nu)
    start, _ = within_budget(inst, run_offline(inst, caps, "ic", nu=params.nu), caps, budget)
    used = inst.used_weight()
    now = inst.current[inst.current >= 0]
    upper = np.maximum(caps, np.bincount(now, minlength=inst.k))  # never fuller than now
    cap_bound = max(used, capacity_bound(inst, upper))

    phases: list[Phase] = []

    def done(node: np.ndarray, status: SolverStatus, bound: float, note: str) -> Plan:
        return herding_plan(state, inst, node, caps, status=status, message=note,
                            extra={"traffic_lower_bound": bound}, phases=tuple(phases))

    if inst.n > params.max_units:
        return done(start, SolverStatus.HEURISTIC, cap_bound,
                    f"{inst.n} units > max_units {params.max_units}: IC's plan, not solved")
    prob = pulp.LpProblem("herding_qa", pulp.LpMinimize)
    hosts = [j for j in range(inst.k) if caps[j] > 0]
    x: dict[tuple[int, int], pulp.LpVariable] = {}
    fixed: dict[int, int] = {}
    frozen = is_frozen(budget)
    for q in range(inst.n):
        cur = int(inst.current[q])
        options = list(hosts)
        if cur >= 0 and (frozen or cur not in hosts):
            options = [cur] if frozen else [*hosts, cur]
        if len(options) == 1:
            fixed[q] = options[0]
        for j in options:
            x[q, j] = pulp.LpVariable(f"x_{q}_{j}", cat=pulp.LpBinary)
    z: dict[tuple[int, int], pulp.LpVariable] = {}
    for (q, j), var in x.items():
        for s in inst.sources_of(q).tolist():
            if (s, j) not in z:
                z[s, j] = pulp.LpVariable(f"z_{s}_{j}", cat=pulp.LpBinary)
            prob += var <= z[s, j]
    prob += pulp.lpSum(float(inst.rates[s]) * v for (s, _), v in z.items())
    by_unit: dict[int, list[tuple[int, pulp.LpVariable]]] = {}
    for (q, j), var in x.items():
        by_unit.setdefault(q, []).append((j, var))
    for opts in by_unit.values():
        prob += pulp.lpSum(v for _, v in opts) == 1
    for j in range(inst.k):
        on_j = [x[q, j] for q in range(inst.n) if (q, j) in x]
        if on_j and inst.in_a[j]:
            prob += pulp.lpSum(on_j) <= int(upper[j])
    stay = [(q, x[q, int(inst.current[q])]) for q in range(inst.n)
            if inst.current[q] >= 0 and q not in fixed and (q, int(inst.current[q])) in x]
    moved = [(q, None) for q in range(inst.n) if inst.current[q] >= 0 and q not in fixed
             and (q, int(inst.current[q])) not in x]
    on_b = [q for q in range(inst.n) if inst.current[q] >= 0 and not inst.in_a[inst.current[q]]]
    must_stay = len(on_b) - drainable([float(inst.migration_cost[q]) for q in on_b], budget)
    staying_on_b = [x[q, int(inst.current[q])] for q in on_b if (q, int(inst.current[q])) in x]
    if staying_on_b:  # drain B first: only what the budget cannot move stays
        prob += pulp.lpSum(staying_on_b) <= must_stay
    drain_note = (f"; {must_stay} unit(s) stay on nodes marked for removal: the budget cannot "
                  "move more" if must_stay else "")
    if budget.max_migrations is not None:
        prob += pulp.lpSum(1 - v for _, v in stay) + len(moved) <= budget.max_migrations
    if budget.max_migration_cost is not None:
        prob += (pulp.lpSum(float(inst.migration_cost[q]) * (1 - v) for q, v in stay)
                 + sum(float(inst.migration_cost[q]) for q, _ in moved)
                 <= budget.max_migration_cost)
    warm: dict[pulp.LpVariable, float] = {v: 0.0 for v in x.values()}
    warm.update({v: 0.0 for v in z.values()})
    for q in range(inst.n):
        j = int(start[q])
        if (q, j) in x:
            warm[x[q, j]] = 1.0
            for s in inst.sources_of(q).tolist():
                warm[z[s, j]] = 1.0
    ids = inst.node_ids
    choices = {inst.unit_ids[q]: [(ids[j], v) for j, v in opts] for q, opts in by_unit.items()}
    limit = max(MIN_SOLVE_S, params.time_limit_s - (time.perf_counter() - started))
    base = {u: ids[int(j)] for u, j in zip(inst.unit_ids, start, strict=True)}
    t0 = time.perf_counter()
    solved = solve_problem(prob, choices, warm, "highs", limit, params.gap_rel, base)
    phases.append(Phase("solve", time.perf_counter() - t0, solved.kind))
    bound = cap_bound
    if solved.objective_bound is not None and math.isfinite(solved.objective_bound):
        bound = max(bound, float(solved.objective_bound))
    if solved.assignment is None:
        return done(start, SolverStatus.TIME_LIMITED, bound,
                    f"HiGHS: {solved.kind}; IC's plan kept{drain_note}")
    index = {nd: j for j, nd in enumerate(ids)}
    node = np.array([index[solved.assignment[u]] for u in inst.unit_ids], dtype=np.int64)
    if traffic_arrays(inst, node) > traffic_arrays(inst, start) + 1e-9:
        node = start
    traffic = traffic_arrays(inst, node)
    optimal = solved.kind == "optimal" or traffic <= bound + 1e-6 * max(1.0, traffic)
    if optimal:
        bound = max(bound, traffic) if solved.kind == "optimal" else bound
    return done(node, SolverStatus.OPTIMAL if optimal else SolverStatus.TIME_LIMITED,
                min(bound, traffic), f"HiGHS: {solved.kind}, {len(x)} x, {len(z)} z{drain_note}")
