"""The `sprawl` strategy: SPRAWL's DP as a reconf planner, with its certified gap.

From the ClusterState (DESIGN.md, "Facets"): operators are the units (CPU_op = load, in % of a
reference node), the data edges are `edges` (rate BW), the sites are `network` (routes by
shortest latency), the hosts are `nodes` (a site that is no node only routes), and `pinned`
fixes sources and sinks. CPUCost_{op,n} = w^CPU_n · load / capacity_n (the share of the
machine, §3.3.2); a host's CPU cap is 100 · capacity (its load may not pass 100 %).

A plan:
1. Algorithm 1 (exact on forests) without constraints; its cost is a lower bound for every
   constrained and budgeted variant, so a plan that reaches it is OPTIMAL.
2. With `constraints` != "none" and a binding constraint: Algorithm 2/3 per query tree, the
   trees placed one after the other on what the previous ones left (as §6.4.2 deploys queries).
3. The migration budget. `move_cost` (default): λ · m_k is added to CPUCost_{k,n} for every
   n ≠ k's current node (m_k = mc_k over the budget's cost cap, plus 1 over its count cap), a
   per-node term, so each DP stays exact for its λ; λ is bisected (doubling, then 24 halvings)
   to the smallest that fits; a move must gain more than TIE relative (so exact ties, at any λ
   and with any budget, stay on the current node). `repair` (§5.4.1): units that break nothing stay where they are
   (pinned), and only the violating ones (on an overloaded host, sending over an overloaded
   link, in a query over its latency bound, and arrivals) are re-placed, λ as above.
4. The exact MILP (placement/sprawl/milp.py, with the migration budget as a row) when the
   communication graph is not a forest (the DP does not apply) or, up to `milp_max_vars`
   variables, to certify a lower bound for a constrained plan; it is warm-started from the DP's
   plan and used when it is better. Its dual bound is a bound of the budgeted problem.
Facet metrics: cost_total, cost_cpu, cost_network, wan_bytes (rate over wide-area links, per
link crossed), max_node_util, max_link_util, latency_violations, max_latency_ratio,
latency_ratio_<query> (Lat_q / L_q for each bounded query), gap ((cost − bound) / cost).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from placement.common import StrategyInputError, fits, is_frozen, make_plan
from placement.facets import Network
from placement.model import Budget, ClusterState, Phase, Plan, SolverStatus
from placement.sprawl.constrained import algorithm3
from placement.sprawl.dp import NotATree, algorithm1, tree_of
from placement.sprawl.explain import infeasible_cause, latency_ratios, sprawl_metrics
from placement.sprawl.instance import Instance, QueryIdx, evaluate
from placement.sprawl.milp import solve_milp
from placement.sprawl.params import SprawlParams
from placement.sprawl.topology import Routing, routing_of

__all__ = ["TIE", "plan_sprawl", "state_instance"]

#: a move must gain more than TIE · (the optimum's cost) / M; exact ties (and float noise) stay
TIE = 1e-10


@lru_cache(maxsize=8)
def _routing(network: Network) -> Routing:
    return routing_of(network)


def state_instance(state: ClusterState, params: SprawlParams) -> tuple[Instance, list[str]]:
    """The SPRAWL instance of a ClusterState (see the module docstring) and the unit order."""
    if state.network is None:
        raise ValueError("SPRAWL needs the network facet (the job's topology file)")
    r = _routing(state.network)
    units = sorted(k.id for k in state.keygroups)
    pos = {u: i for i, u in enumerate(units)}
    kgs = {k.id: k for k in state.keygroups}
    w_cpu = np.array([s.cpu_cost for s in state.network.sites])
    host = np.zeros(r.n, dtype=bool)
    cap = np.zeros(r.n)
    share = np.full(r.n, np.inf)
    for node in state.nodes:
        i = r.index[node.id]
        cap[i] = 100.0 * node.capacity
        share[i] = 1.0 / node.capacity
        host[i] = True
    cpu = np.array([kgs[u].load for u in units])
    cost = np.full((len(units), r.n), np.inf)
    cost[:, host] = cpu[:, None] * (w_cpu * share)[None, host]
    marked = [r.index[n.id] for n in state.nodes if n.marked_for_removal]
    for u in units:
        row = cost[pos[u]]
        if u in state.pinned:
            keep = row[r.index[state.pinned[u]]]
            row[:] = np.inf
            row[r.index[state.pinned[u]]] = keep
        for b in marked:  # no move into a node marked for removal (set B)
            if state.assignment.get(u) != r.sites[b] and u not in state.pinned:
                row[b] = np.inf
    merged: dict[tuple[int, int], float] = {}
    for e in state.edges:
        if e.src != e.dst:
            key = (pos[e.src], pos[e.dst])
            merged[key] = merged.get(key, 0.0) + e.rate
    queries = []
    for q in params.queries:
        if q.sink not in pos:
            raise StrategyInputError(
                f"sprawl: query {q.id!r} names unknown sink unit {q.sink!r}",
                where=f"the query {q.id!r} (the job's topology file or strategy_params)",
                fix="name a unit of the job as the query's sink")
        client = q.client if q.client is not None else state.pinned.get(q.sink)
        if client is not None and client not in r.index:
            raise StrategyInputError(
                f"sprawl: query {q.id!r} has unknown client site {client!r}",
                where=f"the query {q.id!r} (the job's topology file or strategy_params)",
                fix="name a site of the network as the query's client")
        queries.append(QueryIdx(pos[q.sink], q.latency_bound_ms,
                                r.index[client] if client is not None else None))
    links = np.array([lk.bandwidth for lk in r.links], dtype=float)
    resources = params.constraints != "none"
    inst = Instance(
        r, tuple(units), cpu, cost, tuple((u, v, rt) for (u, v), rt in merged.items()),
        params.beta, params.objective, np.where(host, cap, 0.0) if resources else None,
        links if resources and np.isfinite(links).any() else None,
        tuple(queries) if params.constraints == "all" else
        tuple(QueryIdx(q.sink, math.inf, q.client) for q in queries))
    return inst, units


def _sub(inst: Instance, ops: list[int], cpu_cap: np.ndarray | None,
         link_cap: np.ndarray | None) -> Instance:
    where = {o: i for i, o in enumerate(ops)}
    return Instance(inst.routing, tuple(inst.ops[o] for o in ops), inst.cpu[ops],
                    inst.cpu_cost[ops], tuple((where[u], where[v], r) for u, v, r in inst.edges
                                              if u in where), inst.beta, inst.objective,
                    cpu_cap, link_cap, tuple(QueryIdx(where[q.sink], q.bound, q.client)
                                             for q in inst.queries if q.sink in where))


def place_constrained(inst: Instance, *, latency: bool = True) -> np.ndarray | None:
    """Algorithm 2/3 per tree of the forest, each on the resources the previous ones left."""
    tree = tree_of(inst.m, inst.edges, [q.sink for q in inst.queries])
    comp: dict[int, list[int]] = {}
    for op in tree.postorder:
        root = op
        while root in tree.parent:
            root = tree.parent[root][0]
        comp.setdefault(root, []).append(op)
    cpu_cap = None if inst.cpu_cap is None else inst.cpu_cap.copy()
    link_cap = None if inst.link_cap is None else inst.link_cap.copy()
    x = np.full(inst.m, -1, dtype=np.int64)
    for root in tree.roots:
        ops = sorted(comp[root])
        sub = _sub(inst, ops, cpu_cap, link_cap)
        res = algorithm3(sub, latency=latency)
        if res.x is None:
            return None
        used = evaluate(sub, res.x)
        if cpu_cap is not None:
            cpu_cap = cpu_cap - used.node_cpu
        if link_cap is not None:
            link_cap = link_cap - used.link_bw
        x[ops] = res.x
    return x


def _solve(inst: Instance, params: SprawlParams) -> np.ndarray | None:
    """The DP for one cost table: Algorithm 1, or 2/3 when a constraint binds."""
    x = algorithm1(inst).x
    if not math.isfinite(evaluate(inst, x).total):
        return None
    if inst.constrained and not evaluate(inst, x).feasible:
        return place_constrained(inst, latency=params.constraints == "all")
    return x


def plan_sprawl(state: ClusterState, budget: Budget, params: SprawlParams) -> Plan:
    """SPRAWL under reconf's budget (module docstring, steps 1–4)."""
    started = time.perf_counter()  # time_limit_s counts from here (the DP before the MILP)
    inst, units = state_instance(state, params)
    r = inst.routing
    current = np.array([r.index[state.assignment[u]] if u in state.assignment else -1
                        for u in units])
    kgs = {k.id: k for k in state.keygroups}
    weight = np.zeros(len(units))
    if budget.max_migration_cost:
        weight += np.array([kgs[u].migration_cost for u in units]) / budget.max_migration_cost
    if budget.max_migrations:
        weight += 1.0 / budget.max_migrations
    base = inst
    if params.budget_mode == "repair" and (current >= 0).all():
        base = _repair_instance(inst, current)
    if is_frozen(budget):  # nothing may move: only arrivals are placed
        base = base.with_cpu_cost(_fix(base.cpu_cost, current, current >= 0))
    tree_ok = True
    try:
        tree_of(inst.m, inst.edges)
    except NotATree:
        tree_ok = False
    lower = -math.inf
    x: np.ndarray | None = None
    message = ""
    phases: tuple[Phase, ...] = ()
    if tree_ok:
        lower = algorithm1(inst.unconstrained()).cost

        def moves_of(sol: np.ndarray) -> tuple[int, float]:
            moved = (current >= 0) & (sol != current)
            return int(moved.sum()), float(sum(kgs[units[i]].migration_cost
                                                 for i in np.flatnonzero(moved)))

        tie = TIE * max(1.0, abs(lower)) / max(1, inst.m) if math.isfinite(lower) else 0.0
        x = _bisect(base, current, weight, tie, params,
                    lambda s: fits(budget, *moves_of(s)))
    use_milp = not tree_ok or (inst.constrained and params.milp_max_vars > 0)
    if use_milp:
        size = sum(np.isfinite(inst.cpu_cost[u]).sum() * np.isfinite(inst.cpu_cost[v]).sum()
                   for u, v, _ in inst.edges)
        if not tree_ok or size <= params.milp_max_vars:
            res = solve_milp(inst, time_limit_s=max(0.1, params.time_limit_s
                                                    - (time.perf_counter() - started)),
                             start=x, current=current,
                             move_cost=np.array([kgs[u].migration_cost for u in units]),
                             max_moves=0 if is_frozen(budget) else budget.max_migrations,
                             max_cost=budget.max_migration_cost)
            lower = max(lower, res.lower_bound) if math.isfinite(res.lower_bound) else lower
            if res.x is not None:
                moved = (current >= 0) & (res.x != current)
                cost = float(sum(kgs[units[i]].migration_cost for i in np.flatnonzero(moved)))
                better = x is None or res.cost < evaluate(inst, x).total - 1e-9
                if better and fits(budget, int(moved.sum()), cost):
                    x = _stay_on_ties(inst, res.x, current)
            message = f"milp {res.status}"
            phases = (Phase("MILP", res.wall_s, res.status),)
    bounds = [q.latency_bound_ms for q in params.queries]
    if x is None:
        assignment = _fill(state, units, inst, dict(state.assignment))
        why = infeasible_cause(inst, params, budget, current, kgs, units, tree_ok, message,
                               _solve)
        plan = make_plan(state, assignment, status=SolverStatus.INFEASIBLE, lower_bound=None,
                         phases=phases, message=f"{why}; the current assignment is kept")
        kept = np.array([r.index[assignment[u]] for u in units])
        now = evaluate(inst, kept)
        metrics = {**sprawl_metrics(inst, now, bounds), **latency_ratios(params, now)}
        return dataclasses.replace(plan, facet_metrics=metrics,
                                   facet_before=metrics if (current >= 0).all() else {})
    ev = evaluate(inst, x)
    metrics = sprawl_metrics(inst, ev, bounds)
    cost = ev.total
    gap = max(0.0, (cost - lower) / cost) if cost > 0 and math.isfinite(lower) else 0.0
    metrics["gap"] = gap
    metrics.update(latency_ratios(params, ev))
    optimal = ev.feasible and math.isfinite(lower) and cost <= lower + 1e-9 * max(1.0, abs(cost))
    assignment = {u: r.sites[int(x[i])] for i, u in enumerate(units)}
    notes = [message or ("" if ev.feasible else "; ".join(ev.violations[:3]))]
    if params.constraints != "all" and metrics["latency_violations"]:
        notes.append(f"{metrics['latency_violations']:g} query(ies) over their latency bound "
                     f"(up to {metrics['max_latency_ratio']:.2f}× L_q): constraints="
                     f"{params.constraints!r} does not enforce latency bounds")
    plan = make_plan(state, assignment,
                     status=SolverStatus.OPTIMAL if optimal else SolverStatus.HEURISTIC,
                     lower_bound=lower if math.isfinite(lower) else None, phases=phases,
                     message="; ".join(filter(None, notes)))
    before = evaluate(inst, current) if (current >= 0).all() else None
    return dataclasses.replace(plan, facet_metrics=metrics,
                               facet_before={**sprawl_metrics(inst, before, bounds),
                                             **latency_ratios(params, before)} if before else {})


