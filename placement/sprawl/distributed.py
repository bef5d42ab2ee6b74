"""The distributed SPRAWL DP over network domains (§4.4).

1. Partition (§4.4.1, Formula 4.7): the plan is placed over zones (clusters) with the same DP,
   CPU cost 0 and an edge's cost rate · (Σ w^BW over the wide-area links between the zones):
   wide-area links are the links whose ends are in different zones, and zone-to-zone costs are
   shortest paths on the zone graph. Pinned operators stay in their site's zone. Ties (equal
   wide-area cost) go to the zone whose border is nearer in latency (a 1e-6 tie-break).
2. Per zone (§4.4.2): each zone runs Algorithm 1 on its sub-plan over its own sites, with its
   own routes (shortest paths on its internal links). For an edge from a sub-plan root r in
   child zone C to its consumer o in parent zone P, C sends OPCost_{r,j} for each of its sites
   j (the thesis's message, "an array of OPCost'_{r,j} for each Node_j in C") with its routes
   j → b_C to its border nodes; P adds the wide-area route b_C → b_P and its own b_P → k, takes
   the cheapest border pair, and then the cheapest j (Eq. 4.8, with the per-child min of 4.4).
   Route costs compose before the objective is applied, so Formula 6.1's Lat² is the square of
   the whole route's latency, not a sum of squared parts.
3. Deploy: P sends back the chosen root site; each zone deploys its sub-plan as in Algorithm 1.

It equals the central Algorithm 1 when (a) the partition is correct (each operator in the zone
the central optimum uses, §6.3.5) and (b) routes decompose at borders: every intra-zone shortest
route stays inside the zone and every inter-zone route passes border → border; tests check
this on networks built so. `work` counts each zone's inner-loop evaluations (the N_c·N_p terms of
Θ(c·M_s·N_c²), §4.5.1): the zone that computes an edge's table is charged for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import networkx as nx
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from placement.sprawl.dp import tree_of
from placement.sprawl.instance import Instance
from placement.sprawl.topology import Routing, route_sums

__all__ = ["DistributedResult", "Zones", "distributed_dp", "partition", "routes_decompose",
           "zones_of"]


@dataclass(frozen=True, eq=False)
class Zones:
    """The zones of a routed network: members, borders, intra-zone routes, zone costs."""

    names: tuple[str, ...]
    of_site: np.ndarray  # zone index of every site
    members: tuple[np.ndarray, ...]
    borders: tuple[np.ndarray, ...]  # per zone: positions (into members) of its border sites
    inner_lat: tuple[np.ndarray, ...]  # per zone: route latency inside the zone
    inner_cost: tuple[np.ndarray, ...]  # per zone: route Σ w^BW·Lat inside the zone
    wan: np.ndarray  # zone × zone: Σ w^BW of wide-area links on the cheapest zone path
    zlat: np.ndarray  # zone × zone: min latency between their borders (tie-break)


def zones_of(r: Routing) -> Zones:
    """Zones, borders and each zone's own routes (shortest paths on its internal links)."""
    names = tuple(sorted(set(r.zone)))
    zi = {z: i for i, z in enumerate(names)}
    of_site = np.array([zi[z] for z in r.zone])
    members = tuple(np.flatnonzero(of_site == i) for i in range(len(names)))
    borders = tuple(np.flatnonzero(r.border[m]) if r.border[m].any() else np.arange(len(m))
                    for m in members)
    inner_lat, inner_cost = [], []
    for m in members:
        pos = {int(s): k for k, s in enumerate(m)}
        rows, cols, lat, cost = [], [], [], []
        for link in r.links:
            a, b = r.index[link.a], r.index[link.b]
            if a in pos and b in pos:
                rows += [pos[a], pos[b]]
                cols += [pos[b], pos[a]]
                lat += [link.latency_ms] * 2
                cost += [link.cost * link.latency_ms] * 2
        graph = csr_matrix((lat, (rows, cols)), shape=(len(m), len(m)))
        dist, pred = dijkstra(graph, directed=True, return_predecessors=True)
        inner_lat.append(dist)
        weight = csr_matrix((cost, (rows, cols)), shape=(len(m), len(m))).toarray()
        inner_cost.append(np.where(np.isfinite(dist), route_sums(pred, weight), np.inf))
    g = nx.Graph()
    g.add_nodes_from(range(len(names)))
    for link in r.links:
        za, zb = int(of_site[r.index[link.a]]), int(of_site[r.index[link.b]])
        if za != zb:
            old = g.get_edge_data(za, zb, {"w": np.inf})["w"]
            g.add_edge(za, zb, w=min(old, link.cost))
    wan = np.array([[nx.shortest_path_length(g, a, b, weight="w") for b in g.nodes]
                    for a in g.nodes], dtype=float)
    zlat = np.array([[float(r.latency[np.ix_(members[a][borders[a]],
                                             members[b][borders[b]])].min())
                      for b in range(len(names))] for a in range(len(names))])
    return Zones(names, of_site, members, borders, tuple(inner_lat), tuple(inner_cost), wan,
                 zlat)


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
    x: np.ndarray  # -1: reused through sharing
    cost: float  # the DP's own cost (routes through borders between zones)
    zone_of_op: np.ndarray
    work: Mapping[str, int]  # inner-loop evaluations per zone


