"""Algorithms 2 and 3: the SPRAWL DP with resource and latency constraints (§4.3).

Each (operator op, site n) keeps a ResourceMap: the CPU its subtree uses per site, the
bandwidth per link, and the subtree's latency Lat_{op,n} (Eq. 4.5). A child position k counts
only when the child's map, op's own map and the child's route k → n together are `valid()`:
within every site's remaining CPU, every link's remaining bandwidth, and Lat_{op,n} within the
pre-allocated bound of Eq. 4.6, min_q (L_q − Lat_{n,client_q} − Lat_proc) over the queries op
feeds (Lat_proc = 0). Algorithm 2 is Algorithm 3 without the latency part (`latency=False`).

Choices (docs/algorithms.md, "## SPRAWL"):
- Line 34 of Algorithm 3 computes the subtree latency with `k`, the loop variable of lines
  19–26, i.e. the last site tried, not the chosen MinP: the printed algorithm then records a
  latency that is not the placement's, and can report a bound as met that the placement breaks.
  We use MinP (`as_printed=True` reproduces the printed line for the tests).
- Siblings are merged in turn: child t's position is checked against op's map *including* the
  children already chosen (the thesis adds each child's map at line 32 before the next child),
  so the map of a finished (op, n) is always a real, jointly feasible subtree placement.
- One map per (op, n), the cheapest: the DP is a heuristic under constraints (a costlier child
  position that leaves room for a sibling is never revisited); it never returns an infeasible
  placement, and it can miss a feasible one or a cheaper one (tests show both on small cases).
- Sites whose every candidate is invalid have cost ∞ and are skipped (the thesis's strict `>`
  would leave MinP = −1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from placement.sprawl.dp import tree_of
from placement.sprawl.instance import Instance

__all__ = ["ConstrainedResult", "algorithm3", "latency_budget"]

EPS = 1e-9


@dataclass
class _Map:
    """ResourceMap[op][n]: CPU per site, bandwidth per link, subtree latency."""

    cpu: dict[int, float]
    bw: dict[int, float]
    lat: float

    def merged(self, other: _Map) -> _Map:
        cpu = dict(self.cpu)
        for k, v in other.cpu.items():
            cpu[k] = cpu.get(k, 0.0) + v
        bw = dict(self.bw)
        for k, v in other.bw.items():
            bw[k] = bw.get(k, 0.0) + v
        return _Map(cpu, bw, max(self.lat, other.lat))


@dataclass(frozen=True)
class ConstrainedResult:
    """The placement (None when none was found), its DP cost and the latency it claims."""

    x: np.ndarray | None
    cost: float
    claimed_latency: tuple[float, ...]  # per query, as the DP's maps record it


def latency_budget(inst: Instance) -> np.ndarray:
    """Eq. 4.6 per (op, n): min over the queries op feeds of L_q − Lat_{n, client_q}."""
    bound = np.full((inst.m, inst.n), np.inf)
    feeds: dict[int, set[int]] = {}
    out: dict[int, list[int]] = {}
    for u, v, _ in inst.edges:
        out.setdefault(u, []).append(v)
    for qi, q in enumerate(inst.queries):
        feeds.setdefault(q.sink, set()).add(qi)
    # an operator feeds every query whose sink it reaches downstream
    changed = True
    while changed:
        changed = False
        for u, vs in out.items():
            for v in vs:
                add = feeds.get(v, set()) - feeds.get(u, set())
                if add:
                    feeds.setdefault(u, set()).update(add)
                    changed = True
    lat = inst.routing.latency
    for op, qs in feeds.items():
        for qi in qs:
            q = inst.queries[qi]
            if not math.isfinite(q.bound):
                continue
            to_client = lat[:, q.client] if q.client is not None else np.zeros(inst.n)
            bound[op] = np.minimum(bound[op], q.bound - to_client)
    return bound


def algorithm3(inst: Instance, *, latency: bool = True, as_printed: bool = False,
               roots: Sequence[int] = ()) -> ConstrainedResult:
    """Algorithm 3 (Algorithm 2 with `latency=False`); see the module docstring."""
    r = inst.routing
    m, n_sites = inst.m, inst.n
    tree = tree_of(m, inst.edges, roots or [q.sink for q in inst.queries])
    children: dict[int, list[tuple[int, int, bool]]] = {}
    for child, (par, e, is_src) in tree.parent.items():
        children.setdefault(par, []).append((child, e, is_src))
    cpu_cap = inst.cpu_cap if inst.cpu_cap is not None else np.full(n_sites, np.inf)
    link_cap = inst.link_cap if inst.link_cap is not None else np.full(len(r.links), np.inf)
    bound = latency_budget(inst) if latency else np.full((m, n_sites), np.inf)
    w = inst.weight
    routes: dict[tuple[int, int], list[int]] = {}

    def route(k: int, n: int) -> list[int]:
        if (k, n) not in routes:
            routes[(k, n)] = r.path_links(k, n)
        return routes[(k, n)]

    def valid(rm: _Map, op: int, n: int) -> bool:
        return (all(v <= cpu_cap[s] + EPS for s, v in rm.cpu.items())
                and all(v <= link_cap[lk] + EPS for lk, v in rm.bw.items())
                and rm.lat <= bound[op, n] + EPS)

    opcost = np.full((m, n_sites), np.inf)
    maps: dict[tuple[int, int], _Map] = {}
    copt: dict[tuple[int, int], dict[int, int]] = {}
    for op in tree.postorder:
        for n in range(n_sites):
            if not math.isfinite(inst.cpu_cost[op, n]):
                continue
            rm = _Map({n: float(inst.cpu[op])}, {}, 0.0)
            if not valid(rm, op, n):
                continue
            cost = float(inst.cpu_cost[op, n])
            choice: dict[int, int] = {}
            ok = True
            for child, e, is_src in children.get(op, []):
                rate = inst.edges[e][2]
                costs = opcost[child] + rate * (w[:, n] if is_src else w[n, :])
                min_c, min_p = math.inf, -1
                # lines 19–26, cheapest k first: the first valid k is MinP (same result, and
                # the ResourceMap merge runs only until then)
                for k in np.argsort(costs, kind="stable").tolist():
                    if not math.isfinite(costs[k]):
                        break
                    sub = maps.get((child, k))
                    if sub is None:
                        continue
                    temp = sub.merged(rm)
                    for lk in (route(k, n) if is_src else route(n, k)):
                        temp.bw[lk] = temp.bw.get(lk, 0.0) + rate
                    if is_src:  # against the data flow (multi-output): postponed (§5.3.4)
                        temp.lat = max(rm.lat, sub.lat + float(r.latency[k, n]))
                    if valid(temp, op, n):
                        min_c, min_p = float(costs[k]), k
                        break
                if min_p < 0:
                    ok = False
                    break
                cost += min_c
                choice[child] = min_p
                sub = maps[(child, min_p)]
                new = rm.merged(sub)
                for lk in (route(min_p, n) if is_src else route(n, min_p)):
                    new.bw[lk] = new.bw.get(lk, 0.0) + rate
                # line 34: the printed `k` (the loop of line 19 ends on the last site), or MinP
                at = n_sites - 1 if as_printed else min_p
                sub_at = maps.get((child, at), sub)
                if is_src:
                    new.lat = max(rm.lat, sub_at.lat + float(r.latency[at, n]))
                rm = new
            if ok:
                opcost[op, n] = cost
                maps[(op, n)] = rm
                copt[(op, n)] = choice
    x = np.full(m, -1, dtype=np.int64)
    total = 0.0
    for root in tree.roots:
        cands = [n for n in range(n_sites) if (root, n) in maps]
        if not cands:
            return ConstrainedResult(None, math.inf, ())
        x[root] = min(cands, key=lambda n: (opcost[root, n], n))
        total += float(opcost[root, x[root]])
    for op in reversed(tree.postorder):
        if op in tree.parent:
            par = tree.parent[op][0]
            x[op] = copt[(par, int(x[par]))][op]
    claimed = []
    for q in inst.queries:
        lat = maps[(q.sink, int(x[q.sink]))].lat
        if q.client is not None:
            lat += float(r.latency[x[q.sink], q.client])
        claimed.append(lat)
    return ConstrainedResult(x, total, tuple(claimed))
