"""The exact placement MILP (the "ILP" baseline of §6.1), for any communication graph.

Variables: x_{o,n} ∈ {0,1} (operator o on site n, over o's allowed sites) and, per data edge
e = (u → v), y_{e,k,n} ≥ 0 with Σ_n y_{e,k,n} = x_{u,k} and Σ_k y_{e,k,n} = x_{v,n}; with x
integral this forces y_{e,k,n} = x_{u,k}·x_{v,n} (a transport polytope with 0/1 margins), so
the objective is Formula 3.1 exactly:
  min Σ_{o,n} CPUCost_{o,n} x_{o,n} + Σ_e rate_e Σ_{k,n} weight_{k,n} y_{e,k,n}
  s.t. Σ_o CPU_o x_{o,n} ≤ cap_n;  Σ_e rate_e Σ_{k,n: l ∈ route(k,n)} y_{e,k,n} ≤ cap_l;
       for each query q and each source → sink path P: Σ_{e ∈ P} Σ Lat_{k,n} y_{e,k,n}
       + Σ_n Lat_{n,client} x_{sink,n} ≤ L_q   (Eq. 4.5 with Lat_proc = 0, as a longest path).
Solved by HiGHS through the project's PuLP bridge (placement/highs.py), warm-started from
a DP placement; the result carries HiGHS's dual bound, a certified lower bound on the optimum,
so a DP plan's gap is (cost − bound) / cost even when the MILP does not finish.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pulp

from placement.highs import BulkHiGHS, model_status_name
from placement.sprawl.instance import Instance

__all__ = ["MilpResult", "solve_milp"]


@dataclass(frozen=True)
class MilpResult:
    """HiGHS's status, its best placement (or None) and cost, and its certified lower bound."""

    status: str
    x: np.ndarray | None
    cost: float
    lower_bound: float
    wall_s: float


def _paths(inst: Instance, sink: int) -> list[list[int]]:
    """Every source → sink data path, as edge indexes (the DAG's longest-path constraints)."""
    into: dict[int, list[int]] = {}
    for e, (_, v, _) in enumerate(inst.edges):
        into.setdefault(v, []).append(e)
    out: list[list[int]] = []

    def walk(op: int, suffix: list[int]) -> None:
        if op not in into:
            out.append(suffix)
            return
        for e in into[op]:
            walk(inst.edges[e][0], [e, *suffix])

    walk(sink, [])
    return [p for p in out if p]