def _stay_on_ties(inst: Instance, x: np.ndarray, current: np.ndarray) -> np.ndarray:
    """The MILP stops within its gap and breaks ties as HiGHS likes: put back, one at a time
    (in unit order), every moved unit whose move gains no more than TIE and breaks nothing."""
    x = x.copy()
    ev = evaluate(inst, x)
    for i in np.flatnonzero((current >= 0) & (x != current)):
        back = x.copy()
        back[i] = current[i]
        alt = evaluate(inst, back)
        if (alt.total <= ev.total + TIE * max(1.0, abs(ev.total))
                and len(alt.violations) <= len(ev.violations)):
            x, ev = back, alt
    return x


def _fix(cost: np.ndarray, at: np.ndarray, which: np.ndarray) -> np.ndarray:
    out = cost.copy()
    for i in np.flatnonzero(which):
        keep = out[i, at[i]]
        out[i] = np.inf
        out[i, at[i]] = keep if math.isfinite(keep) else 0.0
    return out


def _repair_instance(inst: Instance, current: np.ndarray) -> Instance:
    """§5.4.1: every unit that breaks no constraint is pinned where it is."""
    ev = evaluate(inst, current)
    bad = np.zeros(inst.m, dtype=bool)
    if inst.cpu_cap is not None:
        over = ev.node_cpu > inst.cpu_cap + 1e-9
        bad |= over[current]
    if inst.link_cap is not None:
        over_links = set(np.flatnonzero(ev.link_bw > inst.link_cap + 1e-9).tolist())
        for u, v, _ in inst.edges:
            if over_links & set(inst.routing.path_links(int(current[u]), int(current[v]))):
                bad[u] = bad[v] = True
    for q, lat in zip(inst.queries, ev.latency, strict=True):
        if lat > q.bound + 1e-9:
            feeds = {q.sink}
            changed = True
            while changed:
                changed = False
                for u, v, _ in inst.edges:
                    if v in feeds and u not in feeds:
                        feeds.add(u)
                        changed = True
            bad[list(feeds)] = True
    return inst.with_cpu_cost(_fix(inst.cpu_cost, current, ~bad))


