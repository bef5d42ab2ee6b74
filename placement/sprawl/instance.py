"""One placement instance of SPRAWL and its cost (Formula 3.1, Eq. 4.5), index-based for speed.

Operators op_0..op_{M-1}, sites 0..N-1 of a `Routing`. Data flows along `edges` (u → v with
rate BW_(u,v)); a query plan is a tree of them rooted at its sink (§2.3). CPUCost_{op,n} is
`cpu_cost[op, n]`: w^CPU_n · CPU_op, and ∞ where op may not run (a pinned source or sink on
any other site, §4.2.2; a site that is a router only). BWCost of an edge placed k → n is
`rate · weight[k, n]`, with weight = β · Σ_{l ∈ route} w^BW_l · Lat_l (Formula 3.1, choice:
the rate multiplies the route's cost, the thesis's line 12 of Algorithm 1 omits it) or, for the
SBON comparison of §6.3, weight = Lat_route² (Formula 6.1, SBON's spring energy; no CPU term).

Constraints (§3.2.3): `cpu_cap[n]` what is left of site n's CPU, `link_cap[l]` of link l's
bandwidth (None: unconstrained), and per query Lat_q ≤ L_q, Lat_q by Eq. 4.5 with Lat_proc = 0
(the thesis treats it as a negligible constant) plus the route from the sink to the client.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Literal

import numpy as np

from placement.sprawl.topology import Routing

__all__ = ["Evaluation", "Instance", "QueryIdx", "evaluate"]

Objective = Literal["resource", "sbon"]


@dataclass(frozen=True)
class QueryIdx:
    """A query by index: its sink operator, latency bound L_q (ms) and client site."""

    sink: int
    bound: float = math.inf
    client: int | None = None


@dataclass(frozen=True, eq=False)
class Instance:
    """Operators, data edges, CPU costs, constraints and queries on one routed network."""

    routing: Routing
    ops: tuple[str, ...]
    cpu: np.ndarray
    cpu_cost: np.ndarray
    edges: tuple[tuple[int, int, float], ...]
    beta: float = 1.0
    objective: Objective = "resource"
    cpu_cap: np.ndarray | None = None
    link_cap: np.ndarray | None = None
    queries: tuple[QueryIdx, ...] = ()

    def __post_init__(self) -> None:
        m, n = len(self.ops), self.routing.n
        if self.cpu.shape != (m,) or self.cpu_cost.shape != (m, n):
            raise ValueError(f"instance: cpu {self.cpu.shape} / cpu_cost {self.cpu_cost.shape} "
                             f"do not match {m} operators on {n} sites")
        for u, v, rate in self.edges:
            if not (0 <= u < m and 0 <= v < m) or u == v or rate < 0:
                raise ValueError(f"instance: bad data edge {u}->{v} rate {rate}")

    @property
    def m(self) -> int:
        return len(self.ops)

    @property
    def n(self) -> int:
        return self.routing.n

    @cached_property
    def weight(self) -> np.ndarray:
        """BWCost per unit of rate between every pair of sites (see the module docstring)."""
        return _weight(self.routing, self.beta, self.objective)

    @property
    def constrained(self) -> bool:
        return (self.cpu_cap is not None or self.link_cap is not None
                or any(math.isfinite(q.bound) for q in self.queries))

    def with_cpu_cost(self, cpu_cost: np.ndarray) -> Instance:
        return Instance(self.routing, self.ops, self.cpu, cpu_cost, self.edges, self.beta,
                        self.objective, self.cpu_cap, self.link_cap, self.queries)

    def unconstrained(self) -> Instance:
        return Instance(self.routing, self.ops, self.cpu, self.cpu_cost, self.edges, self.beta,
                        self.objective, None, None,
                        tuple(QueryIdx(q.sink, math.inf, q.client) for q in self.queries))


@lru_cache(maxsize=4)
def _weight(routing: Routing, beta: float, objective: Objective) -> np.ndarray:
    """One N×N table per (network, β, objective), shared by every instance on it (read-only)."""
    table = routing.latency ** 2 if objective == "sbon" else beta * routing.pathcost
    table = np.asarray(table)
    table.setflags(write=False)
    return table


@dataclass(frozen=True)
class Evaluation:
    """The cost of a placement and what it uses: Formula 3.1's two terms, loads, latencies."""

    cost_cpu: float
    cost_network: float
    node_cpu: np.ndarray
    link_bw: np.ndarray
    latency: tuple[float, ...]
    wan_rate: float
    violations: tuple[str, ...]

    @property
    def total(self) -> float:
        return self.cost_cpu + self.cost_network

    @property
    def feasible(self) -> bool:
        return not self.violations


