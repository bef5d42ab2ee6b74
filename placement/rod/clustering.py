"""Operator clustering before ROD (Xing et al. 2006 §6.3), and loads with communication cost.

Communication model (the paper gives none beyond "the CPU cost of communication"): an arc u→v
that crosses nodes costs t_uv per tuple on BOTH end nodes (sending and receiving), its tuple
rate being u's output rate, a linear form over the streams (`querygraph.Linearised.arc_rates`),
so the crossing arcs add `arc_cost` = t_uv·rate_uv/l_k to both nodes' normalised coefficients.
The ideal F* stays that of processing alone (no arc crosses), so F/F* also counts what
communication costs.

Clustering ratio of an arc: t_uv / min(p_u, p_v), the per-tuple transfer cost over the smaller
per-tuple processing cost of its two ends. A cluster's weight: n · max_k Σ_{j∈c} l^o_jk/l_k, the
largest share of one stream it carries, in nodes' worth of ideal load (1.0: a whole node's
share). Approach 1 merges the eligible arc of largest ratio, approach 2 the eligible connected
pair of least merged weight; an arc is eligible while its ratio ≥ the threshold and the merged
weight ≤ the cap. `clustered_rod` runs ROD on every clustering of a threshold × cap grid (plus
no clustering) and keeps the plan of largest plane distance, loads with communication included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from placement.rod.algorithm import rod_assign
from placement.rod.measures import plane_distance
from placement.rod.model import weights

__all__ = ["CAPS", "THRESHOLDS", "Clustered", "cluster", "clustered_rod", "comm_weights"]

Array = NDArray[np.float64]
Bins = NDArray[np.int64]
THRESHOLDS = (0.25, 0.5, 1.0, 2.0, 4.0)
CAPS = (0.5, 1.0, 2.0, 4.0)


def comm_weights(normalised: Array, bins: Bins, share: Array, arcs: Sequence[tuple[int, int]],
                 arc_cost: Array) -> Array:
    """W with the crossing arcs' cost on both end nodes."""
    w = weights(normalised, bins, share)
    for (u, v), cost in zip(arcs, arc_cost, strict=True):
        if bins[u] != bins[v]:
            w[bins[u]] += cost / share[bins[u]]
            w[bins[v]] += cost / share[bins[v]]
    return w


def cluster(normalised: Array, n: int, arcs: Sequence[tuple[int, int]], ratios: Array,
            threshold: float, cap: float, approach: Literal[1, 2] = 2) -> Bins:
    """The cluster label of every operator (§6.3, approaches 1 and 2)."""
    m = len(normalised)
    label = np.arange(m)
    load = normalised.copy()  # per cluster root

    def root(j: int) -> int:
        while label[j] != j:
            label[j] = label[label[j]]
            j = int(label[j])
        return j

    while True:
        best: tuple[float, int, int] | None = None
        for a, (u, v) in enumerate(arcs):
            if ratios[a] < threshold:
                continue
            ru, rv = root(u), root(v)
            if ru == rv:
                continue
            merged = n * float(np.max(load[ru] + load[rv]))
            if merged > cap:
                continue
            key = -float(ratios[a]) if approach == 1 else merged
            if best is None or (key, a) < (best[0], best[1]):
                best = (key, a, 0)
        if best is None:
            break
        u, v = arcs[best[1]]
        ru, rv = root(u), root(v)
        label[rv] = ru
        load[ru] += load[rv]
    roots = np.array([root(j) for j in range(m)])
    _, dense = np.unique(roots, return_inverse=True)
    return dense.astype(np.int64)


@dataclass(frozen=True)
class Clustered:
    """The chosen plan, its clustering (None: none), and its plane distance with comm."""

    bins: Bins
    threshold: float | None
    cap: float | None
    plane_distance: float


def clustered_rod(coefficients: Array, normalised: Array, share: Array,
                  arcs: Sequence[tuple[int, int]], ratios: Array, arc_cost: Array, *,
                  thresholds: Sequence[float] = THRESHOLDS, caps: Sequence[float] = CAPS,
                  approach: Literal[1, 2] = 2, **rod: Any) -> Clustered:
    """ROD on each clustering of the grid; the plan of largest plane distance (comm included)."""
    n = len(share)
    grid: list[tuple[float | None, float | None]] = [(None, None)]
    grid += [(t, c) for t in thresholds for c in caps]
    best: Clustered | None = None
    seen: set[bytes] = set()
    for threshold, cap in grid:
        labels = (np.arange(len(normalised)) if threshold is None or cap is None
                  else cluster(normalised, n, arcs, ratios, threshold, cap, approach))
        if labels.tobytes() in seen:
            continue
        seen.add(labels.tobytes())
        k = int(labels.max()) + 1
        c_coef, c_norm = np.zeros((k, coefficients.shape[1])), np.zeros((k, normalised.shape[1]))
        np.add.at(c_coef, labels, coefficients)
        np.add.at(c_norm, labels, normalised)
        near: list[set[int]] = [set() for _ in range(k)]
        for u, v in arcs:
            if labels[u] != labels[v]:
                near[labels[u]].add(int(labels[v]))
                near[labels[v]].add(int(labels[u]))
        c_bins = rod_assign(c_coef, c_norm, share, neighbours=[sorted(s) for s in near], **rod)
        bins = c_bins[labels]
        r = plane_distance(comm_weights(normalised, bins, share, arcs, arc_cost))
        if best is None or r > best.plane_distance + 1e-12:
            best = Clustered(bins, threshold, cap, r)
    assert best is not None
    return best
