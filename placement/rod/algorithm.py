"""The ROD algorithm (Xing et al. 2006 §5, Fig. 10), with the lower-bound extension (§6.1).

Input: the normalised operator coefficients l^o_jk / l_k (m × d, `LoadModel.normalised`), the
capacity shares C_i / C_T, optionally the normalised lower bound B' and the operators'
neighbours (for the Class I goodness rule). Output: the node index of every operator.

Phase 1 (§5.1): sort the operators by ‖L^o_j‖₂, descending (Fig. 10 uses the raw
coefficients; `sort="normalised"` uses l^o_jk / l_k, as §3.3 argues; ties by index).
Phase 2 (§5.2), per operator o_j: the candidate weights w'_ik = ((l^n_ik + l^o_jk)/l_k)/(C_i/C_T)
of every node; Class I = the nodes with w'_ik ≤ 1 on every axis (the candidate hyperplane stays
above the ideal one, the final feasible set is not reduced).
- Class I not empty: the goodness rule, which the paper leaves open ("a random node … or other
  criteria, e.g. the fewest inter-node streams"): the fewest new inter-node arcs (most
  neighbours already on the node), then the largest candidate plane distance, then the lowest
  node index. Deterministic, as ROD is said to be (§7.3.1).
- Else Class II: the node with the MAXIMUM candidate plane distance 1/‖W'_i‖, or with §6.1
  (1 − W'_i·B')/‖W'_i‖. Fig. 10 writes "min", which contradicts §5.2 ("the node that has the
  largest candidate plane distance") and MMPD itself (maximise the minimum plane distance);
  `class2="min"` keeps the literal reading for comparison (on Example 2 it picks plan (b),
  F/F* = 0.635, where "max" picks plan (c), 0.756; tests/placement/test_rod.py).
Cost O(m·n·d) with numpy over the nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

__all__ = ["order", "rod_assign"]

Array = NDArray[np.float64]
Bins = NDArray[np.int64]
#: tolerance of "w'_ik ≤ 1" (Class I) and of plane-distance ties
TOL = 1e-9


def order(coefficients: Array, normalised: Array, sort: Literal["raw", "normalised"]) -> Bins:
    """Phase 1: operator indices by ‖L^o_j‖₂ descending (raw or normalised), ties by index."""
    keys = coefficients if sort == "raw" else normalised
    norms = np.linalg.norm(keys, axis=1)
    return np.lexsort((np.arange(len(norms)), -norms)).astype(np.int64)


def rod_assign(coefficients: Array, normalised: Array, share: Array, *,
               lower: Array | None = None, class2: Literal["max", "min"] = "max",
               sort: Literal["raw", "normalised"] = "raw",
               neighbours: Sequence[Sequence[int]] | None = None,
               allowed: NDArray[np.bool_] | None = None) -> Bins:
    """Fig. 10: the node index of every operator. `allowed` masks the nodes that may take
    operators (e.g. not those marked for removal); `neighbours[j]` lists o_j's arc partners."""
    m, d = normalised.shape
    n = len(share)
    ok = np.ones(n, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    if not np.any(ok):
        raise ValueError("ROD: no node may take operators")
    b = np.zeros(d) if lower is None else np.asarray(lower, dtype=float)
    node_w = np.zeros((n, d))  # W of the nodes so far
    inv_share = 1.0 / share
    bins = np.full(m, -1, dtype=np.int64)
    index = np.arange(n)
    for j in order(coefficients, normalised, sort):
        cand = node_w + normalised[j] * inv_share[:, None]  # W'_i for every node
        norms = np.sqrt(np.einsum("ij,ij->i", cand, cand))
        with np.errstate(divide="ignore", invalid="ignore"):
            dist = np.where(norms > 0, (1.0 - cand @ b) / norms, np.inf)
        class1 = ok & np.all(cand <= 1.0 + TOL, axis=1)
        if np.any(class1):
            near = np.zeros(n)
            if neighbours is not None:
                placed = bins[np.asarray(neighbours[j], dtype=np.int64)]
                placed = placed[placed >= 0]
                np.add.at(near, placed, 1.0)
            # most neighbours here, then the largest plane distance, then the lowest index
            keys = np.lexsort((index, -np.round(dist / TOL) * TOL, -near))
            pick = int(next(i for i in keys if class1[i]))
        else:
            score = np.where(ok, dist if class2 == "max" else -dist, -np.inf)
            best = score.max()
            pick = int(np.flatnonzero(score >= best - TOL * max(1.0, abs(best)))[0])
        bins[j] = pick
        node_w[pick] = cand[pick]
    return bins
