"""The optional facets of the planner's model (DESIGN.md, "Facets: one model for five papers").

Each facet is empty unless a job's statistics provide it; a strategy names the facets it needs
(schemas/strategies.py) and the plan stage refuses a job whose data lack them. The core model
(`placement.model.ClusterState`) holds one field per facet and checks, through `check_facets`,
that each names only units and nodes it knows.

- sources & subscriptions (Herding, Zong et al. 2015 §2): sources S with rates w(s); unit q
  reads S_q. A source is shipped once to every node that hosts at least one of its readers.
- load model (ROD, Xing et al. 2006 §3): input streams I_1..I_d with rates r_k (and optional
  lower bounds, §6.1); unit i's load is Σ_k l_ik · r_k with coefficients l_ik ≥ 0.
- network (SPRAWL, Mei 2015 §3): sites (zone, border flag, CPU cost weight), links (latency,
  bandwidth capacity, cost weight), and units pinned to nodes (sources, sinks).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from placement.subscriptions import Subscriptions

__all__ = [
    "FACET_NAMES",
    "Link",
    "Network",
    "Site",
    "Source",
    "Stream",
    "check_facets",
]

#: the facet names a strategy may require (schemas/strategies.py `facets`)
FACET_NAMES = ("communication", "sources", "utilisation", "load_model", "network", "arrivals")


def _finite_non_negative(value: float, what: str) -> None:
    if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be a finite number >= 0, got {value!r}")


def _finite_positive(value: float, what: str) -> None:
    if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be a finite number > 0, got {value!r}")


def _non_empty_id(value: object, what: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} id must be a non-empty string, got {value!r}")


@dataclass(frozen=True)
class Source:
    """A shared source s: its weight w(s) (`rate`, tuples/s) and its bytes per second."""

    id: str
    rate: float
    bytes_per_s: float = 0.0

    def __post_init__(self) -> None:
        _non_empty_id(self.id, "source")
        _finite_non_negative(self.rate, f"source {self.id!r}: rate")
        _finite_non_negative(self.bytes_per_s, f"source {self.id!r}: bytes_per_s")


@dataclass(frozen=True)
class Stream:
    """An input stream I_k of ROD's load model: its observed rate r_k and lower bound (§6.1)."""

    id: str
    rate: float
    min_rate: float = 0.0

    def __post_init__(self) -> None:
        _non_empty_id(self.id, "stream")
        _finite_non_negative(self.rate, f"stream {self.id!r}: rate")
        _finite_non_negative(self.min_rate, f"stream {self.id!r}: min_rate")
        if self.min_rate > self.rate:
            raise ValueError(
                f"stream {self.id!r}: min_rate {self.min_rate!r} is above the observed rate "
                f"{self.rate!r}; a lower bound must not exceed what was observed"
            )


@dataclass(frozen=True)
class Site:
    """A network node: the zone (domain) it is in, whether it is a border node, CPU cost weight."""

    node: str
    zone: str = ""
    border: bool = False
    cpu_cost: float = 1.0

    def __post_init__(self) -> None:
        _non_empty_id(self.node, "site")
        _finite_non_negative(self.cpu_cost, f"site {self.node!r}: cpu_cost")


@dataclass(frozen=True)
class Link:
    """An undirected network link: latency (ms, > 0), bandwidth capacity, cost weight."""

    a: str
    b: str
    latency_ms: float
    bandwidth: float = math.inf
    cost: float = 1.0

    def __post_init__(self) -> None:
        _non_empty_id(self.a, "link end")
        _non_empty_id(self.b, "link end")
        if self.a == self.b:
            raise ValueError(f"link {self.a!r}-{self.b!r}: a link joins two different sites")
        _finite_positive(self.latency_ms, f"link {self.a!r}-{self.b!r}: latency_ms")
        if not isinstance(self.bandwidth, int | float) or not self.bandwidth > 0:
            raise ValueError(
                f"link {self.a!r}-{self.b!r}: bandwidth must be > 0, got {self.bandwidth!r}"
            )
        _finite_non_negative(self.cost, f"link {self.a!r}-{self.b!r}: cost")


@dataclass(frozen=True)
class Network:
    """The wide-area network: sites and links. Sites may include nodes that host no unit."""

    sites: tuple[Site, ...]
    links: tuple[Link, ...]

    def __post_init__(self) -> None:
        ids = [s.node for s in self.sites]
        if len(set(ids)) != len(ids):
            raise ValueError("network: site ids must be unique")
        known = set(ids)
        for link in self.links:
            for end in (link.a, link.b):
                if end not in known:
                    raise ValueError(
                        f"network: link {link.a!r}-{link.b!r} names unknown site {end!r}"
                    )

    @property
    def site_ids(self) -> tuple[str, ...]:
        return tuple(s.node for s in self.sites)


def _unknown(names: Iterable[str], known: set[str]) -> list[str]:
    return sorted(n for n in names if n not in known)


def _first_unknown_row(subscriptions: Mapping[str, frozenset[str]], units: set[str],
                       sources: set[str]) -> tuple[str, list[str]] | None:
    """`Subscriptions.first_unknown` for a plain mapping."""
    for unit, read in subscriptions.items():
        if unit not in units:
            return unit, []
        bad = _unknown(read, sources)
        if bad:
            return unit, bad
    return None


def check_facets(
    *,
    units: set[str],
    nodes: set[str],
    sources: tuple[Source, ...],
    subscriptions: Mapping[str, frozenset[str]],
    streams: tuple[Stream, ...],
    load_model: Mapping[str, Mapping[str, float]],
    network: Network | None,
    pinned: Mapping[str, str],
) -> None:
    """Every facet names only known units, nodes, sources and streams (ValueError otherwise)."""
    source_ids = [s.id for s in sources]
    if len(set(source_ids)) != len(source_ids):
        raise ValueError("cluster state: source ids must be unique")
    known_sources = set(source_ids)
    first = (subscriptions.first_unknown(units, known_sources)
             if isinstance(subscriptions, Subscriptions) else _first_unknown_row(
                 subscriptions, units, known_sources))
    if first is not None:
        unit, bad = first
        if not bad:
            raise ValueError(f"cluster state: subscriptions name unknown unit {unit!r}")
        raise ValueError(f"cluster state: unit {unit!r} subscribes to unknown sources {bad}")
    stream_ids = [s.id for s in streams]
    if len(set(stream_ids)) != len(stream_ids):
        raise ValueError("cluster state: stream ids must be unique")
    known_streams = set(stream_ids)
    for unit, coefficients in load_model.items():
        if unit not in units:
            raise ValueError(f"cluster state: load model names unknown unit {unit!r}")
        bad = _unknown(coefficients, known_streams)
        if bad:
            raise ValueError(f"cluster state: unit {unit!r} has coefficients on unknown streams {bad}")
        for stream, value in coefficients.items():
            _finite_non_negative(value, f"load model: unit {unit!r} on stream {stream!r}")
    if network is not None:
        missing = _unknown(nodes, set(network.site_ids))
        if missing:
            raise ValueError(f"cluster state: nodes {missing} are not sites of the network")
    for unit, node in pinned.items():
        if unit not in units:
            raise ValueError(f"cluster state: pinned names unknown unit {unit!r}")
        if node not in nodes:
            raise ValueError(f"cluster state: unit {unit!r} is pinned to unknown node {node!r}")
