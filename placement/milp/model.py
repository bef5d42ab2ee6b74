"""The paper's MILP (§4.3.1) as a PuLP model, and one solve of it (HiGHS or CBC).

Symbols (paper Table 2): N = A ∪ B nodes (B = marked for removal), G key groups, q_{i,k} the
current allocation, x_{i,k} the new one, gLoad_k a key group's load, mc_k its migration cost,
mean = Σ_k gLoad_k / Σ_{i∈A} cap_i (no ceil, see metrics.py), d the load distance, d_u / d_l
the slack of the upper / lower bound. Heterogeneous nodes: gLoad_k is divided by cap_i in (3),
(4), i.e. node loads are utilisations.

    min  w1·d − w2·(d_u + d_l) + w_b·Σ_{n_i∈B} load_i           (w1 ≫ w_b ≫ w2)
    (1)  ∀g_k∈G:          Σ_{n_i∈N} x_{i,k} = 1
    (2)  Σ_i Σ_k (1 − q_{i,k})·x_{i,k}·mc_k ≤ maxMigrCost      (cost budget)
         Σ_i Σ_k (1 − q_{i,k})·x_{i,k}      ≤ max_migrations   (count budget)
    (3)  ∀n_i∈N:          Σ_k x_{i,k}·gLoad_k/cap_i ≤ mean + (d − d_u)
    (4)  ∀n_i∈A:          Σ_k x_{i,k}·gLoad_k/cap_i ≥ mean − (d − d_l)
    (5)  mean − d ≥ 0                 (d's upper bound; relaxed where it cannot hold, milp/core.py)
    (R)  ∀n_i∈N, r∈caps:  Σ_k x_{i,k}·load_k[r] ≤ caps[r]·cap_i   (multi-dimensional load)
    (T)  the job's topology constraints (placement/milp/topology.py), when it has some
    d, d_u, d_l ≥ 0

The w_b term is the second half of the paper's stated objective ("minimize max |load_i − mean|
and Σ_{n_i∈B} load_i"), which its MILP leaves to Lemma 4.2. With whole key groups that lemma
can fail: 7 equal key groups, A = 2 nodes × 3, one on B: d = 0.5 whether or not it moves, and
the d_u term prefers keeping it on B. w_b (≫ w2) breaks such ties towards draining B; w_b = 0
gives the paper's objective exactly.

Exact reductions (the optimum is unchanged): a key group whose mc_k exceeds maxMigrCost gets no
variable (its x is forced to q); the budget (2) is written as Σ_k x_{q_k,k} ≥ |movers| − M, which
(1) makes equal to the paper's form. Lemma 1 reduction: no x_{i,k} for i ∈ B unless q_{i,k} = 1
(no move into B); the tests check on enumerated instances that this never changes the optimum.
The neighbourhood search ("auto" on big models, `milp/lns.py`) is a heuristic over this model
and is reported as such: OPTIMAL only through a certified bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulp

from placement.common import EPS, fits
from placement.constraints import amounts, raised
from placement.metrics import mean_load
from placement.milp.topology import Aux, add_topology, topology_weight
from placement.mip import Solved, solve_problem
from placement.model import Budget, ClusterState, KeyGroup


@dataclass(frozen=True)
class Weights:
    """Objective weights: w1 on d, w2 on the slacks d_u + d_l, w_b on the load left on B."""

    w1: float
    w2: float
    w_b: float


@dataclass(frozen=True)
class Built:
    """A built model: x_{i,k} per (key group, node), d, d_u, d_l, and each mover's options."""

    prob: pulp.LpProblem
    x: dict[tuple[str, str], pulp.LpVariable]
    d: pulp.LpVariable
    d_u: pulp.LpVariable
    d_l: pulp.LpVariable
    choices: dict[str, list[tuple[str, pulp.LpVariable]]]
    #: the topology rows' auxiliary variables for an assignment (None: no constraints)
    aux: Aux | None = None


