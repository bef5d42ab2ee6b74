"""The distributed SPRAWL DP over network domains (§4.4).

1. Partition (§4.4.1): the root cluster assigns every operator to a cluster by a DP "similar to
   Algorithm 1" that knows only the clusters' border nodes (§4.4.1: "the control module in each
   cluster only needs knowledge of its border nodes to compute partitioning"; §6.3.7: without
   the border nodes' routing information a network cannot be partitioned). Each cluster is
   represented by its border nodes, a pinned operator by its own site; edge costs are the
   placement's own objective (Formula 3.1, or 6.1 in §6.3: §4.4.3 lets the partition's BWCost be
   "adjusted accordingly") on the routes between those sites as the clusters see them (`_route`),
   and an operator's CPUCost is its cluster's cheapest host. An operator's cluster is that of its
   chosen site (`Partition.proxy`). `how="formula47"` is the literal Formula 4.7 (rate · Σ w^BW
   over the wide-area links of the cheapest cluster path, no latency, CPU 0, ties to the nearer
   cluster): the first reading, kept for comparison.
2. Per zone (§4.4.2): each zone runs Algorithm 1 on its sub-plan over its own sites, with its
   own routes (shortest paths on its internal links). For an edge from a sub-plan root r in
   child zone C to its consumer o in parent zone P, C sends OPCost_{r,j} for each of its sites
   j (the thesis's message, "an array of OPCost'_{r,j} for each Node_j in C") with its routes
   j → b_C to its border nodes; P adds the wide-area route b_C → b_P and its own b_P → k, takes
   the cheapest border pair, and then the cheapest j (Eq. 4.8, with the per-child min of 4.4).
   Route costs compose before the objective is applied, so Formula 6.1's Lat² is the square of
   the whole route's latency, not a sum of squared parts.
3. Deploy: P sends back the chosen root site; each zone deploys its sub-plan as in Algorithm 1.

Step 2 is exact for its partition, and the partition's proxy placement (every operator at its
proxy site) is one of the placements step 2 searches, so the distributed DP's cost is never
above the partition's estimate when every operator's CPUCost at its proxy is its cluster's
cheapest (tested for all inputs). It equals the central Algorithm 1 when (a) the partition is
correct (each operator in the zone the central optimum uses, §6.3.5), e.g. when the central
optimum puts every free operator on a border node, and (b) routes decompose at borders: every
intra-zone shortest route stays inside the zone and every inter-zone route passes border →
border (`routes_decompose`). `work` counts each zone's inner-loop evaluations (the N_c·N_p
terms of Θ(c·M_s·N_c²), §4.5.1): the zone that computes an edge's table is charged for it, and
the root cluster for step 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import networkx as nx
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from placement.sprawl.dp import tree_of
from placement.sprawl.instance import Instance
from placement.sprawl.topology import Routing, route_sums

__all__ = ["DistributedResult", "Partition", "PartitionRule", "Zones", "distributed_dp",
           "partition", "routes_decompose", "zones_of"]


@dataclass(frozen=True, eq=False)
class Zones:
    """The zones of a routed network: members, borders, intra-zone routes, zone costs."""

    names: tuple[str, ...]
    of_site: np.ndarray  # zone index of every site
    members: tuple[np.ndarray, ...]
    borders: tuple[np.ndarray, ...]  # per zone: positions (into members) of its border sites
    inner_lat: tuple[np.ndarray, ...]  # per zone: route latency inside the zone
    inner_cost: tuple[np.ndarray, ...]  # per zone: route Σ w^BW·Lat inside the zone
    wan: np.ndarray  # zone × zone: Σ w^BW of wide-area links on the cheapest zone path (4.7)
    zlat: np.ndarray  # zone × zone: min latency between their borders (4.7's tie-break)


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


PartitionRule = Literal["borders", "formula47"]


@dataclass(frozen=True)
class Partition:
    """Step 1's result: each operator's zone, the site that stood for it (a border node of its
    zone, or its pinned site; -1 under Formula 4.7) and the DP's cost estimate."""

    zone_of_op: np.ndarray
    proxy: np.ndarray
    cost: float
    work: int = 0  # inner-loop evaluations (the root cluster's)