def solve_milp(inst: Instance, *, time_limit_s: float = 10.0, start: np.ndarray | None = None,
               gap_rel: float = 1e-6, current: np.ndarray | None = None,
               move_cost: np.ndarray | None = None, max_moves: int | None = None,
               max_cost: float | None = None) -> MilpResult:
    """Solve the MILP above; `start` (a placement) is handed to HiGHS as its incumbent. With
    `current` (site per operator, -1 for an arrival), reconf's migration budget is a row too:
    Σ_o (1 − x_{o,current_o}) ≤ max_moves and Σ_o mc_o (1 − x_{o,current_o}) ≤ max_cost."""
    started = time.perf_counter()
    cands = [np.flatnonzero(np.isfinite(inst.cpu_cost[o])).tolist() for o in range(inst.m)]
    prob = pulp.LpProblem("sprawl", pulp.LpMinimize)
    x = {(o, int(n)): pulp.LpVariable(f"x_{o}_{n}", cat="Binary")
         for o in range(inst.m) for n in cands[o]}
    y: dict[tuple[int, int, int], pulp.LpVariable] = {}
    terms = [(float(inst.cpu_cost[o, n]), var) for (o, n), var in x.items()]
    for e, (u, v, rate) in enumerate(inst.edges):
        for k in cands[u]:
            for n in cands[v]:
                var = pulp.LpVariable(f"y_{e}_{k}_{n}", lowBound=0)
                y[(e, int(k), int(n))] = var
                terms.append((rate * float(inst.weight[k, n]), var))
    prob += pulp.lpSum(c * var for c, var in terms)
    for o in range(inst.m):
        prob += pulp.lpSum(x[(o, int(n))] for n in cands[o]) == 1
    for e, (u, v, _) in enumerate(inst.edges):
        for k in cands[u]:
            prob += pulp.lpSum(y[(e, int(k), int(n))] for n in cands[v]) == x[(u, int(k))]
        for n in cands[v]:
            prob += pulp.lpSum(y[(e, int(k), int(n))] for k in cands[u]) == x[(v, int(n))]
    if inst.cpu_cap is not None:
        for n in range(inst.n):
            on = [(float(inst.cpu[o]), x[(o, n)]) for o in range(inst.m) if (o, n) in x]
            if on and math.isfinite(inst.cpu_cap[n]):
                prob += pulp.lpSum(c * var for c, var in on) <= float(inst.cpu_cap[n])
    if inst.link_cap is not None:
        per_link: dict[int, list[tuple[float, pulp.LpVariable]]] = {}
        for (e, k, n), var in y.items():
            for lk in inst.routing.path_links(k, n):
                per_link.setdefault(lk, []).append((inst.edges[e][2], var))
        for lk, use in per_link.items():
            if math.isfinite(inst.link_cap[lk]):
                prob += pulp.lpSum(c * var for c, var in use) <= float(inst.link_cap[lk])
    if current is not None and (max_moves is not None or max_cost is not None):
        stay = [(o, x.get((o, int(current[o])))) for o in range(inst.m) if current[o] >= 0]
        moved = [(o, 1 - var if var is not None else 1) for o, var in stay]
        if max_moves is not None:
            prob += pulp.lpSum(term for _, term in moved) <= max_moves
        if max_cost is not None and move_cost is not None:
            prob += pulp.lpSum(float(move_cost[o]) * term for o, term in moved) <= max_cost
    lat = inst.routing.latency
    for q in inst.queries:
        if not math.isfinite(q.bound):
            continue
        tail = (pulp.lpSum(float(lat[n, q.client]) * x[(q.sink, int(n))] for n in cands[q.sink])
                if q.client is not None else 0)
        for path in _paths(inst, q.sink) or [[]]:
            prob += pulp.lpSum(float(lat[k, n]) * y[(e, k, n)] for e in path
                               for (k, n) in ((int(k), int(n)) for k in cands[inst.edges[e][0]]
                                              for n in cands[inst.edges[e][1]])) + tail <= q.bound
    warm: dict[pulp.LpVariable, float] = {}
    if start is not None and all(start[o] in set(cands[o]) for o in range(inst.m)):
        for (o, n), var in x.items():
            warm[var] = 1.0 if start[o] == n else 0.0
        for (e, k, n), var in y.items():
            u, v, _ = inst.edges[e]
            warm[var] = 1.0 if (start[u] == k and start[v] == n) else 0.0
    engine = BulkHiGHS(warm_start=warm or None, msg=False, timeLimit=time_limit_s,
                       gapRel=gap_rel, gapAbs=1e-9, deadline=started + time_limit_s)
    prob.solve(engine)
    kind = model_status_name(engine.model_status)
    bound = engine.dual_bound if engine.dual_bound is not None else -math.inf
    if not engine.has_solution:
        return MilpResult(kind, None, math.inf, bound if kind != "infeasible" else math.inf,
                          time.perf_counter() - started)
    sol = np.zeros(inst.m, dtype=np.int64)
    for o in range(inst.m):
        sol[o] = max(cands[o], key=lambda n: x[(o, int(n))].varValue or 0.0)
    cost = float(pulp.value(prob.objective))
    if kind == "optimal":
        bound = max(bound, cost - 1e-6 * max(1.0, abs(cost))) if math.isfinite(bound) else cost
    return MilpResult(kind, sol, cost, float(bound), time.perf_counter() - started)
