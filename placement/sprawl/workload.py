"""Query plans for the experiments (§6.2.2, §6.3.2, §6.4.1): selects, joins and aggregations.

A query is specified by its leaves (a source site's stream, optionally filtered by a price range
[lo, hi), selectivity (hi − lo)/100), its join order (a sequence of merges of the current
inputs), the operators after the last join (filters, aggregates) and its sink site. Every
operator carries a `key`, a canonical text of what it computes: two operators with equal keys
are equivalent (Definition 2) and a filter over the same input with a wider range covers a
narrower one (Definition 1). Rates and CPU demands are functions of the key only (a join's
selectivity is a hash of its key), so equivalent operators are interchangeable.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["OpSpec", "QueryPlan", "QuerySpec", "build", "random_spec", "reorder"]

CPU_PER_RATE = {"source": 0.02, "filter": 0.1, "join": 0.4, "aggregate": 0.2, "sink": 0.02}


def _unit(key: str) -> float:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


@dataclass(frozen=True)
class OpSpec:
    kind: str
    key: str
    cpu: float
    rate_out: float
    site: int | None = None  # pinned site (sources, sinks)
    covers: tuple[str, float, float] | None = None  # a filter: (input key, lo, hi)


@dataclass(frozen=True)
class QueryPlan:
    """A query tree: operators (local indexes), data edges (u → v, rate), sink, L_q, client."""

    id: str
    ops: tuple[OpSpec, ...]
    edges: tuple[tuple[int, int, float], ...]
    sink: int
    bound: float = math.inf

    @property
    def client(self) -> int | None:
        return self.ops[self.sink].site


@dataclass(frozen=True)
class QuerySpec:
    id: str
    leaves: tuple[tuple[int, tuple[float, float] | None], ...]  # (source site, filter range)
    merges: tuple[tuple[int, int], ...]  # join order: indexes into the current inputs
    post: tuple[str, ...]  # "filter" / "aggregate" after the last join
    sink_site: int
    bound: float = math.inf
    rate_of_site: dict[int, float] = field(default_factory=dict)


def build(spec: QuerySpec) -> QueryPlan:
    """The plan of a spec: sources, filters, joins in the given order, post operators, sink."""
    ops: list[OpSpec] = []
    edges: list[tuple[int, int, float]] = []

    def add(kind: str, key: str, rate_in: float, rate_out: float, inputs: list[int],
            site: int | None = None, covers: tuple[str, float, float] | None = None) -> int:
        ops.append(OpSpec(kind, key, CPU_PER_RATE[kind] * rate_in, rate_out, site, covers))
        me = len(ops) - 1
        edges.extend((i, me, ops[i].rate_out) for i in inputs)
        return me

    current: list[int] = []
    for site, rng in spec.leaves:
        rate = spec.rate_of_site.get(site, 5.0 + site % 7)
        src = add("source", f"S{site}", rate, rate, [], site)
        if rng is not None:
            lo, hi = rng
            key = f"F({ops[src].key},{lo:g},{hi:g})"
            src = add("filter", key, rate, rate * (hi - lo) / 100.0, [src],
                      covers=(ops[src].key, lo, hi))
        current.append(src)
    for a, b in spec.merges:
        ia, ib = current[a], current[b]
        ka, kb = sorted((ops[ia].key, ops[ib].key))
        key = f"J({ka}|{kb})"
        r_in = ops[ia].rate_out + ops[ib].rate_out
        j = add("join", key, r_in, r_in * (0.2 + 0.6 * _unit(key)), [ia, ib])
        current = [c for i, c in enumerate(current) if i not in (a, b)] + [j]
    top = current[0]
    for kind in spec.post:
        r_in = ops[top].rate_out
        if kind == "aggregate":
            top = add("aggregate", f"A({ops[top].key})", r_in, 0.2 * r_in, [top])
        else:
            key = f"F({ops[top].key},0,50)"
            top = add("filter", key, r_in, 0.5 * r_in, [top], covers=(ops[top].key, 0.0, 50.0))
    sink = add("sink", f"K{spec.id}", ops[top].rate_out, 0.0, [top], spec.sink_site)
    return QueryPlan(spec.id, tuple(ops), tuple(edges), sink, spec.bound)


def random_spec(rng: np.random.Generator, qid: str, n_ops: int, joins: int,
                source_sites: list[int], sink_sites: list[int], *, grid: int = 10,
                bound: float = math.inf) -> QuerySpec:
    """n_ops operators in all (sources and sink included): joins + 1 sources, `joins` joins,
    one sink, the rest filters (on sources first) and at most one aggregate after the joins."""
    others = n_ops - 2 * joins - 2
    if others < 0:
        raise ValueError(f"{n_ops} operators cannot hold {joins} joins")
    n_src = joins + 1
    pre = min(others, n_src)
    filtered = set(rng.choice(n_src, size=pre, replace=False).tolist())
    leaves: list[tuple[int, tuple[float, float] | None]] = []
    for i in range(n_src):
        site = int(rng.choice(source_sites))
        if i in filtered:
            lo = float(rng.integers(0, grid - 1)) * 100 / grid
            hi = float(rng.integers(int(lo * grid / 100) + 1, grid + 1)) * 100 / grid
            leaves.append((site, (lo, hi)))
        else:
            leaves.append((site, None))
    merges = []
    width = n_src
    for _ in range(joins):
        a, b = sorted(rng.choice(width, size=2, replace=False).tolist())
        merges.append((int(a), int(b)))
        width -= 1
    post = tuple("aggregate" if i == 0 and rng.random() < 0.5 else "filter"
                 for i in range(others - pre))
    return QuerySpec(qid, tuple(leaves), tuple(merges), post, int(rng.choice(sink_sites)), bound)


def reorder(spec: QuerySpec, pair: tuple[int, int]) -> QuerySpec:
    """p' of §5.2.4: join leaves `pair` first, then the rest left-deep in leaf order."""
    a, b = sorted(pair)
    rest = [i for i in range(len(spec.leaves)) if i not in (a, b)]
    leaves = tuple(spec.leaves[i] for i in [a, b, *rest])
    merges = [(0, 1)]
    width = len(leaves) - 1  # after the first merge, the join is last
    for _ in rest:
        merges.append((0, width - 1))  # the oldest remaining leaf with the running join
        width -= 1
    return QuerySpec(spec.id, leaves, tuple(merges), spec.post, spec.sink_site, spec.bound,
                     spec.rate_of_site)
