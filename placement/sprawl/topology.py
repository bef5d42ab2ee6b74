"""The wide-area network of a job: its topology file, checked at load, and its routing (§2.2, §3.2).

A topology file (TOML or JSON) holds the sites (network nodes: zone, border flag, CPU cost weight
w^CPU), the undirected links (latency, bandwidth capacity, cost weight w^BW), the units pinned
to sites (sources and sinks) and the queries (sink unit, latency bound L_q, client site). It is
validated when it loads: every site id unique, every link between known sites with latency > 0,
the network connected, every pinned unit's site and every query's client a known site. A bad
file is a `TopologyError` naming the file, the entry and the fix.

Routing is by shortest latency (§3.2: "SPRAWL always picks up the shortest latency path"), all
pairs at once with scipy.sparse.csgraph (Dijkstra from every site; networkx checks connectivity
and builds the generator's graphs). Along each route we also keep Σ w^BW_l · Lat_l, the
per-unit-rate BWCost of Formula 3.1, and the links it crosses (for bandwidth constraints).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import stat
import tomllib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from placement.facets import Link, Network, Site
from placement.model import ClusterState
from schemas.errors import ReconfError
from schemas.limits import (
    TOPOLOGY_MAX_BYTES,
    TOPOLOGY_MAX_LINKS,
    TOPOLOGY_MAX_QUERIES,
    TOPOLOGY_MAX_SITES,
    id_problem,
)

__all__ = ["QuerySpec", "Routing", "Topology", "TopologyError", "load_topology",
           "parse_topology", "query_params", "route_sums", "routing_of", "with_topology"]


class TopologyError(ReconfError, ValueError):
    """A topology file is malformed: the message names the file, the entry and the fix."""


class _Site(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    node: str = Field(min_length=1)
    zone: str = ""
    border: bool = False
    cpu_cost: float = Field(1.0, ge=0, allow_inf_nan=False)


class _Link(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    a: str = Field(min_length=1)
    b: str = Field(min_length=1)
    latency_ms: float = Field(gt=0, allow_inf_nan=False)
    bandwidth: float = Field(math.inf, gt=0)
    cost: float = Field(1.0, ge=0, allow_inf_nan=False)


class _Query(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=1)
    sink: str = Field(min_length=1, description="the unit that delivers the query's results")
    latency_bound_ms: float = Field(math.inf, gt=0)
    client: str | None = None


class _TopologyFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    sites: list[_Site] = Field(min_length=1)
    links: list[_Link] = Field(default_factory=list)
    pinned: dict[str, str] = Field(default_factory=dict)
    queries: list[_Query] = Field(default_factory=list)


@dataclass(frozen=True)
class QuerySpec:
    """A query q: the unit delivering its results, its latency bound L_q, its client's site."""

    id: str
    sink: str
    latency_bound_ms: float = math.inf
    client: str | None = None


@dataclass(frozen=True)
class Topology:
    """A job's network facet (sites, links), its pinned units and its queries."""

    network: Network
    pinned: Mapping[str, str] = field(default_factory=dict)
    queries: tuple[QuerySpec, ...] = ()


