"""ROD, LLF and Connected-LB as reconf strategies: a target placement, kept in place where it
can be, then moved toward under the migration budget.

1. Target: ROD (Fig. 10, placement/rod/algorithm.py; §6.1 from the streams' min_rate; §6.3
   clustering on request), or LLF / Connected-LB at the observed rates (§7.2), onto the nodes
   of A (a node marked for removal takes nothing).
2. Relabel: a target plan is a partition into bins; bins of equal capacity are interchangeable,
   so each capacity class's bins are matched to its nodes by a maximum-weight matching
   (`scipy.optimize.linear_sum_assignment`) keeping the most migration cost in place (a unit
   kept counts mc_k + ε, so with mc = 0 the most units stay).
3. Budget: if the moves to the target exceed it, they are applied greedily by resilience gain
   per migration cost (moves off nodes of B first, then moves costing 0): the gain is the drop of the weight energy
   E = Σ_i (C_i/C_T)·‖W_i‖⁴, a smooth stand-in for the min plane distance (its minimum, d², is
   exactly the ideal W = 1 of Theorem 1: Jensen twice), since a single move rarely changes the
   min of r; moves that do not lower E are skipped. Arrivals take their target node (no move).
   LLF and Connected-LB order their moves by the same energy in the space of the units' loads
   at the observed rates (`balance_space`): load balance, their own goal, not ROD's.
Status HEURISTIC; no lower bound.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from placement.common import EPS, fits, is_frozen, make_plan
from placement.model import Budget, ClusterState, Plan, SolverStatus
from placement.params import StrategyParams
from placement.rod.algorithm import rod_assign
from placement.rod.baselines import connected_lb, llf
from placement.rod.clustering import clustered_rod
from placement.rod.model import LoadModel, weights
from placement.rod.params import RodParams
from placement.rod.resilience import plan_resilience

__all__ = ["balance_space", "budgeted", "neighbours", "plan_connected_lb", "plan_llf", "plan_rod", "relabel"]

Array = NDArray[np.float64]
Bins = NDArray[np.int64]


def neighbours(state: ClusterState, model: LoadModel) -> list[list[int]]:
    """Each unit's arc partners (undirected) from the communication facet."""
    index = {u: j for j, u in enumerate(model.units)}
    near: list[set[int]] = [set() for _ in model.units]
    for e in state.edges:
        if e.src != e.dst:
            near[index[e.src]].add(index[e.dst])
            near[index[e.dst]].add(index[e.src])
    return [sorted(s) for s in near]


def relabel(state: ClusterState, model: LoadModel, bins: Bins) -> dict[str, str]:
    """Step 2: bins onto nodes, per capacity class, keeping the most migration cost in place."""
    from scipy.optimize import linear_sum_assignment

    mc = {k.id: k.migration_cost for k in state.keygroups}
    eps = (min((c for c in mc.values() if c > 0), default=1.0)) / (len(mc) + 1)
    node_of = {u: model.nodes[b] for u, b in zip(model.units, bins, strict=True)}
    a_nodes = [n for n in state.nodes if not n.marked_for_removal]
    rename: dict[str, str] = {}
    for cap in sorted({n.capacity for n in a_nodes}):
        group = [n.id for n in a_nodes if n.capacity == cap]
        keep = np.zeros((len(group), len(group)))
        col = {n: i for i, n in enumerate(group)}
        for u, target in node_of.items():
            now = state.assignment.get(u)
            if target in col and now in col:
                keep[col[target], col[now]] += mc[u] + eps
        rows, cols = linear_sum_assignment(keep, maximize=True)
        rename.update({group[r]: group[c] for r, c in zip(rows, cols, strict=True)})
    return {u: rename.get(n, n) for u, n in node_of.items()}


def balance_space(model: LoadModel) -> Array:
    """The units' loads at the observed rates R as shares of the total (m × 1): in this space
    the weight energy is lowest when every node's load is proportional to its capacity, so
    `budgeted` on it orders LLF's and Connected-LB's moves by load balance, their own goal."""
    load = model.coefficients @ model.rates
    total = float(load.sum())
    return (load / total)[:, None] if total > 0 else model.normalised()


