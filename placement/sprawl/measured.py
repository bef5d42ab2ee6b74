"""A period's measured links overlaid on a job's configured topology (§3.2, §5.4.1).

SPRAWL plans on each link's latency Lat_l and bandwidth capacity (Formula 3.1, Eq. 4.5); the
thesis's system re-places operators when the network changes (§5.4.1, adaptation). A wide-area
job may land each period what its runtime measured on the links (Delta ``network_links``,
jobs/facets/links.py); the plan stage overlays it on the topology file before planning:

- a measured link replaces the configured link's latency and bandwidth; its cost weight w^BW,
  the sites, zones and pinned units stay configuration;
- a link that was not measured this period keeps its configured values;
- a measured bandwidth of 0 means the link is down: it leaves the network, so routes avoid it;
- a measured link that the file does not have, or a link measured twice, is an error
  (validate refuses such a period first; this is the overlay's own guard), and so is a
  network that the links down split in two.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx

from placement.facets import Link
from placement.sprawl.topology import Topology, TopologyError

__all__ = ["MeasuredLink", "measured_links", "overlay_links"]


@dataclass(frozen=True)
class MeasuredLink:
    """One link's measurement in a period: one-way latency (ms) and available bandwidth."""

    a: str
    b: str
    latency_ms: float
    bandwidth: float

    @property
    def key(self) -> frozenset[str]:
        return frozenset((self.a, self.b))


def measured_links(rows: Iterable[Mapping[str, Any]]) -> tuple[MeasuredLink, ...]:
    """`network_links` rows (a, b, latency_ms, bandwidth) as measurements."""
    return tuple(MeasuredLink(str(r["a"]), str(r["b"]), float(r["latency_ms"]),
                              float(r["bandwidth"])) for r in rows)


def overlay_links(topology: Topology, measured: Iterable[MeasuredLink],
                  where: str = "network_links") -> Topology:
    """`topology` with the period's measurements on its links (module docstring)."""
    by_key: dict[frozenset[str], MeasuredLink] = {}
    configured = {frozenset((lk.a, lk.b)) for lk in topology.network.links}
    for m in measured:
        name = f"{where}: link {m.a}-{m.b}"
        if m.key not in configured:
            raise TopologyError(f"{name} is not a link of the topology file; measure only its "
                                "links (a measurement updates a link, it adds none)")
        if m.key in by_key:
            raise TopologyError(f"{name} is measured more than once this period")
        if not (math.isfinite(m.latency_ms) and m.latency_ms > 0):
            raise TopologyError(f"{name}: latency_ms must be > 0 and finite, got {m.latency_ms!r}")
        if not m.bandwidth >= 0:
            raise TopologyError(f"{name}: bandwidth must be >= 0, got {m.bandwidth!r}")
        by_key[m.key] = m
    links: list[Link] = []
    down: list[str] = []
    for lk in topology.network.links:
        got = by_key.get(frozenset((lk.a, lk.b)))
        if got is None:
            links.append(lk)
        elif got.bandwidth == 0:
            down.append(f"{lk.a}-{lk.b}")
        else:
            links.append(dataclasses.replace(lk, latency_ms=got.latency_ms,
                                             bandwidth=got.bandwidth))
    graph = nx.Graph()
    graph.add_nodes_from(topology.network.site_ids)
    graph.add_edges_from((lk.a, lk.b) for lk in links)
    if not nx.is_connected(graph):
        parts = sorted((sorted(c) for c in nx.connected_components(graph)), key=len)
        raise TopologyError(f"{where}: with the links measured down this period "
                            f"({', '.join(down)}) the network is not connected (e.g. "
                            f"{parts[0][:5]} cannot reach {parts[-1][:5]})")
    network = dataclasses.replace(topology.network, links=tuple(links))
    return dataclasses.replace(topology, network=network)
