"""One canonical order for a ClusterState, so a plan never depends on declaration order.

Two files that list the same nodes, units, sources, streams, edges or sites in another order
describe the same instance and must get the same plan. Every strategy breaks its ties by some
index (the lowest server, the first unit, the first type); the registry hands each strategy the
state in this canonical order, so "the lowest index" always means "the smallest id". Ids sort
naturally (digit runs as numbers: n2 before n10), then by the raw id, so a cluster named
n0..n11 keeps its declared order.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import numpy as np

from placement.comm import CommEdges
from placement.facets import Network
from placement.model import ClusterState

__all__ = ["canonical_state", "natural_key"]

_DIGITS = re.compile(r"(\d+)")
T = TypeVar("T")
V = TypeVar("V")


def natural_key(text: str) -> tuple[tuple[int, str], ...]:
    """n2 < n10 < n10a; every part is (number, "") or (0, text) so any two keys compare."""
    parts = _DIGITS.split(text)
    key = tuple((int(p), "") if i % 2 else (0, p) for i, p in enumerate(parts))
    return (*key, (0, text))


def _sorted(items: Iterable[T], key_of: Callable[[T], Any]) -> tuple[T, ...]:
    return tuple(sorted(items, key=key_of))


def _by_key(mapping: Mapping[str, V]) -> dict[str, V]:
    return {k: mapping[k] for k in sorted(mapping, key=natural_key)}


def _sorted_edges(comm: CommEdges) -> CommEdges:
    """Edges by (natural src, natural dst, rate), sorted as columns: the natural key is
    computed once per unit, not once per edge."""
    order = sorted(range(len(comm.units)), key=lambda i: natural_key(comm.units[i]))
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return comm.sorted_by(rank)


def canonical_state(state: ClusterState) -> ClusterState:
    """`state` with every collection in canonical order (the same instance, re-listed)."""
    network = state.network
    if network is not None:
        network = Network(
            _sorted(network.sites, lambda s: natural_key(s.node)),
            _sorted(network.links, lambda lk: (*sorted((natural_key(lk.a), natural_key(lk.b))),
                                              lk.latency_ms, lk.bandwidth, lk.cost)))
    canon = dataclasses.replace(
        state,
        nodes=_sorted(state.nodes, lambda n: natural_key(n.id)),
        keygroups=_sorted(state.keygroups, lambda k: natural_key(k.id)),
        assignment=_by_key(state.assignment),
        edges=_sorted_edges(state.comm),
        sources=_sorted(state.sources, lambda s: natural_key(s.id)),
        subscriptions={u: frozenset(v) for u, v in _by_key(state.subscriptions).items()},
        streams=_sorted(state.streams, lambda s: natural_key(s.id)),
        load_model={u: _by_key(c) for u, c in _by_key(state.load_model).items()},
        network=network,
        pinned=_by_key(state.pinned),
    )
    return canon