def parse_topology(doc: Mapping[str, Any], where: str = "topology") -> Topology:
    """A `Topology` from a parsed document; TopologyError (never a traceback) when it is bad."""
    _check_size(doc, where)
    try:
        raw = _TopologyFile.model_validate(dict(doc))
    except ValidationError as exc:
        lines = []
        for err in exc.errors(include_url=False)[:10]:
            loc = ".".join(str(p) for p in err["loc"])
            # the value's type only, never the value: a `topology` path pointing at another
            # file (credentials, say) must not print what that file holds
            lines.append(f"{loc}: {err['msg']} (got a {type(err.get('input')).__name__})")
        raise TopologyError(f"{where}: " + "; ".join(lines)) from None
    ids = [s.node for s in raw.sites]
    if bad := [(i, p) for i in ids if (p := id_problem(i))][:1]:
        raise TopologyError(f"{where}: site id {bad[0][0][:60]!r} {bad[0][1]}; use letters, "
                            "digits, '_', '.', ':' or '-' (schemas/limits.py ID_PATTERN)")
    counts = Counter(ids)
    if dup := sorted(i for i, n in counts.items() if n > 1):
        raise TopologyError(f"{where}: site ids {dup} appear more than once; give each site "
                            "one [[sites]] entry")
    known = set(ids)
    for i, link in enumerate(raw.links):
        for end in (link.a, link.b):
            if end not in known:
                raise TopologyError(f"{where}: links[{i}] ({link.a}-{link.b}) names unknown "
                                    f"site {end!r}; add it to [[sites]] or fix the name")
        if link.a == link.b:
            raise TopologyError(f"{where}: links[{i}] joins site {link.a!r} to itself")
    graph = nx.Graph()
    graph.add_nodes_from(ids)
    graph.add_edges_from((link.a, link.b) for link in raw.links)
    if not nx.is_connected(graph):
        parts = sorted((sorted(c) for c in nx.connected_components(graph)), key=len)
        raise TopologyError(f"{where}: the network is not connected ({len(parts)} parts; e.g. "
                            f"{parts[0][:5]} cannot reach {parts[-1][:5]}); add links so every "
                            "site can reach every other")
    for unit, node in raw.pinned.items():
        if node not in known:
            raise TopologyError(f"{where}: unit {unit!r} is pinned to unknown site {node!r}; "
                                "pin it to one of the [[sites]]")
    for q in raw.queries:
        client = q.client if q.client is not None else raw.pinned.get(q.sink)
        if client is not None and client not in known:
            raise TopologyError(f"{where}: query {q.id!r} has unknown client site {client!r}")
    network = Network(
        sites=tuple(Site(s.node, s.zone, s.border, s.cpu_cost) for s in raw.sites),
        links=tuple(Link(lk.a, lk.b, lk.latency_ms, lk.bandwidth, lk.cost) for lk in raw.links))
    queries = tuple(QuerySpec(q.id, q.sink, q.latency_bound_ms,
                              q.client if q.client is not None else raw.pinned.get(q.sink))
                    for q in raw.queries)
    return Topology(network, dict(raw.pinned), queries)


def _check_size(doc: Mapping[str, Any], where: str) -> None:
    """The size limits of schemas/limits.py, before anything costs more than a count: routing
    is all-pairs over the sites (module docstring), so an unbounded file is an unbounded plan."""
    for key, limit in (("sites", TOPOLOGY_MAX_SITES), ("links", TOPOLOGY_MAX_LINKS),
                       ("queries", TOPOLOGY_MAX_QUERIES), ("pinned", TOPOLOGY_MAX_SITES * 100)):
        entries = doc.get(key)
        if isinstance(entries, list | dict) and len(entries) > limit:
            raise TopologyError(f"{where}: {len(entries)} {key}, over the limit of {limit} "
                                f"(schemas/limits.py); plan a network this size in parts, e.g. "
                                "one job per region")


def load_topology(path: str | Path) -> Topology:
    """Read a topology file (.toml or .json) and validate it (see the module docstring)."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the stage
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise TopologyError(f"topology file {path}: not a regular file")
            data = handle.read(TOPOLOGY_MAX_BYTES + 1)
        if len(data) > TOPOLOGY_MAX_BYTES:
            raise TopologyError(f"topology file {path}: over the {TOPOLOGY_MAX_BYTES}-byte "
                                "limit (schemas/limits.py)")
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TopologyError(f"topology file {path}: not UTF-8 text") from None
    except OSError as exc:
        raise TopologyError(f"topology file {path}: cannot be read ({exc.strerror})") from None
    try:
        doc = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TopologyError(f"topology file {path}: not valid "
                            f"{'JSON' if path.suffix == '.json' else 'TOML'}: {exc}") from None
    return parse_topology(doc, f"topology file {path}")


def with_topology(state: ClusterState, topology: Topology, where: str = "topology"
                  ) -> ClusterState:
    """`state` with the topology's network and pinned units (for the plan stage): a
    TopologyError when the state's nodes are not sites or a pinned unit is not one of its
    units."""
    try:
        return dataclasses.replace(state, network=topology.network,
                                   pinned={**state.pinned, **topology.pinned})
    except ValueError as exc:
        raise TopologyError(f"{where}: does not fit the job's statistics: {exc}") from None


def query_params(topology: Topology) -> list[dict[str, Any]]:
    """The topology's queries as `SprawlParams.queries` entries."""
    return [{"id": q.id, "sink": q.sink, "latency_bound_ms": q.latency_bound_ms,
             "client": q.client} for q in topology.queries]


