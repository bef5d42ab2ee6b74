"""The distributed SPRAWL DP over network domains (§4.4).

1. Partition (§4.4.1, Formula 4.7): the plan is placed over zones (clusters) with the same DP,
   CPU cost 0 and an edge's cost rate · (Σ w^BW over the wide-area links between the zones):
   wide-area links are the links whose ends are in different zones, and zone-to-zone costs are
   shortest paths on the zone graph. Pinned operators stay in their site's zone. Ties (equal
   wide-area cost) go to the zone whose border is nearer in latency (a 1e-6 tie-break).
2. Per zone (§4.4.2): each zone runs Algorithm 1 on its sub-plan over its own sites, with
   intra-zone routes (shortest paths inside the zone). For an edge from a sub-plan root r in
   child zone C to its consumer o in parent zone P, C sends one value per border node b_C,
   OPCost'_{r,b_C} = min_j (OPCost_{r,j} + BWCost_C(j → b_C)) (Eq. 4.8's first part; with
   several border nodes, one value per border node, note B4.14); P adds the border-to-border
   route and BWCost_P(b_P → k) and keeps the minimum over (b_C, b_P).
3. Deploy: P sends back the chosen root site; each zone deploys its sub-plan as in Algorithm 1.

It equals the central Algorithm 1 when (a) the partition is correct (each operator in the zone
the central optimum uses, §6.3.5) and (b) routes decompose at borders: every intra-zone shortest
route stays inside the zone and every inter-zone route passes border → border; tests check
this on networks built so. `work` counts each zone's inner-loop evaluations (the N_c² terms of
Θ(c·M_s·N_c²), §4.5.1), the zone's share of a distributed run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from placement.sprawl.dp import tree_of
from placement.sprawl.instance import Instance

__all__ = ["DistributedResult", "Zones", "distributed_dp", "partition", "zones_of"]


@dataclass(frozen=True, eq=False)
class Zones:
    """The zones of a routed network: members, borders, intra-zone routes, zone costs."""

    names: tuple[str, ...]
    of_site: np.ndarray  # zone index of every site
    members: tuple[np.ndarray, ...]
    borders: tuple[np.ndarray, ...]
    inner: tuple[np.ndarray, ...]  # per zone: intra-zone route weight (Σ w·Lat) between members
    wan: np.ndarray  # zone × zone: Σ w^BW of wide-area links on the cheapest zone path
    zlat: np.ndarray  # zone × zone: min latency between their borders (tie-break)


def zones_of(inst: Instance) -> Zones:
    r = inst.routing
    names = tuple(sorted(set(r.zone)))
    zi = {z: i for i, z in enumerate(names)}
    of_site = np.array([zi[z] for z in r.zone])
    members = tuple(np.flatnonzero(of_site == i) for i in range(len(names)))
    borders = tuple(m[r.border[m]] if r.border[m].any() else m for m in members)
    inner = []
    for m in members:
        pos = {int(s): k for k, s in enumerate(m)}
        rows, cols, w = [], [], []
        for link in r.links:
            a, b = r.index[link.a], r.index[link.b]
            if a in pos and b in pos:
                rows += [pos[a], pos[b]]
                cols += [pos[b], pos[a]]
                w += [link.latency_ms] * 2
        lat = dijkstra(csr_matrix((w, (rows, cols)), shape=(len(m), len(m))), directed=True)
        # the route weight Σ w^BW·Lat inside the zone: the global route when it stays inside
        inner.append(np.where(np.isfinite(lat), r.pathcost[np.ix_(m, m)], np.inf))
    g = nx.Graph()
    g.add_nodes_from(range(len(names)))
    for link in r.links:
        za, zb = of_site[r.index[link.a]], of_site[r.index[link.b]]
        if za != zb:
            old = g.get_edge_data(za, zb, {"w": np.inf})["w"]
            g.add_edge(int(za), int(zb), w=min(old, link.cost))
    wan = np.array([[nx.shortest_path_length(g, a, b, weight="w") for b in g.nodes]
                    for a in g.nodes], dtype=float)
    zlat = np.array([[float(r.latency[np.ix_(borders[a], borders[b])].min())
                      for b in range(len(names))] for a in range(len(names))])
    return Zones(names, of_site, members, borders, tuple(inner), wan, zlat)


def partition(inst: Instance, zones: Zones) -> np.ndarray:
    """Step 1: the zone of every operator, by the DP of Formula 4.7 over zones."""
    nz = len(zones.names)
    cost = np.zeros((inst.m, nz))
    for op in range(inst.m):
        allowed = np.flatnonzero(np.isfinite(inst.cpu_cost[op]))
        ok = np.zeros(nz, dtype=bool)
        ok[np.unique(zones.of_site[allowed])] = True
        cost[op, ~ok] = np.inf
    w = zones.wan + 1e-6 * zones.zlat / max(1.0, float(zones.zlat.max()))
    tree = tree_of(inst.m, inst.edges, [q.sink for q in inst.queries])
    copt: dict[int, np.ndarray] = {}
    for op in tree.postorder:
        if op in tree.parent:
            par, e, is_src = tree.parent[op]
            table = cost[op][:, None] + inst.edges[e][2] * (w if is_src else w.T)
            cost[par] += table.min(axis=0)
            copt[op] = table.argmin(axis=0)
    z = np.zeros(inst.m, dtype=np.int64)
    for root in tree.roots:
        z[root] = int(np.argmin(cost[root]))
    for op in reversed(tree.postorder):
        if op in tree.parent:
            z[op] = copt[op][z[tree.parent[op][0]]]
    return z


@dataclass(frozen=True)
class DistributedResult:
    x: np.ndarray
    cost: float  # the DP's own cost (routes through borders between zones)
    zone_of_op: np.ndarray
    work: Mapping[str, int]  # inner-loop evaluations per zone


def distributed_dp(inst: Instance, zones: Zones | None = None,
                   zone_of_op: np.ndarray | None = None) -> DistributedResult:
    """Steps 1–3 (see the module docstring); `zone_of_op` overrides step 1's partition."""
    zones = zones if zones is not None else zones_of(inst)
    z = partition(inst, zones) if zone_of_op is None else np.asarray(zone_of_op)
    r = inst.routing
    w_global = inst.weight / inst.beta if inst.objective == "resource" else inst.weight
    scale = inst.beta if inst.objective == "resource" else 1.0
    tree = tree_of(inst.m, inst.edges, [q.sink for q in inst.queries])
    vec: dict[int, np.ndarray] = {}  # OPCost[op] over the sites of op's zone
    back: dict[int, tuple[Any, ...]] = {}
    work = dict.fromkeys(zones.names, 0)
    for op in tree.postorder:
        zm = zones.members[z[op]]
        vec[op] = inst.cpu_cost[op, zm].astype(float).copy()
    for op in tree.postorder:
        if op not in tree.parent:
            continue
        par, e, is_src = tree.parent[op]
        rate = inst.edges[e][2] * scale
        zc, zp = int(z[op]), int(z[par])
        if zc == zp:
            inner = zones.inner[zc] if is_src else zones.inner[zc].T
            table = vec[op][:, None] + rate * _obj(inst, inner, zones, zc, zc)
            vec[par] += table.min(axis=0)
            back[op] = ("same", table.argmin(axis=0))
            work[zones.names[zc]] += table.size
            continue
        mc, mp = zones.members[zc], zones.members[zp]
        bc = np.searchsorted(mc, zones.borders[zc])
        bp = np.searchsorted(mp, zones.borders[zp])
        # child zone: OPCost' per own border node (its message to the parent)
        to_b = zones.inner[zc][:, bc] if is_src else zones.inner[zc][bc, :].T
        t1 = vec[op][:, None] + rate * _obj(inst, to_b, zones, zc, zc)
        msg, arg1 = t1.min(axis=0), t1.argmin(axis=0)
        work[zones.names[zc]] += t1.size
        # parent zone: border → border (the WAN route) and border → k inside the parent
        bb = w_global[np.ix_(mc[bc], mp[bp])] if is_src else w_global[np.ix_(mp[bp], mc[bc])].T
        t2 = msg[:, None] + rate * _obj(inst, bb, zones, -1, -1, lat=r.latency, sites=(
            mc[bc], mp[bp]), src=is_src)
        mid, arg2 = t2.min(axis=0), t2.argmin(axis=0)
        from_b = zones.inner[zp][bp, :] if is_src else zones.inner[zp][:, bp].T
        t3 = mid[:, None] + rate * _obj(inst, from_b, zones, zp, zp)
        vec[par] += t3.min(axis=0)
        back[op] = ("cross", arg1, arg2, t3.argmin(axis=0))
        work[zones.names[zp]] += t2.size + t3.size
    x = np.full(inst.m, -1, dtype=np.int64)
    total = 0.0
    local = np.zeros(inst.m, dtype=np.int64)
    for root in tree.roots:
        local[root] = int(np.argmin(vec[root]))
        total += float(vec[root][local[root]])
    for op in reversed(tree.postorder):
        if op in tree.parent:
            par = tree.parent[op][0]
            info = back[op]
            if info[0] == "same":
                local[op] = info[1][local[par]]
            else:
                b_p = info[3][local[par]]
                b_c = info[2][b_p]
                local[op] = info[1][b_c]
    for op in range(inst.m):
        x[op] = zones.members[z[op]][local[op]]
    return DistributedResult(x, total, z, work)


def _obj(inst: Instance, weight: np.ndarray, zones: Zones, za: int, zb: int, *,
         lat: np.ndarray | None = None, sites: tuple[np.ndarray, np.ndarray] | None = None,
         src: bool = True) -> np.ndarray:
    """Route weights as the objective wants them: Σ w·Lat (Formula 3.1) as given, or the
    route latency squared under the SBON objective (Formula 6.1)."""
    if inst.objective != "sbon":
        return weight
    if sites is not None and lat is not None:
        sub = lat[np.ix_(sites[0], sites[1])]
        return np.asarray(sub ** 2 if src else sub.T ** 2)
    return np.asarray(weight ** 2)