def _route(inst: Instance, zones: Zones, zc: int, zp: int) -> np.ndarray:
    """See `_zone_route` (cached per network, zones, objective and β)."""
    return _zone_route(inst.routing, zones, inst.objective == "sbon", inst.beta, zc, zp)


@lru_cache(maxsize=512)
def _zone_route(r: Routing, zones: Zones, squared: bool, beta: float, zc: int, zp: int
                ) -> np.ndarray:
    """Per unit of rate, the cost from each site of zone zc to each site of zone zp as the
    zones see it: inside one zone its own routes; across zones the child's route to one of its
    borders, the wide-area route border → border, the parent's route from its border, the
    cheapest border pair (the child's message holds one value per own site and border)."""
    inner = zones.inner_lat if squared else zones.inner_cost
    if zc == zp:
        route = inner[zc]
    else:
        glob = r.latency if squared else r.pathcost
        bc, bp = zones.borders[zc], zones.borders[zp]
        wan = glob[np.ix_(zones.members[zc][bc], zones.members[zp][bp])]
        to_bp = (inner[zc][:, bc][:, :, None] + wan[None, :, :]).min(axis=1)  # j × b_P
        route = (to_bp[:, :, None] + inner[zp][bp, :][None, :, :]).min(axis=1)  # j × k
    out = np.asarray(route ** 2 if squared else beta * route)
    out.setflags(write=False)
    return out


def routes_decompose(inst: Instance, zones: Zones) -> bool:
    """The condition under which the zones' routes are the network's: every zone pair's
    composed routes (`_route`) equal the global shortest routes (condition (b) above)."""
    for a in range(len(zones.names)):
        for b in range(len(zones.names)):
            mine = _route(inst, zones, a, b)
            glob = inst.weight[np.ix_(zones.members[a], zones.members[b])]
            if not np.allclose(mine, glob, rtol=1e-9, atol=1e-9):
                return False
    return True


def distributed_dp(inst: Instance, zones: Zones | None = None,
                   zone_of_op: np.ndarray | None = None,
                   alternatives: Mapping[int, np.ndarray] | None = None) -> DistributedResult:
    """Steps 1–3 (see the module docstring); `zone_of_op` overrides step 1's partition;
    `alternatives` are §5.2.2's deployed providers, as in Algorithm 1 (§5.2.5)."""
    zones = zones if zones is not None else zones_of(inst.routing)
    z = partition(inst, zones) if zone_of_op is None else np.asarray(zone_of_op)
    tree = tree_of(inst.m, inst.edges, [q.sink for q in inst.queries])
    vec = {op: inst.cpu_cost[op, zones.members[z[op]]].astype(float) for op in tree.postorder}
    copt: dict[int, np.ndarray] = {}
    elided: dict[int, np.ndarray] = {}
    work = dict.fromkeys(zones.names, 0)
    for op in tree.postorder:
        if op not in tree.parent:
            continue
        par, e, is_src = tree.parent[op]
        zc, zp = int(z[op]), int(z[par])
        route = _route(inst, zones, zc, zp) if is_src else _route(inst, zones, zp, zc).T
        table = vec[op][:, None] + inst.edges[e][2] * route
        arg = table.argmin(axis=0)
        best = table[arg, np.arange(table.shape[1])]
        if alternatives and is_src and e in alternatives:
            alt = alternatives[e][zones.members[zp]]
            elided[op] = alt < best
            best = np.minimum(best, alt)
        vec[par] += best
        copt[op] = arg
        work[zones.names[zp]] += table.size
    local = np.full(inst.m, -1, dtype=np.int64)
    total = 0.0
    for root in tree.roots:
        local[root] = int(np.argmin(vec[root]))
        total += float(vec[root][local[root]])
    for op in reversed(tree.postorder):
        if op in tree.parent:
            at = local[tree.parent[op][0]]
            if at >= 0 and not (op in elided and elided[op][at]):
                local[op] = copt[op][at]
    x = np.array([zones.members[z[op]][local[op]] if local[op] >= 0 else -1
                  for op in range(inst.m)], dtype=np.int64)
    return DistributedResult(x, total, z, work)
