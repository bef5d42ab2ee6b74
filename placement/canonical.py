"""One canonical order for a ClusterState, so a plan never depends on declaration order.

Two files that list the same nodes, units, sources, streams, edges, sites or topology
constraints (groups, the units inside a group, labels) in another order describe the same
instance and must get the same plan: a MILP's rows follow the declared order, and a solver that
meets rows in another order may settle a tie otherwise. Every strategy breaks its ties by some
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
from placement.subscriptions import Subscriptions
from schemas.constraints import AntiAffinity, Constraints, Pin

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


def _by_key(mapping: Mapping[str, V], rank: Mapping[str, int] | None = None) -> dict[str, V]:
    """`mapping` in natural key order; `rank` (a unit's place in that order, computed once per
    state) spares a natural key per entry when every key is a unit."""
    keys = (sorted(mapping, key=natural_key) if rank is None
            else sorted(mapping, key=rank.__getitem__))
    return {k: mapping[k] for k in keys}


def _unit_rank(state: ClusterState) -> dict[str, int]:
    """Every unit's place in natural order: one natural key per id for the whole state. The
    ids the assignment, out(), S_q, the load model and the pins name are ranked too: they are
    units in any state the model accepted, and a state assembled around its checks must reach
    them (`dataclasses.replace` below re-checks it and names the unknown unit)."""
    ids = {k.id for k in state.keygroups}
    for named in (state.assignment, state.comm.units, state.subscriptions, state.load_model,
                  state.pinned):
        ids.update(named)
    return {u: r for r, u in enumerate(sorted(ids, key=natural_key))}


def _sorted_edges(comm: CommEdges, rank: Mapping[str, int]) -> CommEdges:
    """Edges by (natural src, natural dst, rate), sorted as columns."""
    return comm.sorted_by(np.array([rank[u] for u in comm.units], dtype=np.int64))


def _sorted_subscriptions(subs: Mapping[str, frozenset[str]], rank: Mapping[str, int]
                          ) -> Subscriptions:
    """S_q's rows in natural unit order, as CSR (no set per unit)."""
    subs = Subscriptions.of(subs)
    return subs.reordered(sorted(range(len(subs.units)), key=lambda r: rank[subs.units[r]]))


def _units_key(units: Iterable[str]) -> tuple[tuple[tuple[int, str], ...], ...]:
    return tuple(natural_key(u) for u in units)


def _canonical_constraints(cons: Constraints) -> Constraints:
    """`cons` with every group's units, every group and every label table in canonical order.
    A constraint may name units the state lacks (a dynamic job's), so units sort by their
    natural key, not by the state's rank."""
    if not cons and not cons.node_labels:
        return cons

    def units(us: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(us, key=natural_key))

    spread = tuple(sorted((dataclasses.replace(s, units=units(s.units)) for s in cons.spread),
                          key=lambda s: (s.label, s.operator or "", _units_key(s.units),
                                         s.min_domains or 0, s.max_per_domain or 0)))
    anti = tuple(sorted((AntiAffinity(units(a.units)) for a in cons.anti_affinity),
                        key=lambda a: _units_key(a.units)))
    pins = tuple(sorted((Pin(units(p.units), dict(sorted(p.labels.items()))) for p in cons.pin),
                        key=lambda p: (_units_key(p.units), tuple(p.labels.items()))))
    labels = {n: dict(sorted(ls.items())) for n, ls in _by_key(cons.node_labels).items()}
    return dataclasses.replace(cons, node_labels=labels, spread=spread, anti_affinity=anti,
                               pin=pins)


def canonical_state(state: ClusterState) -> ClusterState:
    """`state` with every collection in canonical order (the same instance, re-listed)."""
    network = state.network
    if network is not None:
        network = Network(
            _sorted(network.sites, lambda s: natural_key(s.node)),
            _sorted(network.links, lambda lk: (*sorted((natural_key(lk.a), natural_key(lk.b))),
                                              lk.latency_ms, lk.bandwidth, lk.cost)))
    rank = _unit_rank(state)
    canon = dataclasses.replace(
        state,
        nodes=_sorted(state.nodes, lambda n: natural_key(n.id)),
        keygroups=_sorted(state.keygroups, lambda k: rank[k.id]),
        assignment=_by_key(state.assignment, rank),
        edges=_sorted_edges(state.comm, rank),
        sources=_sorted(state.sources, lambda s: natural_key(s.id)),
        subscriptions=_sorted_subscriptions(state.subscriptions, rank),
        streams=_sorted(state.streams, lambda s: natural_key(s.id)),
        load_model={u: _by_key(c) for u, c in _by_key(state.load_model, rank).items()},
        network=network,
        pinned=_by_key(state.pinned, rank),
        constraints=_canonical_constraints(state.constraints),
    )
    return canon
