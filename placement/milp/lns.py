"""Large-neighbourhood search (LNS) over the paper's MILP (§4.3.1), for models too big to solve.

The full MILP has |movers| × |A| binaries x_{i,k} (72 000 at 60 nodes × 1 200 key groups) and a
highly symmetric optimum (many key groups of nearly equal gLoad_k), so HiGHS rarely improves a
good warm start on it within seconds. The search below instead re-optimises a few nodes at a
time, exactly (each sub-MILP is solved to optimality or to its small time cap):

1. *Neighbourhood* H: nodes of B still holding load, the k most over-loaded and the k most
   under-loaded nodes of A (by load_i − mean in the incumbent), up to k *linked* nodes of A
   (holding key groups moved away from those, or home to key groups they hold, least deviating
   first: a migration can then be undone or re-routed), plus random nodes of A after
   unsuccessful steps (more the longer the stall). k is chosen so that a sub-MILP has about
   `LNS_VARS` binaries.
2. *Sub-MILP*: the key groups on H may move among H (never onto B: Lemma 1) or back to their
   current node q_k; every other key group is fixed. Constraints (1), (2) (the budget left after
   the fixed key groups' moves), (3) and (4) for the nodes of H, and the resource caps; a home
   node q_k outside H may not end up further from `mean` than it is now (or than the floor).
   Objective: w1·d_H + w_b·Σ_{n_i∈B∩H} load_i + w_m·(moves), with d_H ≥ γ·c, where c is the
   largest deviation outside H. The floor γ·c stops a step from spending the migration budget
   on polishing H far below the rest of the cluster; w_m (tiny) picks, among equally good
   sub-plans, the one with the fewest migrations, which leaves budget for later steps.
3. *Acceptance* of the sub-plan when it is valid for the full model and strictly better in
   (objective of the paper's MILP, the node deviations sorted in decreasing order): the second
   key lets the search cross plateaus where many nodes share the worst deviation and no single
   step can lower d itself. Every accepted step strictly lowers that key, so the search
   terminates; it stops when the plan is certified optimal, after `LNS_STALL` unsuccessful
   steps in a row, or when its budget is spent. On a work budget (the default: placement/
   determinism.py) the budget is a count, `lns_steps` sub-MILPs of at most `LNS_SUB_WORK`
   HiGHS checkpoints and nodes each, so the search is the same on a busy machine as on a
   quiet one and the deadline is only a safety net; without a work budget it is the clock
   (the deadline, and `LNS_STEP_S` per sub-MILP), as before.

This is a heuristic search over the exact model: it claims optimality only through the
certified lower bound (`milp/bounds.py`) or the full model's dual bound (`milp/core.py`).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pulp

from placement.common import EPS, MIN_SOLVE_S
from placement.determinism import clock_cut, work_budgeted
from placement.metrics import mean_load
from placement.milp.model import Weights, objective, valid
from placement.mip import solve_problem
from placement.model import Budget, ClusterState, KeyGroup

__all__ = ["LNS_STALL", "LNS_VARS", "Ctx", "search"]

LNS_VARS = 600  # target number of binaries of one sub-MILP
LNS_STEP_S = 0.4  # time cap of one sub-MILP solve (clock-limited calls only)
#: HiGHS work budget (checkpoints, nodes) of one sub-MILP on a work budget (`lns_steps` > 0):
#: (10, 50) improved no step on the benchmark sizes (docs/algorithms.md, "Deterministic plans")
LNS_SUB_WORK = (40, 200)
LNS_STALL = 12  # unsuccessful steps in a row before the search gives up
FLOOR = 0.9  # γ: a step aims at d_H ≤ γ·(largest deviation outside H), not lower
MOVE_WEIGHT = 1e-3  # w_m = MOVE_WEIGHT · w1 · (mean gLoad_k): the tie-break on migrations
SUB_GAP = 1e-3  # relative MIP gap of a sub-MILP (it needs a good step, not a proof)
#: HiGHS options of a sub-MILP: more primal heuristics (default effort 0.05), since a step
#: needs a better incumbent quickly, not a proof
SUB_HIGHS_OPTIONS: dict[str, float] = {"mip_heuristic_effort": 0.3}


@dataclass(frozen=True)
class Ctx:
    """What every solve of one planning call shares."""

    state: ClusterState
    budget: Budget
    caps: Mapping[str, float]
    weights: Weights
    solver: str
    gap_rel: float
    deadline: float

    def left(self) -> float:
        return self.deadline - time.perf_counter()


def node_raw(state: ClusterState, assignment: Mapping[str, str]) -> dict[str, float]:
    """Σ gLoad_k per node (not divided by capacity)."""
    raw = {n.id: 0.0 for n in state.nodes}
    for kg in state.keygroups:
        raw[assignment[kg.id]] += kg.load
    return raw


def badness(state: ClusterState, raw: Mapping[str, float], mean: float) -> dict[str, float]:
    """Each node's deviation in the MILP's sense: |load_i − mean| on A, (load_i − mean)⁺ on B."""
    out = {}
    for n in state.nodes:
        dev = raw[n.id] / n.capacity - mean
        out[n.id] = max(dev, 0.0) if n.marked_for_removal else abs(dev)
    return out


def _key(ctx: Ctx, assignment: Mapping[str, str], mean: float) -> tuple[float, list[float]]:
    devs = badness(ctx.state, node_raw(ctx.state, assignment), mean)
    return objective(ctx.state, assignment, ctx.weights), sorted(devs.values(), reverse=True)


def _smaller(new: tuple[float, list[float]], old: tuple[float, list[float]]) -> bool:
    """(objective, sorted deviations) lexicographically smaller, with a tolerance."""
    if new[0] < old[0] - 1e-12:
        return True
    if new[0] > old[0] + 1e-12:
        return False
    for a, b in zip(new[1], old[1], strict=True):
        if a < b - EPS:
            return True
        if a > b + EPS:
            return False
    return False


def _hood(ctx: Ctx, incumbent: Mapping[str, str], raw: Mapping[str, float], mean: float,
          k: int, extra: int, rng: random.Random) -> list[str]:
    """B nodes with load, the k most over- and under-loaded nodes of A, linked and random ones.

    Linked: the nodes of A that hold key groups moved away from a chosen node, and the nodes
    whose key groups a chosen node holds (so that a migration can be undone, or re-routed, and
    its budget spent where it helps more); at most k of them, the least deviating (most slack)
    first.
    """
    state = ctx.state
    dev = {n.id: raw[n.id] / n.capacity - mean for n in state.nodes}
    b_busy = sorted((n.id for n in state.nodes if n.marked_for_removal and raw[n.id] > 0),
                    key=lambda nid: (-raw[nid], nid))
    a_ids = [n.id for n in state.nodes if not n.marked_for_removal]
    over = sorted(a_ids, key=lambda nid: (-dev[nid], nid))[:k]
    under = sorted(a_ids, key=lambda nid: (dev[nid], nid))[:k]
    chosen = list(dict.fromkeys(b_busy[:k] + over + under))
    taken = set(chosen)
    linked: set[str] = set()
    for kg in state.keygroups:
        home, now = state.assignment[kg.id], incumbent[kg.id]
        if home != now and (home in taken) != (now in taken):
            linked.add(now if home in taken else home)
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    linked -= marked
    chosen += sorted(linked, key=lambda nid: (abs(dev[nid]), nid))[:k]
    taken = set(chosen)
    others = [nid for nid in a_ids if nid not in taken]
    return chosen + rng.sample(others, min(len(others), extra))


def _sub_model(ctx: Ctx, incumbent: Mapping[str, str], raw: Mapping[str, float], mean: float,
               hood: list[str], movable: Callable[[KeyGroup], bool]
               ) -> tuple[pulp.LpProblem, dict[str, list[tuple[str, pulp.LpVariable]]],
                          dict[pulp.LpVariable, float]] | None:
    """The sub-MILP over `hood` (module docstring, step 2), with its warm start (= incumbent)."""
    state, budget, w = ctx.state, ctx.budget, ctx.weights
    node = {n.id: n for n in state.nodes}
    in_hood = set(hood)
    movers = [kg for kg in state.keygroups if incumbent[kg.id] in in_hood and movable(kg)]
    if not movers:
        return None
    mover_ids = {kg.id for kg in movers}
    fixed_moves, fixed_cost = 0, 0.0
    for kg in state.keygroups:
        if kg.id not in mover_ids and incumbent[kg.id] != state.assignment[kg.id]:
            fixed_moves, fixed_cost = fixed_moves + 1, fixed_cost + kg.migration_cost
    homes = [h for h in dict.fromkeys(state.assignment[kg.id] for kg in movers)
             if h not in in_hood]
    bad = badness(state, raw, mean)
    outside = max((v for nid, v in bad.items() if nid not in in_hood), default=0.0)
    floor = FLOOR * outside
    fixed = {nid: raw[nid] for nid in [*hood, *homes]}
    fixed_res: dict[tuple[str, str], float] = {}
    for kg in movers:
        fixed[incumbent[kg.id]] -= kg.load
    if ctx.caps:
        for kg in state.keygroups:
            where = incumbent[kg.id]
            if where in fixed and kg.id not in mover_ids:
                for res in ctx.caps:
                    fixed_res[where, res] = fixed_res.get((where, res), 0.0) + kg.loads.get(
                        res, 0.0)
    prob = pulp.LpProblem("lns", pulp.LpMinimize)
    d_h = prob.add_variable("d_H", lowBound=floor)
    targets = [nid for nid in hood if not node[nid].marked_for_removal]
    column: dict[str, dict[pulp.LpVariable, float]] = {nid: {} for nid in fixed}
    column_res: dict[tuple[str, str], dict[pulp.LpVariable, float]] = {}
    stay: dict[pulp.LpVariable, float] = {}
    stay_cost: dict[pulp.LpVariable, float] = {}
    choices: dict[str, list[tuple[str, pulp.LpVariable]]] = {}
    warm: dict[pulp.LpVariable, float] = {}
    goal: dict[pulp.LpVariable, float] = {d_h: w.w1}
    w_m = MOVE_WEIGHT * w.w1 * sum(kg.load for kg in state.keygroups) / len(state.keygroups)
    for j, kg in enumerate(movers):
        home = state.assignment[kg.id]
        row: dict[pulp.LpVariable, float] = {}
        options = choices[kg.id] = []
        for nid in dict.fromkeys([home, incumbent[kg.id], *targets]):
            var = prob.add_variable(f"x_{j}_{nid}", cat=pulp.LpBinary)
            row[var] = 1.0
            options.append((nid, var))
            warm[var] = float(incumbent[kg.id] == nid)
            column[nid][var] = kg.load / node[nid].capacity
            for res in ctx.caps:
                column_res.setdefault((nid, res), {})[var] = kg.loads.get(res, 0.0)
            if node[nid].marked_for_removal and w.w_b:
                goal[var] = w.w_b * kg.load
        home_var = options[0][1]
        stay[home_var], stay_cost[home_var] = 1.0, kg.migration_cost
        goal[home_var] = goal.get(home_var, 0.0) - w_m
        prob.addConstraint(pulp.LpConstraint(row, pulp.LpConstraintEQ, f"c1_{j}", 1.0))  # (1)
    if budget.max_migrations is not None:  # (2), count, with the fixed key groups' moves
        prob.addConstraint(pulp.LpConstraint(stay, pulp.LpConstraintGE, "c2_count", float(
            len(movers) - (budget.max_migrations - fixed_moves))))
    if budget.max_migration_cost is not None:  # (2), cost
        prob.addConstraint(pulp.LpConstraint(stay_cost, pulp.LpConstraintGE, "c2_cost", sum(
            kg.migration_cost for kg in movers) - (budget.max_migration_cost + EPS - fixed_cost)))
    for nid, base in fixed.items():
        n = node[nid]
        rest = base / n.capacity
        if nid in in_hood:
            upper = {**column[nid], d_h: -1.0}  # (3): load_i ≤ mean + d_H
            prob.addConstraint(pulp.LpConstraint(upper, pulp.LpConstraintLE, f"c3_{nid}",
                                                 mean - rest))
            if not n.marked_for_removal:  # (4): load_i ≥ mean − d_H, A only
                lower = {**column[nid], d_h: 1.0}
                prob.addConstraint(pulp.LpConstraint(lower, pulp.LpConstraintGE, f"c4_{nid}",
                                                     mean - rest))
        else:  # a home outside H: no further from mean than now (or than the floor)
            prob.addConstraint(pulp.LpConstraint(column[nid], pulp.LpConstraintLE, f"c3_{nid}",
                                                 mean + max(bad[nid], floor) - rest + EPS))
        for res, cap in ctx.caps.items():  # (R)
            if (nid, res) in column_res:
                prob.addConstraint(pulp.LpConstraint(
                    column_res[nid, res], pulp.LpConstraintLE, f"cR_{res}_{nid}",
                    cap * n.capacity - fixed_res.get((nid, res), 0.0)))
    prob.setObjective(pulp.LpAffineExpression(goal))
    local = max((bad[nid] for nid in hood), default=0.0)
    warm[d_h] = max(local, floor)
    return prob, choices, warm


def search(ctx: Ctx, movable: Callable[[KeyGroup], bool], incumbent: dict[str, str], seed: int,
           done: Callable[[Mapping[str, str]], bool], max_steps: int
           ) -> tuple[dict[str, str], str]:
    """Run the LNS from `incumbent` (valid for the full model); return the best plan found and
    what the search did (the outcome of the plan's "neighbourhood search" phase). On a work
    budget it runs at most `max_steps` sub-MILPs (module docstring)."""
    state = ctx.state
    mean = mean_load(state)
    per_node = len(state.keygroups) / len(state.nodes)
    k = max(2, int(math.sqrt(LNS_VARS / max(per_node, 1.0)) / 2))
    rng = random.Random(seed)
    best_key = _key(ctx, incumbent, mean)
    stall = steps = accepted = 0
    budgeted = work_budgeted()
    steps_left = max_steps if budgeted else math.inf
    while (stall < LNS_STALL and steps < steps_left and ctx.left() > MIN_SOLVE_S
           and not done(incumbent)):
        raw = node_raw(state, incumbent)
        hood = _hood(ctx, incumbent, raw, mean, k, extra=2 * stall, rng=rng)
        built = _sub_model(ctx, incumbent, raw, mean, hood, movable)
        steps += 1
        if built is None:
            stall += 1
            continue
        prob, choices, warm = built
        limit = max(MIN_SOLVE_S, ctx.left() if budgeted else min(LNS_STEP_S, ctx.left()))
        solved = solve_problem(prob, choices, warm, ctx.solver, limit,
                               max(ctx.gap_rel, SUB_GAP), incumbent, SUB_HIGHS_OPTIONS,
                               caps=LNS_SUB_WORK if budgeted else None)
        new = solved.assignment
        if new is not None and valid(state, ctx.budget, new, ctx.caps):
            key = _key(ctx, new, mean)
            if _smaller(key, best_key):
                incumbent, best_key, stall = new, key, 0
                accepted += 1
                continue
        stall += 1
    if stall < LNS_STALL and steps < steps_left and not done(incumbent):  # ended on the clock
        clock_cut("the neighbourhood search")
    return incumbent, f"{steps} sub-MILPs of {2 * k}+ nodes, {accepted} improved"
