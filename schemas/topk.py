"""The top-k communication contract: which of a unit's outgoing pairs a runtime lands.

A unit g_i with many downstream units lands only its `k` heaviest outgoing pairs
out(g_i, g_j) (by tuples; ties by the destination's id, so the choice is reproducible) and the
total of all its outgoing pairs (schemas/landing.py ``comm_totals``); a unit with at most `k`
pairs lands them all. Self-pairs (g_i, g_i) are not inter-unit traffic and always land. The
runtime (runtime/replay) and the benchmark (`reconf bench topk`) share this one definition.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["DEFAULT_TOP_K", "heaviest_pairs"]

#: pairs landed per unit unless the job says otherwise ([jobs.<id>.source] comm_top_k): a unit
#: with at most this many downstream units lands all its pairs, so small jobs are unaffected
DEFAULT_TOP_K = 64


def heaviest_pairs(src: npt.NDArray[np.int64], dst: npt.NDArray[np.int64],
                   tuples: npt.NDArray[np.int64], k: int
                   ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
    """(keep, total): `keep[e]` whether pair e (one row per distinct (src, dst)) is among its
    source's `k` heaviest inter-unit pairs (self-pairs always kept), and `total[u]` the tuples of
    all inter-unit pairs of source code u (length max(src) + 1). `k` <= 0 keeps every pair."""
    n = int(src.max()) + 1 if len(src) else 0
    inter = src != dst
    total = np.bincount(src[inter], weights=tuples[inter], minlength=n).astype(np.int64)
    keep = np.ones(len(src), bool)
    if k <= 0 or len(src) == 0:
        return keep, total
    # by source, heaviest first, then destination: the rank of each pair within its source
    order = np.lexsort((dst, -tuples, ~inter, src))
    s = src[order]
    starts = np.r_[0, np.flatnonzero(np.diff(s)) + 1]
    rank = np.arange(len(s)) - np.repeat(starts, np.diff(np.r_[starts, len(s)]))
    kept = (rank < k) | ~inter[order]
    keep[order] = kept
    return keep, total
