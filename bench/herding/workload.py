"""Herding's synthetic workloads (Zong et al. 2015 §6.1): the random bipartite graph, rates.

Generator (a configuration model, as in the paper's reference [15]; the paper never gives the
number of sources m, so here it is an outcome): source degrees are drawn i.i.d. from the
truncated power law P(x) ∝ x^−β on {1..n} (truncated, so β = 1 works and no source has more
readers than there are queries) until they add up to n·d; the last one is cut to make the sum
exactly n·d. The n·d stubs are shuffled and dealt to the queries d at a time; a query that got
the same source twice swaps the duplicate with a random stub elsewhere (a few rounds; a
duplicate still left is dropped, so a rare query reads d − 1 sources). Heavier tails (small β)
mean fewer, more popular sources.

Heterogeneous rates (§6.1.2, Fig. 8): rates drawn from a power law with exponent γ on
{1..1000}, then given to sources at random, rank-matched to popularity (positive: the fastest
source is the most read) or reverse rank-matched (negative).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from placement.herding.instance import Instance, IntArray, from_arrays
from runtime.synthetic_queries import power_law, source_degrees

__all__ = ["Correlation", "Workload", "power_law", "rates_for", "workload"]

Correlation = Literal["none", "random", "positive", "negative"]
MAX_RATE = 1000
SWAP_ROUNDS = 8


@dataclass(frozen=True, eq=False)
class Workload:
    """n queries reading d sources each (CSR), m sources with rates; queries in arrival order."""

    rates: np.ndarray
    indptr: IntArray
    indices: IntArray

    @property
    def n(self) -> int:
        return len(self.indptr) - 1

    @property
    def m(self) -> int:
        return len(self.rates)

    def instance(self, k: int) -> Instance:
        return from_arrays(self.rates, self.indptr, self.indices, k)


def workload(n: int, d: int, beta: float, seed: int, *, rate_exp: float | None = None,
             correlation: Correlation = "none") -> Workload:
    """The §6.1 random bipartite graph (n queries of degree d, source popularity exponent β)."""
    rng = np.random.default_rng(seed)
    deg = source_degrees(rng, n, d, beta)
    stubs = rng.permutation(np.repeat(np.arange(len(deg)), deg)).reshape(n, d)
    for _ in range(SWAP_ROUNDS):
        if d == 1:
            break
        srt = np.sort(stubs, axis=1)
        bad_rows: list[int] = np.flatnonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1)).tolist()
        if not bad_rows:
            break
        for r in bad_rows:
            row = stubs[r]
            _, first = np.unique(row, return_index=True)
            dup_cols = np.setdiff1d(np.arange(d), first)
            for c in dup_cols.tolist():
                rr, cc = int(rng.integers(n)), int(rng.integers(d))
                stubs[r, c], stubs[rr, cc] = stubs[rr, cc], stubs[r, c]
    srt = np.sort(stubs, axis=1)
    keep = np.ones_like(srt, dtype=bool)
    keep[:, 1:] = srt[:, 1:] != srt[:, :-1]  # a duplicate left after the swaps is dropped
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(keep.sum(axis=1), out=indptr[1:])
    indices = srt[keep].astype(np.int64)
    rates = rates_for(rng, np.bincount(indices, minlength=len(deg)), rate_exp, correlation)
    return Workload(rates, indptr, indices)


def rates_for(rng: np.random.Generator, popularity: IntArray, rate_exp: float | None,
              correlation: Correlation) -> np.ndarray:
    """Unit rates, or power-law rates matched to popularity as `correlation` says."""
    m = len(popularity)
    if rate_exp is None or correlation == "none":
        return np.ones(m)
    values = np.sort(power_law(rng, rate_exp, MAX_RATE, m).astype(np.float64))[::-1]
    if correlation == "random":
        return rng.permutation(values)
    by_popularity = np.argsort(-popularity, kind="stable")  # most read first
    rates = np.empty(m)
    rates[by_popularity] = values if correlation == "positive" else values[::-1]
    return rates
