"""COLA's loop on arrays (placement/baselines/cola.py) gives exactly the partitions, placement
and LD of the loop over the nodes it replaced (kept here as the reference), on random states
with equal and unequal capacities."""

from __future__ import annotations

import heapq
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from placement.baselines.cola import cola_partitions
from placement.graphpart import (
    EDGE_SCALE,
    VERTEX_SCALE,
    _greedy,
    graph_part,
    graph_part_pairs,
    pair_rates,
    undirected_weights,
)
from placement.metrics import mean_load
from placement.model import ClusterState, Node
from placement.workloads.synthetic import synthetic_state


def _place(parts: list[list[str]], load: Mapping[str, float], state: ClusterState
           ) -> tuple[dict[str, str], float]:
    a_nodes = [n for n in state.nodes if not n.marked_for_removal]
    raw = {n.id: 0.0 for n in a_nodes}
    cap = {n.id: n.capacity for n in a_nodes}
    weights = [sum(load[k] for k in p) for p in parts]
    assignment: dict[str, str] = {}
    for i in sorted(range(len(parts)), key=lambda j: (-weights[j], min(parts[j]))):
        node = min(raw, key=lambda n: ((raw[n] + weights[i]) / cap[n], n))
        raw[node] += weights[i]
        for k in parts[i]:
            assignment[k] = node
    mean = mean_load(state)
    return assignment, max(abs(raw[n] / cap[n] - mean) for n in raw)


def _reference(state: ClusterState, max_ld: float, seed: int = 0
               ) -> tuple[list[list[str]], dict[str, str], float]:
    load = {k.id: k.load for k in state.keygroups}
    out = pair_rates(state)
    parts: list[list[str]] = [sorted(load)] if load else []
    assignment, ld = _place(parts, load, state)
    heap = [(-sum(load[k] for k in p), i) for i, p in enumerate(parts) if len(p) > 1]
    heapq.heapify(heap)
    while ld > max_ld and heap:
        _, i = heapq.heappop(heap)
        members = parts[i]
        halves = graph_part(members, load, undirected_weights(out, set(members)), 2, seed=seed)
        parts[i] = halves[0]
        parts.extend(halves[1:])
        for j in [i, *range(len(parts) - len(halves) + 1, len(parts))]:
            if len(parts[j]) > 1:
                heapq.heappush(heap, (-sum(load[k] for k in parts[j]), j))
        assignment, ld = _place(parts, load, state)
    return parts, assignment, ld


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), st.integers(4, 80), st.integers(0, 10_000),
       st.sampled_from([0.5, 3.0, 10.0, 40.0]), st.booleans(), st.booleans())
def test_cola_on_arrays_is_the_loop_over_the_nodes(nodes: int, keygroups: int, seed: int,
                                                    max_ld: float, unequal: bool,
                                                    removal: bool) -> None:
    state = synthetic_state(nodes=nodes, keygroups=max(keygroups, nodes), operators=2, varies=40.0,
                            seed=seed)
    if unequal or removal:  # capacities 1, 2, 1, 2, …; the last node in B
        new = tuple(Node(n.id, 1.0 + (i % 2) * unequal,
                         marked_for_removal=removal and i == len(state.nodes) - 1)
                    for i, n in enumerate(state.nodes))
        state = replace(state, nodes=new)
    assert cola_partitions(state, max_ld) == _reference(state, max_ld)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(20, 120), st.integers(0, 10_000), st.data())
def test_pair_sums_within_a_small_or_large_set_are_the_walk_over_every_pair(
        nodes: int, keygroups: int, seed: int, data: st.DataObject) -> None:
    """`undirected_within` gathers a small set's pairs by source: the same floats, in the same
    order, as the walk over every pair (graphpart.undirected_weights on a plain dict)."""
    state = synthetic_state(nodes=nodes, keygroups=keygroups, operators=3, varies=40.0,
                            seed=seed)
    ids = sorted(k.id for k in state.keygroups)
    members = set(data.draw(st.lists(st.sampled_from(ids), max_size=len(ids))))
    rates = pair_rates(state)
    fast = undirected_weights(rates, members)
    walk = undirected_weights(dict(rates.items()), members)
    assert list(fast.items()) == list(walk.items())


def _scaled(values: Sequence[float], scale: int) -> list[int]:
    top = max(values, default=0.0)
    if top <= 0:
        return [1] * len(values)
    return [max(1, round(v / top * scale)) for v in values]


def _graph_part_rows(
    vertices: Sequence[str],
    vertex_weight: Mapping[str, float],
    edge_weight: Mapping[tuple[str, str], float],
    nparts: int,
    *,
    seed: int = 0,
) -> list[list[str]]:
    """Split `vertices` into at most `nparts` non-empty parts (METIS, min weighted edge cut).

    `edge_weight` is undirected, keyed by vertex pairs (see `undirected_weights`); pairs naming
    vertices outside `vertices` are ignored. With nparts >= 2 and two or more vertices, the
    result always has at least two parts. Deterministic for a given `seed`.
    """
    verts = sorted(set(vertices))
    nparts = min(nparts, len(verts))
    if nparts <= 1:
        return [verts]
    import pymetis  # the loop over rows graphpart.graph_part replaced

    index = {v: i for i, v in enumerate(verts)}
    adj: list[list[tuple[int, float]]] = [[] for _ in verts]
    for (a, b), w in edge_weight.items():
        if a in index and b in index and a != b and w > 0:
            adj[index[a]].append((index[b], w))
            adj[index[b]].append((index[a], w))
    xadj = [0]
    adjncy: list[int] = []
    raw_w: list[float] = []
    for row in adj:
        for j, w in sorted(row):
            adjncy.append(j)
            raw_w.append(w)
        xadj.append(len(adjncy))
    vweights = _scaled([max(0.0, vertex_weight[v]) for v in verts], VERTEX_SCALE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        result = pymetis.part_graph(
            nparts,
            pymetis.CSRAdjacency(xadj, adjncy),
            vweights=vweights,
            eweights=_scaled(raw_w, EDGE_SCALE) if raw_w else None,
            options=pymetis.Options(seed=seed),
        )
    groups: dict[int, list[str]] = {}
    for v, part in zip(verts, result.vertex_part, strict=True):
        groups.setdefault(int(part), []).append(v)
    parts = [groups[k] for k in sorted(groups)]
    if len(parts) < 2:
        return _greedy(verts, vertex_weight, nparts)
    return parts


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(8, 90), st.integers(0, 10_000), st.integers(2, 4),
       st.data())
def test_graph_part_on_arrays_is_the_row_by_row_build(nodes: int, keygroups: int, seed: int,
                                                       nparts: int, data: st.DataObject) -> None:
    state = synthetic_state(nodes=nodes, keygroups=keygroups, operators=3, varies=40.0,
                            seed=seed)
    ids = sorted(k.id for k in state.keygroups)
    members = data.draw(st.lists(st.sampled_from(ids), min_size=2, unique=True))
    load = {k.id: k.load for k in state.keygroups}
    weights = undirected_weights(pair_rates(state), set(members))
    rows = _graph_part_rows(members, load, weights, nparts, seed=seed % 7)
    assert graph_part(members, load, weights, nparts, seed=seed % 7) == rows
    assert graph_part_pairs(members, load, pair_rates(state), nparts, seed=seed % 7) == rows
