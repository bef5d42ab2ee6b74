"""The alternatives of Xing et al. 2006 §7.2 and §7.3.5, and Optimal by exhaustive search.

Each returns the node index of every operator, like `rod_assign`.
- LLF (Largest-Load First): operators by their load at one rate point R, descending, each to
  the node of least utilisation (load / C_i) so far; ties by index.
- Connected-LB: (1) the most loaded unassigned operator goes to the least utilised node N_s;
  (2) the unassigned operators connected to those on N_s join it, heaviest first, while N_s's
  load after the assignment stays below "the average load of all operators", read as the total
  load times C_s / C_T (total / n on equal nodes); (3) repeat.
- Random: equal operator counts per node (a random permutation dealt round-robin).
- Max-Rate-LB (§7.3.5): LLF at the maximum observed rates.
- Correlation-based: defined in the authors' [23], not here; left out.
- Optimal: every plan up to node symmetry (n^m/n! on equal nodes: restricted-growth strings,
  all n^m otherwise), screened by F/F* on one common set of quasi-random points, the best
  `keep` rescored exactly (`measures.feasible_set_ratio`). With `keep` ≥ the number of plans
  the search is exact over all plans.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np
from numpy.typing import NDArray

from placement.rod.measures import feasible_set_ratio, simplex_points
from placement.rod.model import weights

__all__ = ["connected_lb", "count_plans", "llf", "optimal", "random_equal"]

Array = NDArray[np.float64]
Bins = NDArray[np.int64]


def llf(coefficients: Array, rates: Array, capacity: Array,
        allowed: NDArray[np.bool_] | None = None) -> Bins:
    """LLF at the rate point `rates` (Max-Rate-LB: the maximum rates)."""
    load = coefficients @ rates
    ok = np.ones(len(capacity), dtype=bool) if allowed is None else allowed
    node = np.zeros(len(capacity))
    bins = np.empty(len(load), dtype=np.int64)
    for j in np.lexsort((np.arange(len(load)), -load)):
        util = np.where(ok, node / capacity, np.inf)
        i = int(np.argmin(util))
        bins[j] = i
        node[i] += load[j]
    return bins


def connected_lb(coefficients: Array, rates: Array, capacity: Array,
                 neighbours: Sequence[Sequence[int]],
                 allowed: NDArray[np.bool_] | None = None) -> Bins:
    """Connected load balancing (§7.2), steps (1)–(3)."""
    load = coefficients @ rates
    ok = np.ones(len(capacity), dtype=bool) if allowed is None else allowed
    share = np.where(ok, capacity, 0.0) / np.where(ok, capacity, 0.0).sum()
    node = np.zeros(len(capacity))
    bins = np.full(len(load), -1, dtype=np.int64)
    by_load = list(np.lexsort((np.arange(len(load)), -load)))
    total = float(load.sum())
    while True:
        heaviest = next((int(j) for j in by_load if bins[j] < 0), None)
        if heaviest is None:
            return bins
        s = int(np.argmin(np.where(ok, node / capacity, np.inf)))
        bins[heaviest], node[s] = s, node[s] + load[heaviest]
        average = total * share[s]
        grown = True
        while grown:
            grown = False
            near = {int(v) for u in np.flatnonzero(bins == s) for v in neighbours[int(u)]
                    if bins[v] < 0}
            for j in sorted(near, key=lambda v: (-load[v], v)):
                if node[s] + load[j] < average:
                    bins[j], node[s] = s, node[s] + load[j]
                    grown = True
                    break


def random_equal(m: int, n: int, rng: np.random.Generator) -> Bins:
    """Random placement with equal operator counts per node (±1)."""
    bins = np.empty(m, dtype=np.int64)
    nodes = rng.permutation(n)
    bins[rng.permutation(m)] = nodes[np.arange(m) % n]
    return bins


def _growth_strings(m: int, n: int) -> Iterator[tuple[int, ...]]:
    """Restricted-growth strings: each plan on identical nodes once (n^m/n! of them, roughly)."""
    def rec(prefix: list[int], top: int) -> Iterator[tuple[int, ...]]:
        if len(prefix) == m:
            yield tuple(prefix)
            return
        for i in range(min(top + 2, n)):
            prefix.append(i)
            yield from rec(prefix, max(top, i))
            prefix.pop()
    return rec([], -1)


def _plans(m: int, n: int, identical: bool) -> Bins:
    if identical and n == 2:
        codes = np.arange(1 << max(m - 1, 0), dtype=np.int64)
        rest = (codes[:, None] >> np.arange(m - 1)) & 1
        return np.c_[np.zeros(len(codes), dtype=np.int64), rest].astype(np.int64)
    source = _growth_strings(m, n) if identical else itertools.product(range(n), repeat=m)
    return np.array(list(source), dtype=np.int64).reshape(-1, m)


def count_plans(m: int, n: int, identical: bool) -> int:
    """How many plans `optimal` enumerates (the Stirling sum on identical nodes)."""
    if not identical:
        return int(n**m)
    table = [[0] * (n + 1) for _ in range(m + 1)]
    table[0][0] = 1
    for i in range(1, m + 1):
        for k in range(1, n + 1):
            table[i][k] = k * table[i - 1][k] + table[i - 1][k - 1]
    return sum(table[m][1:])


def optimal(normalised: Array, share: Array, *, points: int = 2048, keep: int = 16,
            seed: int = 0, max_plans: int = 2_000_000) -> tuple[Bins, float]:
    """The plan of largest F/F* by exhaustive search, and its F/F* (see the module doc)."""
    from scipy import stats

    m, d = normalised.shape
    n = len(share)
    identical = bool(np.allclose(share, share[0]))
    if count_plans(m, n, identical) > max_plans:
        raise ValueError(f"optimal: {count_plans(m, n, identical)} plans exceed {max_plans}; "
                         "exhaustive search is for small instances")
    plans = _plans(m, n, identical)
    if len(plans) > keep:
        u = stats.qmc.Sobol(d, scramble=True, seed=seed).random(points)
        x = simplex_points(u).astype(np.float32)
        per_op = (normalised.astype(np.float32) @ x.T)  # m × N: o_j's share at each point
        score = np.empty(len(plans))
        for start in range(0, len(plans), 1024):
            chunk = plans[start:start + 1024]
            ok = np.ones((len(chunk), points), dtype=bool)
            for i in range(n):
                ok &= ((chunk == i).astype(np.float32) @ per_op) <= share[i] + 1e-7
            score[start:start + len(chunk)] = ok.mean(axis=1)
        plans = plans[np.argsort(-score, kind="stable")[:keep]]
    exact = [feasible_set_ratio(weights(normalised, p, share), method="exact"
                                if d <= 6 else "qmc", points=1 << 14).value for p in plans]
    best = int(np.argmax(exact))
    return plans[best].copy(), float(exact[best])