def evaluate(inst: Instance, x: np.ndarray | list[int], *, eps: float = 1e-9) -> Evaluation:
    """Formula 3.1 for placement x (operator → site index), its loads and its violations.

    `wan_rate` is Σ rate · (wide-area links crossed), a link being wide-area when its ends are
    in different zones: the bytes per second the plan sends over the WAN, counted per link."""
    x = np.asarray(x, dtype=np.int64)
    r = inst.routing
    cpu_cost = float(inst.cpu_cost[np.arange(inst.m), x].sum())
    net = 0.0
    link_bw = np.zeros(len(r.links))
    wan = 0.0
    for u, v, rate in inst.edges:
        net += rate * float(inst.weight[x[u], x[v]])
        for lk in r.path_links(int(x[u]), int(x[v])):
            link_bw[lk] += rate
            a, b = r.index[r.links[lk].a], r.index[r.links[lk].b]
            wan += rate if r.zone[a] != r.zone[b] else 0.0
    node_cpu = np.zeros(inst.n)
    np.add.at(node_cpu, x, inst.cpu)
    latency = tuple(query_latency(inst, x, q) for q in inst.queries)
    bad: list[str] = []
    if inst.cpu_cap is not None:
        for n in np.flatnonzero(node_cpu > inst.cpu_cap + eps).tolist():
            bad.append(f"cpu on {r.sites[n]}: {node_cpu[n]:g} > {inst.cpu_cap[n]:g}")
    if inst.link_cap is not None:
        for lk in np.flatnonzero(link_bw > inst.link_cap + eps).tolist():
            link = r.links[lk]
            bad.append(f"bandwidth on {link.a}-{link.b}: {link_bw[lk]:g} > {inst.link_cap[lk]:g}")
    for q, lat in zip(inst.queries, latency, strict=True):
        if lat > q.bound + eps:
            bad.append(f"latency of {inst.ops[q.sink]}: {lat:g} > {q.bound:g} ms")
    return Evaluation(cpu_cost, net, node_cpu, link_bw, latency, wan, tuple(bad))


def arrival_latency(inst: Instance, x: np.ndarray) -> np.ndarray:
    """Eq. 4.5 per operator: the longest route latency from any leaf to it (Lat_proc = 0)."""
    lat = np.zeros(inst.m)
    incoming: dict[int, list[tuple[int, float]]] = {}
    for u, v, _ in inst.edges:
        incoming.setdefault(v, []).append((u, 0.0))
    done: dict[int, float] = {}

    def visit(op: int) -> float:
        if op in done:
            return done[op]
        done[op] = 0.0  # guards against cycles (the MILP handles non-trees)
        best = 0.0
        for u, _ in incoming.get(op, []):
            best = max(best, visit(u) + float(inst.routing.latency[x[u], x[op]]))
        done[op] = best
        return best

    for op in range(inst.m):
        lat[op] = visit(op)
    return lat


def query_latency(inst: Instance, x: np.ndarray, q: QueryIdx) -> float:
    """Lat_q: Eq. 4.5 at the sink plus the route from the sink to the client."""
    lat = arrival_latency(inst, x)[q.sink]
    if q.client is not None:
        lat += float(inst.routing.latency[x[q.sink], q.client])
    return float(lat)
