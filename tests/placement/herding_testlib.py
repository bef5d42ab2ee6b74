"""Tiny query-assignment instances and a brute-force optimum for the herding tests."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import strategies as st

from placement.facets import Source
from placement.herding.instance import capacities, from_state
from placement.model import ClusterState, KeyGroup, Node


def qa_state(subs: Sequence[Sequence[int]], rates: Sequence[float], k: int, *,
             current: Sequence[int | None] | None = None, caps: Sequence[float] | None = None,
             marked: Sequence[int] = (), costs: Sequence[float] | None = None) -> ClusterState:
    """Queries q0.. reading sources s0.. (rates), on nodes n0..n{k-1}; None: an arrival."""
    n = len(subs)
    cur = list(current) if current is not None else [None] * n
    nodes = tuple(Node(f"n{j}", (caps or [1.0] * k)[j], j in marked) for j in range(k))
    kgs = tuple(KeyGroup(f"q{i:02d}", "queries", 1.0, migration_cost=(costs or [1.0] * n)[i])
                for i in range(n))
    return ClusterState(
        nodes, kgs, {f"q{i:02d}": f"n{c}" for i, c in enumerate(cur) if c is not None},
        sources=tuple(Source(f"s{s}", float(r)) for s, r in enumerate(rates)),
        subscriptions={f"q{i:02d}": frozenset(f"s{s}" for s in q) for i, q in enumerate(subs)},
        arrivals=frozenset(f"q{i:02d}" for i, c in enumerate(cur) if c is None))


def traffic(subs: Sequence[Sequence[int]], rates: Sequence[float], node: Sequence[int]) -> float:
    shipped = {(j, s) for q, j in zip(subs, node, strict=True) for s in q}
    return float(sum(rates[s] for _, s in shipped))


def brute_force(state: ClusterState, nu: float) -> float:
    """min Σ_j f(Q_j) over every assignment meeting eq. 1's caps (instance.capacities)."""
    inst = from_state(state)
    caps = capacities(inst, nu)
    subs = [inst.sources_of(q).tolist() for q in range(inst.n)]
    best = float("inf")
    for node in itertools.product(range(inst.k), repeat=inst.n):
        if any(node.count(j) > caps[j] for j in range(inst.k)):
            continue
        best = min(best, traffic(subs, inst.rates.tolist(), node))
    return best


@st.composite
def tiny(draw: st.DrawFn, *, single: bool = False, max_n: int = 6, max_k: int = 3
         ) -> tuple[list[list[int]], list[float], int]:
    """(subscriptions, rates, k) with n ≤ max_n queries, ≤ 4 sources, k ≤ max_k."""
    m = draw(st.integers(1, 4))
    rates = draw(st.lists(st.sampled_from([1.0, 2.0, 5.0]) | st.floats(0.0, 10.0),
                          min_size=m, max_size=m))
    n = draw(st.integers(1, max_n))
    if single:
        subs = [[draw(st.integers(0, m - 1))] for _ in range(n)]
    else:
        subs = [sorted(draw(st.sets(st.integers(0, m - 1), min_size=1, max_size=m)))
                for _ in range(n)]
    return subs, rates, draw(st.integers(1, max_k))