def partition(inst: Instance, zones: Zones, how: PartitionRule = "borders") -> Partition:
    """Step 1: the zone of every operator (see the module docstring)."""
    if how == "formula47":
        return _formula47(inst, zones)
    nz = len(zones.names)
    pinned = {op: int(a[0]) for op in range(inst.m)
              if len(a := np.flatnonzero(np.isfinite(inst.cpu_cost[op]))) == 1}
    border_sites = [zones.members[z][zones.borders[z]] for z in range(nz)]
    sites = np.unique(np.concatenate([*border_sites, np.array(list(pinned.values()), dtype=int)]))
    col = {int(s): i for i, s in enumerate(sites)}
    zone = zones.of_site[sites]
    cost = np.full((inst.m, len(sites)), np.inf)
    for op in range(inst.m):
        if op in pinned:
            cost[op, col[pinned[op]]] = inst.cpu_cost[op, pinned[op]]
            continue
        for z in range(nz):
            cheapest = float(inst.cpu_cost[op, zones.members[z]].min())
            if np.isfinite(cheapest):  # the zone's borders stand for its cheapest host
                cost[op, [col[int(b)] for b in border_sites[z]]] = cheapest
    w = _proxy_routes(inst, zones, sites)
    proxy = _tree_dp(inst, cost, w)
    est = float(sum(cost[op, proxy[op]] for op in range(inst.m))
                + sum(rate * w[proxy[u], proxy[v]] for u, v, rate in inst.edges))
    return Partition(zone[proxy], sites[proxy], est, len(inst.edges) * len(sites) ** 2)


def _proxy_routes(inst: Instance, zones: Zones, sites: np.ndarray) -> np.ndarray:
    """Per unit of rate, the cost between the proxy sites as the zones see it (`_route`)."""
    w = np.empty((len(sites), len(sites)))
    of = zones.of_site[sites]
    at = np.array([int(np.searchsorted(zones.members[z], s)) for s, z in zip(sites, of,
                                                                            strict=True)])
    for za in np.unique(of):
        ia = np.flatnonzero(of == za)
        for zb in np.unique(of):
            ib = np.flatnonzero(of == zb)
            w[np.ix_(ia, ib)] = _route(inst, zones, int(za), int(zb))[np.ix_(at[ia], at[ib])]
    return w


def _tree_dp(inst: Instance, cost: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Algorithm 1 on candidate columns: `cost[op]` per column (∞: not allowed), `w[a, b]` the
    cost per unit of rate of data sent from column a to column b. The chosen column per op."""
    cost = cost.copy()
    tree = tree_of(inst.m, inst.edges, [q.sink for q in inst.queries])
    copt: dict[int, np.ndarray] = {}
    for op in tree.postorder:
        if op in tree.parent:
            par, e, is_src = tree.parent[op]
            table = cost[op][:, None] + inst.edges[e][2] * (w if is_src else w.T)
            cost[par] += table.min(axis=0)
            copt[op] = table.argmin(axis=0)  # ties: the lowest column, deterministic
    pick = np.zeros(inst.m, dtype=np.int64)
    for root in tree.roots:
        if not np.isfinite(cost[root]).any():
            raise ValueError(f"operator {inst.ops[root]!r}'s tree has no zone assignment "
                             "(an operator has no site it may run on)")
        pick[root] = int(np.argmin(cost[root]))
    for op in reversed(tree.postorder):
        if op in tree.parent:
            pick[op] = copt[op][pick[tree.parent[op][0]]]
    return pick


def _formula47(inst: Instance, zones: Zones) -> Partition:
    """Formula 4.7 as printed: rate · Σ w^BW of wide-area links, no latency, CPU 0."""
    nz = len(zones.names)
    cost = np.zeros((inst.m, nz))
    for op in range(inst.m):
        allowed = np.flatnonzero(np.isfinite(inst.cpu_cost[op]))
        ok = np.zeros(nz, dtype=bool)
        ok[np.unique(zones.of_site[allowed])] = True
        cost[op, ~ok] = np.inf
    w = zones.wan + 1e-6 * zones.zlat / max(1.0, float(zones.zlat.max()))
    z = _tree_dp(inst, cost, w)
    est = float(sum(rate * zones.wan[z[u], z[v]] for u, v, rate in inst.edges))
    return Partition(z, np.full(inst.m, -1, dtype=np.int64), est, len(inst.edges) * nz * nz)


@dataclass(frozen=True)
class DistributedResult:
    x: np.ndarray  # -1: reused through sharing
    cost: float  # the DP's own cost (routes through borders between zones)
    zone_of_op: np.ndarray
    work: Mapping[str, int]  # inner-loop evaluations per zone
    partition: Partition | None = None  # step 1 (None when the zones were given)


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
                   alternatives: Mapping[int, np.ndarray] | None = None,
                   how: PartitionRule = "borders") -> DistributedResult:
    """Steps 1–3 (see the module docstring); `zone_of_op` overrides step 1's partition;
    `alternatives` are §5.2.2's deployed providers, as in Algorithm 1 (§5.2.5)."""
    zones = zones if zones is not None else zones_of(inst.routing)
    part = partition(inst, zones, how) if zone_of_op is None else None
    z = part.zone_of_op if part is not None else np.asarray(zone_of_op)
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
    if part is not None:  # step 1 runs in each query's root cluster (its sink's)
        for root in tree.roots:
            work[zones.names[z[root]]] += part.work // len(tree.roots)
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
    return DistributedResult(x, total, z, work, part)
