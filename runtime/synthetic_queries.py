"""A synthetic job as a population of small queries sharing sources (Herding, Zong et al. 2015).

With ``reads = d > 0`` every key group of the synthetic job is a query q reading d sources S_q
(§2), drawn as Herding's §6.1 generator draws them (a configuration model, the paper's reference
[15]): source degrees i.i.d. from the truncated power law P(x) ∝ x^−β on {1..n} (β =
``reads_beta``) until they add up to n·d, the last one cut to make the sum exact; the n·d stubs
shuffled and dealt d per query; a source a query got twice is read once (so a rare query reads
fewer than d). This is bench/herding/workload.py's generator without its duplicate swaps: the
runtime may not import the benchmarks, and the swaps only matter for the paper's figures, not for
the pipeline's cost. Source ``src<i>`` has rate w(s) = 1 + (i mod 10) tuples/s (integer rates:
Herding's sums stay exact), ``TUPLE_BYTES`` bytes each.

The job then lands, each period, the two facet datasets of a query platform
(schemas/landing.py FACET_SCHEMAS): ``subscriptions/`` (each query, the node it runs on at the
period's end, a source it reads) and ``sources/`` (each source's rate), stamped at the period's
start like the replay's query platform; and no edges (queries do not talk to each other). The
population is a function of (n, d, β, seed) only, so re-landing a period writes the same files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache

import numpy as np
import pyarrow as pa

from schemas.landing import FACET_SCHEMAS, SOURCES, SUBSCRIPTIONS

__all__ = ["QueryReads", "power_law", "query_facets", "query_reads", "source_degrees"]

TUPLE_BYTES = 100


class QueryReads:
    """n queries' sources as CSR (`indptr`, `indices` into `names`) and each source's rate."""

    __slots__ = ("indices", "indptr", "names", "rates")

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, rates: np.ndarray) -> None:
        self.indptr, self.indices, self.rates = indptr, indices, rates
        self.names = np.array([f"src{i}" for i in range(len(rates))], dtype=object)


def power_law(rng: np.random.Generator, beta: float, top: int, size: int) -> np.ndarray:
    """`size` draws from P(x) ∝ x^−β on {1..top} (inverse CDF)."""
    x = np.arange(1, top + 1, dtype=np.float64)
    cdf = np.cumsum(x ** -beta)
    cdf /= cdf[-1]
    return (np.searchsorted(cdf, rng.random(size), side="right") + 1).astype(np.int64)


def source_degrees(rng: np.random.Generator, n: int, d: int, beta: float) -> np.ndarray:
    """How many of the n·d reads each source gets (Zong et al. §6.1: popularity ∝ x^−β), drawn
    until they add up to n·d exactly; sources drawn no read are left out."""
    total = n * d
    x = np.arange(1, n + 1, dtype=np.float64)
    mean = float((x ** (1 - beta)).sum() / (x ** -beta).sum())
    parts: list[np.ndarray] = []
    have = 0
    while have < total:
        batch = power_law(rng, beta, n, max(16, int(1.2 * (total - have) / mean)))
        parts.append(batch)
        have += int(batch.sum())
    deg = np.concatenate(parts)
    cut = int(np.searchsorted(np.cumsum(deg), total, side="left"))
    deg = deg[: cut + 1].copy()
    deg[-1] -= int(deg.sum()) - total
    return deg[deg > 0]


@lru_cache(maxsize=4)
def query_reads(n: int, d: int, beta: float, seed: int) -> QueryReads:
    """The sources of n queries of degree d (popularity exponent β), seeded."""
    rng = np.random.default_rng([seed, n, d, 0x4E5D])
    deg = source_degrees(rng, n, d, beta)
    stubs = np.sort(rng.permutation(np.repeat(np.arange(len(deg)), deg)).reshape(n, d), axis=1)
    keep = np.ones(stubs.shape, dtype=bool)
    keep[:, 1:] = stubs[:, 1:] != stubs[:, :-1]  # a source dealt twice is read once
    indptr = np.r_[0, np.cumsum(keep.sum(axis=1))].astype(np.int64)
    used, indices = np.unique(stubs[keep], return_inverse=True)  # only sources someone reads
    rates = (1 + used % 10).astype(np.float64)
    return QueryReads(indptr, indices.astype(np.int64), rates)


def query_facets(reads: QueryReads, keygroups: Sequence[str], assignment: Mapping[str, str],
                 period_end: datetime, period_s: int) -> dict[str, pa.Table]:
    """The period's ``subscriptions/`` and ``sources/`` datasets (key group i is query i)."""
    ts = period_end.astimezone(UTC) - timedelta(seconds=period_s)
    per = np.diff(reads.indptr)
    kg = np.array(keygroups, dtype=object)
    node = np.array([assignment[k] for k in keygroups], dtype=object)
    subs = {"ts": pa.array(np.full(len(reads.indices), ts)), "keygroup": np.repeat(kg, per),
            "node": np.repeat(node, per), "source": reads.names[reads.indices]}
    srcs = {"ts": pa.array(np.full(len(reads.rates), ts)), "source": reads.names,
            "tuples_per_s": reads.rates, "bytes_per_s": reads.rates * TUPLE_BYTES}
    return {kind: pa.Table.from_arrays([pa.array(cols[f.name], type=f.type) for f in schema],
                                       schema=schema)
            for kind, cols in ((SUBSCRIPTIONS, subs), (SOURCES, srcs))
            for schema in (FACET_SCHEMAS[kind],)}