def _bisect(inst: Instance, current: np.ndarray, weight: np.ndarray, tie: float,
            params: SprawlParams, ok: Callable[[np.ndarray], bool]) -> np.ndarray | None:
    """The smallest λ whose DP plan fits the budget (λ · m_k + `tie` off the current node: a
    move must gain more than `tie`, so a unit whose move gains nothing stays)."""
    movable = current >= 0

    def at(lam: float) -> np.ndarray | None:
        penalty = np.zeros_like(inst.cpu_cost)
        penalty[movable] = lam * weight[movable, None] + tie
        penalty[movable, current[movable]] = 0.0
        return _solve(inst.with_cpu_cost(inst.cpu_cost + penalty), params)

    x = at(0.0)
    if x is not None and ok(x):
        return x
    scale = max(1.0, float(np.nanmax(np.where(np.isfinite(inst.cpu_cost), inst.cpu_cost, 0))))
    lo, hi, best = 0.0, scale, None
    for _ in range(60):
        cand = at(hi)
        if cand is not None and ok(cand):
            best = cand
            break
        lo, hi = hi, hi * 4
    if best is None:
        return None
    for _ in range(24):
        mid = (lo + hi) / 2
        cand = at(mid)
        if cand is not None and ok(cand):
            hi, best = mid, cand
        else:
            lo = mid
    return best


def _fill(state: ClusterState, units: list[str], inst: Instance,
          assignment: dict[str, str]) -> dict[str, str]:
    """The current assignment, arrivals on their cheapest allowed host."""
    for i, u in enumerate(units):
        if u not in assignment:
            assignment[u] = inst.routing.sites[int(np.argmin(inst.cpu_cost[i]))]
    return assignment
