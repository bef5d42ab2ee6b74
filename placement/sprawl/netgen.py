"""Networks for the thesis's experiments (§6.2, §6.3, §6.4), built with networkx.

GT-ITM (Zegura et al. 1996), which the thesis used, is not installable here; `transit_stub`
follows its transit–stub model: `domains` transit domains, each a connected random graph of
`transit` transit nodes; each transit node has `stubs` stub domains, each a connected random
graph of `stub_size` nodes attached to it by one link; transit domains are joined by a
connected random graph of inter-domain links between random transit nodes. Nodes lie in a
plane (domains on a 1000×1000 square, transit nodes within 100 of their domain's centre, stub
domains within 50 of their transit node, stub nodes within 15 of their stub's centre) and a
link's latency is the Euclidean distance (≥ 1 ms). The thesis's size is 10 × 5 × (1 + 3 × 10)
= 1,550 nodes. A zone is a transit domain (the cluster of §4.4, with its stubs); its transit
nodes are the border nodes. Random-graph edge probability inside a domain: `p_in` (0.5).

`random_plane`: the §6.3.7 networks, n nodes on a 100×100 plane joined with probability
`connectivity` (1.0: complete), made connected by adding the shortest missing links.

`transit_stub_plane` and `random_plane_of` also return each site's position in the plane, the
"network node coordinates" SBON's relaxation maps its cost space back to (§6.2.3, §6.3.4).

`clusters`: the §6.2/§6.4 networks, `zones` clusters of `size` nodes (complete inside, latency
5–20 ms), clusters joined by wide-area links between their border nodes (latency 60–200 ms).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import networkx as nx
import numpy as np

from placement.facets import Link, Network, Site

__all__ = ["PlaneNetwork", "clusters", "random_plane", "random_plane_of", "transit_stub",
           "transit_stub_plane"]


@dataclass(frozen=True, eq=False)
class PlaneNetwork:
    """A generated network and each site's (x, y) in the plane, in `network.site_ids` order."""

    network: Network
    coords: np.ndarray


def _connected_gnp(nodes: list[str], p: float, rng: np.random.Generator) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(nodes)
    for a, b in itertools.combinations(nodes, 2):
        if rng.random() < p:
            g.add_edge(a, b)
    comps = sorted(sorted(c) for c in nx.connected_components(g))  # not by str hash order
    for c1, c2 in itertools.pairwise(comps):
        g.add_edge(c1[int(rng.integers(len(c1)))], c2[int(rng.integers(len(c2)))])
    return g


def _network(g: nx.Graph, pos: dict[str, np.ndarray], zone: dict[str, str],
             border: set[str], bandwidth: float = math.inf) -> PlaneNetwork:
    sites = tuple(Site(n, zone[n], n in border) for n in g.nodes)
    links = tuple(Link(a, b, max(1.0, float(np.linalg.norm(pos[a] - pos[b]))), bandwidth)
                  for a, b in g.edges)
    return PlaneNetwork(Network(sites, links), np.array([pos[n] for n in g.nodes]))


def transit_stub(seed: int, *, domains: int = 10, transit: int = 5, stubs: int = 3,
                 stub_size: int = 10, p_in: float = 0.5) -> Network:
    """A GT-ITM-like transit–stub network (see the module docstring)."""
    return transit_stub_plane(seed, domains=domains, transit=transit, stubs=stubs,
                              stub_size=stub_size, p_in=p_in).network