def build(state: ClusterState, budget: Budget, movers: list[KeyGroup], targets: list[str],
          base: Mapping[str, str], weights: Weights, resource_caps: Mapping[str, float],
          *, five: bool = True) -> Built:
    """The MILP above over `movers` × (`targets` ∪ {q_k, base_k}).

    Every other key group is a constant at its `base` node (base = q for the full model); the
    moves such constants already carry (base ≠ q) are charged to the budget up front.
    `five=False` drops (5): d is then only minimised, not capped at mean.
    """
    mean = mean_load(state)
    prob = pulp.LpProblem("load_balance", pulp.LpMinimize)
    d = prob.add_variable("d", lowBound=0, upBound=mean if five else None)  # (5): mean − d ≥ 0
    d_u = prob.add_variable("d_u", lowBound=0)
    d_l = prob.add_variable("d_l", lowBound=0)
    cap = {n.id: n.capacity for n in state.nodes}
    mover_ids = {k.id for k in movers}
    fixed = {n.id: 0.0 for n in state.nodes}
    fixed_res: dict[tuple[str, str], float] = {}
    fixed_moves, fixed_cost = 0, 0.0
    for kg in state.keygroups:
        if kg.id in mover_ids:
            continue
        node = base[kg.id]
        fixed[node] += kg.load
        if node != state.assignment[kg.id]:
            fixed_moves, fixed_cost = fixed_moves + 1, fixed_cost + kg.migration_cost
        for res in resource_caps:
            fixed_res[node, res] = fixed_res.get((node, res), 0.0) + kg.loads.get(res, 0.0)
    x: dict[tuple[str, str], pulp.LpVariable] = {}
    column: dict[str, dict[pulp.LpVariable, float]] = {n.id: {} for n in state.nodes}
    column_res: dict[tuple[str, str], dict[pulp.LpVariable, float]] = {
        (n.id, res): {} for n in state.nodes for res in resource_caps}
    stay: dict[pulp.LpVariable, float] = {}
    stay_cost: dict[pulp.LpVariable, float] = {}
    choices: dict[str, list[tuple[str, pulp.LpVariable]]] = {}
    for j, kg in enumerate(movers):
        home = state.assignment[kg.id]
        row: dict[pulp.LpVariable, float] = {}
        options = choices[kg.id] = []
        for node in dict.fromkeys([home, base[kg.id], *targets]):
            var = prob.add_variable(f"x_{j}_{node}", cat=pulp.LpBinary)
            x[kg.id, node] = var
            row[var] = 1.0
            options.append((node, var))
            column[node][var] = kg.load / cap[node]
            for res in resource_caps:
                column_res[node, res][var] = kg.loads.get(res, 0.0)
        stay[x[kg.id, home]] = 1.0
        stay_cost[x[kg.id, home]] = kg.migration_cost
        prob.addConstraint(pulp.LpConstraint(row, pulp.LpConstraintEQ, f"c1_{j}", 1.0))  # (1)
    if budget.max_migrations is not None:  # (2), count: Σ_k (1 − x_{q_k,k}) ≤ M
        prob.addConstraint(pulp.LpConstraint(
            stay, pulp.LpConstraintGE, "c2_count",
            float(len(movers) - (budget.max_migrations - fixed_moves))))
    if budget.max_migration_cost is not None:  # (2), cost: Σ_k mc_k·(1 − x_{q_k,k}) ≤ C
        total = sum(k.migration_cost for k in movers)
        prob.addConstraint(pulp.LpConstraint(
            stay_cost, pulp.LpConstraintGE, "c2_cost",
            total - (budget.max_migration_cost + EPS - fixed_cost)))
    for n in state.nodes:
        rest = fixed[n.id] / n.capacity
        upper = dict(column[n.id])
        upper[d], upper[d_u] = -1.0, 1.0
        prob.addConstraint(pulp.LpConstraint(  # (3): load_i ≤ mean + d − d_u, all of N
            upper, pulp.LpConstraintLE, f"c3_{n.id}", mean - rest))
        if not n.marked_for_removal:
            lower = dict(column[n.id])
            lower[d], lower[d_l] = 1.0, -1.0
            prob.addConstraint(pulp.LpConstraint(  # (4): load_i ≥ mean − d + d_l, A only
                lower, pulp.LpConstraintGE, f"c4_{n.id}", mean - rest))
        for res, res_cap in resource_caps.items():  # (R): non-bottleneck resources
            prob.addConstraint(pulp.LpConstraint(
                column_res[n.id, res], pulp.LpConstraintLE, f"cR_{res}_{n.id}",
                res_cap * n.capacity - fixed_res.get((n.id, res), 0.0)))
    goal = {d: weights.w1, d_u: -weights.w2, d_l: -weights.w2}
    if weights.w_b:
        for n in state.nodes:
            if n.marked_for_removal:
                for var, util in column[n.id].items():
                    goal[var] = weights.w_b * util * n.capacity
    aux = None
    if state.constraints:  # (T), and w_T·(summed violation) in the objective
        aux, penalty = add_topology(prob, state, x, mover_ids, base)
        w_t = topology_weight(state, weights.w1, weights.w2, weights.w_b)
        for var, coef in penalty.items():
            goal[var] = goal.get(var, 0.0) + w_t * coef
    prob.setObjective(pulp.LpAffineExpression(goal))
    return Built(prob, x, d, d_u, d_l, choices, aux)