def budgeted(state: ClusterState, model: LoadModel, target: Mapping[str, str],
             budget: Budget, space: Array | None = None) -> tuple[dict[str, str], int]:
    """Step 3: the assignment reached under `budget`, and how many target moves were left.
    `space`: the unit vectors whose weight energy orders the moves (ROD's normalised
    coefficients by default; `balance_space` for the load balancers)."""
    out = {u: state.assignment.get(u, target[u]) for u in model.units}
    mc = {k.id: k.migration_cost for k in state.keygroups}
    todo = [u for u in model.units if out[u] != target[u]]
    if fits(budget, len(todo), sum(mc[u] for u in todo)):
        return dict(target), 0
    if is_frozen(budget):
        return out, len(todo)
    index = {n: i for i, n in enumerate(model.nodes)}
    unit = {u: j for j, u in enumerate(model.units)}
    norm, share = model.normalised() if space is None else space, model.share()
    w = weights(norm, model.bins(out), share)
    src = np.array([index[out[u]] for u in todo])
    dst = np.array([index[target[u]] for u in todo])
    vec = norm[[unit[u] for u in todo]]
    costs = np.array([mc[u] for u in todo], dtype=float)
    alive = np.ones(len(todo), dtype=bool)
    order = np.arange(len(todo))
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    off_b = np.array([out[u] in marked for u in todo], dtype=bool)  # drained first, gain or not
    count, cost = 0, 0.0
    while np.any(alive):
        before = share[src] * _quartic(w[src]) + share[dst] * _quartic(w[dst])
        after = (share[src] * _quartic(w[src] - vec / share[src, None])
                 + share[dst] * _quartic(w[dst] + vec / share[dst, None]))
        gain = before - after
        ok = alive & ((gain > 1e-15) | off_b)
        if budget.max_migrations is not None and count + 1 > budget.max_migrations:
            break
        if budget.max_migration_cost is not None:
            ok &= cost + costs <= budget.max_migration_cost + EPS
        if not np.any(ok):
            break
        free = costs <= 0  # free moves first, then the best gain per unit of cost
        with np.errstate(over="ignore"):  # a denormal cost: an infinite ratio, taken first
            score = np.where(free, gain, gain / np.where(free, 1.0, costs))
        cand = np.flatnonzero(ok)
        pick = int(cand[np.lexsort((order[cand], -score[cand], ~free[cand], ~off_b[cand]))[0]])
        w[src[pick]] -= vec[pick] / share[src[pick]]
        w[dst[pick]] += vec[pick] / share[dst[pick]]
        out[todo[pick]] = target[todo[pick]]
        alive[pick] = False
        count, cost = count + 1, cost + float(costs[pick])
        src[pick] = dst[pick]  # a done move is a no-op from now on
    return out, int(alive.sum())