def transit_stub_plane(seed: int, *, domains: int = 10, transit: int = 5, stubs: int = 3,
                       stub_size: int = 10, p_in: float = 0.5) -> PlaneNetwork:
    """`transit_stub` with its sites' positions in the plane."""
    rng = np.random.default_rng(seed)
    g = nx.Graph()
    pos: dict[str, np.ndarray] = {}
    zone: dict[str, str] = {}
    border: set[str] = set()
    heads: list[list[str]] = []
    for d in range(domains):
        centre = rng.uniform(0, 1000, 2)
        tnodes = [f"t{d}.{t}" for t in range(transit)]
        heads.append(tnodes)
        for t in tnodes:
            pos[t] = centre + rng.uniform(-100, 100, 2)
            zone[t] = f"d{d}"
            border.add(t)
        g.update(_connected_gnp(tnodes, p_in, rng))
        for ti, t in enumerate(tnodes):
            for s in range(stubs):
                sc = pos[t] + rng.uniform(-50, 50, 2)
                snodes = [f"s{d}.{ti}.{s}.{k}" for k in range(stub_size)]
                for sn in snodes:
                    pos[sn] = sc + rng.uniform(-15, 15, 2)
                    zone[sn] = f"d{d}"
                g.update(_connected_gnp(snodes, p_in, rng))
                g.add_edge(t, snodes[int(rng.integers(stub_size))])
    top = _connected_gnp([str(d) for d in range(domains)], p_in, rng)
    for a, b in top.edges:
        ha, hb = heads[int(a)], heads[int(b)]
        g.add_edge(ha[int(rng.integers(len(ha)))], hb[int(rng.integers(len(hb)))])
    return _network(g, pos, zone, border)


def random_plane(seed: int, *, n: int = 50, connectivity: float = 0.1,
                 size: float = 100.0) -> Network:
    """§6.3.7: n nodes on a size×size plane, each pair linked with prob. `connectivity`."""
    return random_plane_of(seed, n=n, connectivity=connectivity, size=size).network


def random_plane_of(seed: int, *, n: int = 50, connectivity: float = 0.1,
                    size: float = 100.0) -> PlaneNetwork:
    """`random_plane` with its sites' positions in the plane."""
    rng = np.random.default_rng(seed)
    nodes = [f"n{i}" for i in range(n)]
    pos = {v: rng.uniform(0, size, 2) for v in nodes}
    g = nx.Graph()
    g.add_nodes_from(nodes)
    for a, b in itertools.combinations(nodes, 2):
        if rng.random() < connectivity:
            g.add_edge(a, b)
    while not nx.is_connected(g):  # the shortest link between two components
        comps = sorted(sorted(c) for c in nx.connected_components(g))
        a, b = min(((u, v) for u in comps[0] for c in comps[1:] for v in c),
                   key=lambda e: float(np.linalg.norm(pos[e[0]] - pos[e[1]])))
        g.add_edge(a, b)
    return _network(g, pos, dict.fromkeys(nodes, ""), set())


def clusters(seed: int, *, zones: int = 3, size: int = 10, borders: int = 2,
             bandwidth: float = math.inf, wan_bandwidth: float = math.inf,
             wan_cost: float = 1.0, p_link: float = 1.0) -> Network:
    """§6.2 / §6.4: `zones` clusters of `size` nodes (complete, or each pair linked with
    probability `p_link` and made connected) joined through border nodes."""
    rng = np.random.default_rng(seed)
    sites: list[Site] = []
    links: list[Link] = []
    heads: list[list[str]] = []
    for z in range(zones):
        nodes = [f"z{z}.{i}" for i in range(size)]
        heads.append(nodes[:borders])
        sites.extend(Site(v, f"z{z}", i < borders, float(rng.uniform(1, 3)))
                     for i, v in enumerate(nodes))
        inner = _connected_gnp(nodes, p_link, rng) if p_link < 1 else None
        links.extend(Link(a, b, float(rng.uniform(5, 20)), bandwidth, float(rng.uniform(1, 3)))
                     for a, b in (inner.edges if inner is not None
                                  else itertools.combinations(nodes, 2)))
    for z1, z2 in itertools.combinations(range(zones), 2):
        for a in heads[z1]:
            for b in heads[z2]:
                links.append(Link(a, b, float(rng.uniform(60, 200)), wan_bandwidth,
                                  wan_cost * float(rng.uniform(1, 3))))
    return Network(tuple(sites), tuple(links))
