"""Balanced graph partitioning (METIS through pymetis), shared by ALBIC (§4.3.2) and COLA.

`graph_part(vertices, vertex_weight, edge_weight, nparts)` splits a set of key groups into
`nparts` parts of about equal total vertex weight with a minimum weighted edge cut, the
"balanced graph partitioning [20]" the paper uses. METIS wants positive integer weights, so
weights are scaled to integers (relative to the largest, at least 1). METIS may leave a graph
unsplit (e.g. one vertex heavier than all the others together, or nparts > vertices it can
balance); then a greedy split (largest weight first into the lightest part) takes over, so a
set of two or more vertices always comes back in at least two non-empty parts.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from placement.comm import PairRates
from placement.model import ClusterState

__all__ = ["EDGE_SCALE", "VERTEX_SCALE", "graph_part", "graph_part_pairs", "pair_rates",
           "undirected_weights"]

VERTEX_SCALE = 100_000  # the heaviest vertex gets this integer weight
EDGE_SCALE = 10_000  # the heaviest edge gets this integer weight


def pair_rates(state: ClusterState) -> PairRates:
    """out(g_i, g_j) per directed pair: parallel edges summed, self-edges dropped (a mapping
    over the state's columns, placement/comm.py)."""
    return PairRates(state.comm)


def undirected_weights(
    rates: Mapping[tuple[str, str], float], members: set[str] | frozenset[str]
) -> dict[tuple[str, str], float]:
    """out(g_i, g_j) + out(g_j, g_i) for every pair inside `members`, keyed (min id, max id)."""
    if isinstance(rates, PairRates):
        return rates.undirected_within(members)
    both: dict[tuple[str, str], float] = {}
    for (src, dst), rate in rates.items():
        if src == dst or src not in members or dst not in members or rate <= 0:
            continue
        key = (src, dst) if src < dst else (dst, src)
        both[key] = both.get(key, 0.0) + rate
    return both


def _scaled(values: Sequence[float], scale: int) -> list[int]:
    top = max(values, default=0.0)
    if top <= 0:
        return [1] * len(values)
    return [max(1, round(v / top * scale)) for v in values]


def _scaled_array(values: npt.NDArray[np.float64], scale: int) -> list[int]:
    """`_scaled` on an array: the same IEEE operations and round-half-to-even as Python's
    round, so the same integers."""
    top = float(values.max()) if len(values) else 0.0
    if top <= 0:
        return [1] * len(values)
    return np.maximum(1, np.round(values / top * scale)).astype(np.int64).tolist()


def _greedy(vertices: Sequence[str], weight: Mapping[str, float], nparts: int) -> list[list[str]]:
    """Largest weight first into the currently lightest part (ties: part index, vertex id)."""
    parts: list[list[str]] = [[] for _ in range(nparts)]
    loads = [0.0] * nparts
    for v in sorted(vertices, key=lambda x: (-weight[x], x)):
        i = min(range(nparts), key=lambda j: (loads[j], len(parts[j]), j))
        parts[i].append(v)
        loads[i] += weight[v]
    return [p for p in parts if p]


def graph_part(
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
    index = {v: i for i, v in enumerate(verts)}
    ends = [(index.get(a), index.get(b), w) for (a, b), w in edge_weight.items()]
    kept = [(i, j, w) for i, j, w in ends if i is not None and j is not None and i != j and w > 0]
    a_idx = np.fromiter((e[0] for e in kept), np.int64, len(kept))
    b_idx = np.fromiter((e[1] for e in kept), np.int64, len(kept))
    wts = np.fromiter((e[2] for e in kept), np.float64, len(kept))
    return _metis(verts, vertex_weight, a_idx, b_idx, wts, nparts, seed)


def graph_part_pairs(vertices: Sequence[str], vertex_weight: Mapping[str, float],
                     rates: PairRates, nparts: int, *, seed: int = 0) -> list[list[str]]:
    """`graph_part(vertices, vertex_weight, undirected_weights(rates, set(vertices)), nparts)`
    on the columns: the pairs inside `vertices` as index arrays, no dict of pairs (COLA
    bisects thousands of times at 32,768 key groups)."""
    verts = sorted(set(vertices))
    nparts = min(nparts, len(verts))
    if nparts <= 1:
        return [verts]
    lo, hi, sums = rates.within_codes(verts)
    local = np.full(len(rates.comm.units) + 1, -1, np.int64)
    position = rates.comm.position
    for i, v in enumerate(verts):
        code = position.get(v)
        if code is not None:
            local[code] = i
    a_idx, b_idx = local[lo], local[hi]
    keep = (a_idx >= 0) & (b_idx >= 0) & (a_idx != b_idx) & (sums > 0)
    return _metis(verts, vertex_weight, a_idx[keep], b_idx[keep], sums[keep], nparts, seed)


def _metis(verts: list[str], vertex_weight: Mapping[str, float], a_idx: npt.NDArray[np.int64],
           b_idx: npt.NDArray[np.int64], wts: npt.NDArray[np.float64], nparts: int, seed: int
           ) -> list[list[str]]:
    """METIS on `verts` (sorted, nparts >= 2) with the undirected pairs (a_idx, b_idx, wts)."""
    import pymetis

    # CSR adjacency on arrays: each row's neighbours ascending (then by weight), as sorting
    # each row's (neighbour, weight) list did
    rows, cols, raw_w = (np.concatenate([a_idx, b_idx]), np.concatenate([b_idx, a_idx]),
                         np.concatenate([wts, wts]))
    order = np.lexsort((raw_w, cols, rows))
    adjncy, raw_w = cols[order], raw_w[order]
    xadj = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=len(verts)))])
    vweights = _scaled_array(np.maximum(0.0, np.fromiter(
        (vertex_weight[v] for v in verts), np.float64, len(verts))), VERTEX_SCALE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        result = pymetis.part_graph(
            nparts,
            pymetis.CSRAdjacency(xadj.tolist(), adjncy.tolist()),
            vweights=vweights,
            eweights=_scaled_array(raw_w, EDGE_SCALE) if len(raw_w) else None,
            options=pymetis.Options(seed=seed),
        )
    groups: dict[int, list[str]] = {}
    for v, part in zip(verts, result.vertex_part, strict=True):
        groups.setdefault(int(part), []).append(v)
    parts = [groups[k] for k in sorted(groups)]
    if len(parts) < 2:
        return _greedy(verts, vertex_weight, nparts)
    return parts