@dataclass(frozen=True, eq=False)
class Routing:
    """All-pairs shortest-latency routes over the sites of a network.

    `latency[i, j]` is the route's latency (ms); `pathcost[i, j]` is Σ w^BW_l · Lat_l along
    it (Formula 3.1's BWCost per unit of rate); `pred` the Dijkstra predecessors."""

    sites: tuple[str, ...]
    index: Mapping[str, int]
    latency: np.ndarray
    pathcost: np.ndarray
    pred: np.ndarray
    links: tuple[Link, ...]
    link_of: Mapping[tuple[int, int], int]
    zone: tuple[str, ...]
    border: np.ndarray

    @property
    def n(self) -> int:
        return len(self.sites)

    def path_links(self, i: int, j: int) -> list[int]:
        """The links (indexes into `links`) of the route from site i to site j."""
        out: list[int] = []
        while j != i:
            p = int(self.pred[i, j])
            out.append(self.link_of[(p, j)])
            j = p
        return out

    def link_incidence(self) -> np.ndarray:
        """use[i, j, l] = 1 if the route i→j crosses link l (for small networks only)."""
        use = np.zeros((self.n, self.n, len(self.links)), dtype=np.float64)
        for i in range(self.n):
            for j in range(self.n):
                for lk in self.path_links(i, j):
                    use[i, j, lk] = 1.0
        return use


def routing_of(network: Network) -> Routing:
    """Shortest-latency routes between every pair of sites (Dijkstra from each, scipy)."""
    sites = network.site_ids
    index = {s: i for i, s in enumerate(sites)}
    n = len(sites)
    rows, cols, lat = [], [], []
    link_of: dict[tuple[int, int], int] = {}
    weight = np.zeros((n, n))
    for li, link in enumerate(network.links):
        a, b = index[link.a], index[link.b]
        old = link_of.get((a, b))
        if old is not None and network.links[old].latency_ms <= link.latency_ms:
            continue  # parallel links: the faster one routes
        link_of[(a, b)] = link_of[(b, a)] = li
        weight[a, b] = weight[b, a] = link.cost * link.latency_ms
    for (a, b), li in link_of.items():
        rows.append(a)
        cols.append(b)
        lat.append(network.links[li].latency_ms)
    graph = csr_matrix((lat, (rows, cols)), shape=(n, n))
    dist, pred = dijkstra(graph, directed=True, return_predecessors=True)
    if not np.all(np.isfinite(dist)):
        raise TopologyError("network: not connected; add links so every site can reach every "
                            "other")
    pathcost = route_sums(pred, weight)
    zones = {s.node: s.zone for s in network.sites}
    borders = {s.node: s.border for s in network.sites}
    return Routing(sites, index, dist, pathcost, pred, network.links, link_of,
                   tuple(zones[s] for s in sites), np.array([borders[s] for s in sites]))


def route_sums(pred: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Σ weight along every route, walking all predecessor trees at once (one numpy pass per
    hop of the longest route, instead of a Python walk per pair)."""
    n = pred.shape[0]
    rows = np.arange(n)[:, None]
    parent = np.where(pred < 0, np.arange(n)[None, :], pred)
    total = weight[parent, np.arange(n)[None, :]]
    total[pred < 0] = 0.0
    hop = parent.copy()
    while True:
        nxt = parent[rows, hop]
        if np.array_equal(nxt, hop):
            break
        total += weight[nxt, hop] * (nxt != hop)
        hop = nxt
    return total