def _distances(state: ClusterState, assignment: Mapping[str, str]
               ) -> tuple[dict[str, float], float, float, float]:
    """(raw node loads, the largest excess over mean (3), the largest shortfall below it over A
    (4), and d = the smallest load distance both admit)."""
    mean = mean_load(state)
    raw = {n.id: 0.0 for n in state.nodes}
    for kg in state.keygroups:
        raw[assignment[kg.id]] += kg.load
    up = max(raw[n.id] / n.capacity - mean for n in state.nodes)
    low = max(mean - raw[n.id] / n.capacity for n in state.nodes if not n.marked_for_removal)
    return raw, up, low, max(up, low, 0.0)


def warm_values(state: ClusterState, built: Built, start: Mapping[str, str]
                 ) -> dict[pulp.LpVariable, float]:
    """x = the start allocation, d / d_u / d_l the tightest values it admits."""
    values = {var: float(start[kg] == node) for (kg, node), var in built.x.items()}
    _, up, low, d = _distances(state, start)
    values.update({built.d: d, built.d_u: d - up, built.d_l: d - low})
    if built.aux is not None:
        values.update(built.aux(start))
    return values


def solve(state: ClusterState, built: Built, solver: str, limit_s: float, gap_rel: float,
          start: Mapping[str, str]) -> Solved:
    """Solve a built model warm-started from `start` (d, d_u, d_l at their tightest)."""
    return solve_problem(built.prob, built.choices, warm_values(state, built, start), solver,
                         limit_s, gap_rel, start)


def objective(state: ClusterState, assignment: Mapping[str, str], weights: Weights) -> float:
    """The MILP objective of an assignment with d, d_u, d_l at their best values."""
    raw, up, low, d = _distances(state, assignment)
    on_b = sum(raw[n.id] for n in state.nodes if n.marked_for_removal)
    value = weights.w1 * d - weights.w2 * ((d - up) + (d - low)) + weights.w_b * on_b
    if state.constraints:  # (T): the summed violation, weighted by w_T
        value += (topology_weight(state, weights.w1, weights.w2, weights.w_b)
                  * sum(amounts(state, assignment).values()))
    return value


def caps_violation(state: ClusterState, assignment: Mapping[str, str],
                   resource_caps: Mapping[str, float]) -> str:
    """'' if every node respects every resource cap, else which node and resource do not."""
    use: dict[tuple[str, str], float] = {}
    for kg in state.keygroups:
        for res in resource_caps:
            key = (assignment[kg.id], res)
            use[key] = use.get(key, 0.0) + kg.loads.get(res, 0.0)
    for n in state.nodes:
        for res, cap in resource_caps.items():
            if use.get((n.id, res), 0.0) > cap * n.capacity + 1e-7:
                return f"node {n.id!r} uses {use[n.id, res]:.6g} of {res!r} > cap {cap:.6g}"
    return ""


def valid(state: ClusterState, budget: Budget, new: Mapping[str, str],
           resource_caps: Mapping[str, float]) -> bool:
    moved = [k for k in state.keygroups if new[k.id] != state.assignment[k.id]]
    in_b = {n.id for n in state.nodes if n.marked_for_removal}
    return (fits(budget, len(moved), sum(k.migration_cost for k in moved))
            and not any(new[k.id] in in_b for k in moved)
            and not caps_violation(state, new, resource_caps)
            and not (state.constraints and raised(state, new)))