def _quartic(w: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(np.einsum("ij,ij->i", w, w) ** 2, dtype=np.float64)


def _finish(name: str, state: ClusterState, model: LoadModel, bins: Bins, budget: Budget,
            note: str = "", *, space: Array | None, never_worse: bool = False) -> Plan:
    """The plan that reaches the target `bins` of the algorithm `name` (the paper's name, for
    the message) under the budget, its moves ordered by the weight energy in `space` (None:
    ROD's own normalised space)."""
    target = relabel(state, model, bins)
    assignment, left = budgeted(state, model, target, budget, space)
    message = note
    if left:
        message = f"{note}; " if note else ""
        message += f"{left} move(s) toward the {name} target left out by the budget"
    draining = {n.id for n in state.nodes if n.marked_for_removal} & set(state.assignment.values())
    if (never_worse and not state.arrivals and not draining
            and assignment != dict(state.assignment)):
        now, then = _ratio(state, state.assignment), _ratio(state, assignment)
        if then <= now:  # ROD is a heuristic: its target can be less resilient than today's
            assignment = dict(state.assignment)
            message = (f"the {name} placement's feasible-set ratio {then:.3f} is not above the "
                       f"current placement's {now:.3f}: units stay where they are")
    return make_plan(state, assignment, status=SolverStatus.HEURISTIC, lower_bound=None,
                     message=message)


def _ratio(state: ClusterState, assignment: Mapping[str, str]) -> float:
    """F/F* of `assignment`, as every plan reports it (placement/rod/resilience.py)."""
    return plan_resilience(state, assignment).get("feasible_set_ratio", 0.0)


def _allowed(state: ClusterState, model: LoadModel) -> NDArray[np.bool_]:
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    return np.array([n not in marked for n in model.nodes])


def plan_rod(state: ClusterState, budget: Budget, params: RodParams) -> Plan:
    """ROD's resilient placement (Xing et al. 2006 Fig. 10), reached under the budget."""
    model = LoadModel.of(state)
    allowed = _allowed(state, model)
    act = model.active
    coef, norm = model.coefficients[:, act], model.normalised()
    share = np.where(allowed, model.capacity, 0.0) / model.capacity[allowed].sum()
    lower = (model.lower[act] * model.totals[act] / model.capacity[allowed].sum()
             if params.use_lower_bound else None)
    near = neighbours(state, model) if state.edges else None
    note = ""
    if not np.any(act):
        first = int(np.flatnonzero(allowed)[0])
        now = {n: i for i, n in enumerate(model.nodes)}
        bins = np.array([now.get(state.assignment.get(u, ""), first) for u in model.units],
                        dtype=np.int64)
        bins[~allowed[bins]] = first
        note = "no unit loads a declared stream: units stay where they are"
    elif params.cluster and state.edges and params.comm_cost > 0:
        bins, note = _clustered(state, model, coef, norm, share, lower, allowed, params)
    else:
        safe = np.where(allowed, share, 1.0)  # never chosen: only to keep W finite
        bins = rod_assign(coef, norm, safe, lower=lower, class2=params.class2,
                          sort=params.sort, neighbours=near, allowed=allowed)
    plan = _finish("ROD", state, model, bins, budget, note, space=None, never_worse=True)
    return _lower_bound_overload(model, allowed, plan)


def _lower_bound_overload(model: LoadModel, allowed: NDArray[np.bool_], plan: Plan) -> Plan:
    """The plan with `lower_bound_load` (the load at the streams' lower bounds B over the
    capacity of the nodes that run the plan, A and any node of B still hosting a unit:
    Σ_i L^o_i·B / C, as placement/rod/resilience.py measures F/F* from B) among its facet
    metrics when some b_k > 0, and its message saying so when that is above 1: B itself
    overloads the cluster, so every plan's F/F* from B is 0 and ROD's §6.1 goal cannot be met
    (lower the bounds or add capacity)."""
    if not np.any(model.lower > 0):
        return plan
    used = set(plan.assignment.values())
    running = allowed | np.array([n in used for n in model.nodes])
    load = float((model.coefficients @ model.lower).sum())
    cap = float(model.capacity[running].sum())
    ratio = load / cap if cap > 0 else math.inf
    metrics = {**plan.facet_metrics, "lower_bound_load": ratio}
    message = plan.message
    if ratio > 1 + EPS:
        note = (f"the streams' lower bounds B already overload the cluster: at B the units "
                f"load {100 * ratio:.0f}% of the capacity of the nodes that run the plan, so "
                "every placement's feasible-set ratio from B is 0; lower the streams' min_rate "
                "or add capacity")
        message = f"{message}; {note}" if message else note
    return dataclasses.replace(plan, facet_metrics=metrics, message=message)


def _clustered(state: ClusterState, model: LoadModel, coef: NDArray[np.float64],
               norm: NDArray[np.float64], share: NDArray[np.float64],
               lower: NDArray[np.float64] | None, allowed: NDArray[np.bool_],
               params: RodParams) -> tuple[Bins, str]:
    """§6.3 on the communication facet: an edge of rate x costs comm_cost·x on both ends, in
    the direction of its upstream unit's coefficients (its output scales with its input)."""
    index = {u: j for j, u in enumerate(model.units)}
    load = model.coefficients @ model.rates
    arcs, ratios, costs = [], [], []
    for e in state.edges:
        u, v = index[e.src], index[e.dst]
        if u == v or load[u] <= 0:
            continue
        crossing = params.comm_cost * e.rate
        arcs.append((u, v))
        ratios.append(crossing / max(min(load[u], load[v]), 1e-12))
        costs.append(crossing / load[u] * norm[u])
    if not arcs:
        return rod_assign(coef, norm, np.where(allowed, share, 1.0), lower=lower,
                          class2=params.class2, sort=params.sort, allowed=allowed), ""
    # clustering runs on the nodes of A only (its share vector has no zero)
    a = np.flatnonzero(allowed)
    best = clustered_rod(coef, norm, share[a], arcs, np.array(ratios), np.array(costs),
                         approach=params.approach, lower=lower, class2=params.class2,
                         sort=params.sort)
    chosen = ("no clustering" if best.threshold is None else
              f"clustering threshold {best.threshold:g}, cap {best.cap:g}")
    return a[best.bins], f"§6.3: {chosen} (plane distance {best.plane_distance:.3f})"


def plan_llf(state: ClusterState, budget: Budget, params: StrategyParams) -> Plan:
    """LLF at the observed rates (§7.2), reached under the budget like ROD."""
    model = LoadModel.of(state)
    bins = llf(model.coefficients, model.rates, model.capacity, _allowed(state, model))
    return _finish("LLF", state, model, bins, budget, space=balance_space(model))


def plan_connected_lb(state: ClusterState, budget: Budget, params: StrategyParams) -> Plan:
    """Connected-LB at the observed rates (§7.2), reached under the budget like ROD."""
    model = LoadModel.of(state)
    bins = connected_lb(model.coefficients, model.rates, model.capacity,
                        neighbours(state, model), _allowed(state, model))
    return _finish("Connected-LB", state, model, bins, budget, space=balance_space(model))
