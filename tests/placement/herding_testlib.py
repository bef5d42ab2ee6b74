"""Tiny query-assignment instances and a brute-force optimum for the herding tests."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import strategies as st

from placement.facets import Source
from placement.herding.instance import Instance, capacities, from_state
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


def greedy_reference(inst: Instance, caps: Sequence[int], *, mms: bool
                     ) -> list[tuple[int, int, int]]:
    """IC/MMS (§4.1.2) by the letter, every pair scored every round: the fast path's oracle.

    A type's priority p: more queries first, then lower index. Δ_j(t) = w(t \\ S_j) summed in
    source order. Server j (opened, with room) scores min_t (Δ_j(t), p) (+ w(S_j) for MMS);
    an empty server offers the lightest live type (w(t), p) at its weight and wins a tie; among
    tied opened servers the least loaded, then the lowest index, takes its best type."""
    order = sorted(range(inst.n_types), key=lambda t: (-int(inst.type_count[t]), t))
    rates = inst.rates.tolist()
    srcs = [inst.type_sources(t).tolist() for t in order]
    w = [float(inst.type_w[t]) for t in order]
    rem = [int(inst.type_count[t]) for t in order]
    spare = [int(c) for c in caps]
    k = len(spare)
    load, f = [0] * k, [0.0] * k
    covered: list[set[int]] = [set() for _ in range(k)]
    out: list[tuple[int, int, int]] = []

    def delta(j: int, p: int) -> float:
        d = 0.0
        for s in srcs[p]:
            if s not in covered[j]:
                d += rates[s]
        return d

    while sum(rem) > 0:
        live = [p for p in range(len(rem)) if rem[p] > 0]
        ph = min(live, key=lambda p: (w[p], p))
        best = {j: min((delta(j, p), p) for p in live)
                for j in range(k) if load[j] > 0 and spare[j] > 0}
        score = {j: d + (f[j] if mms else 0.0) for j, (d, _) in best.items()}
        mn = min(score.values(), default=float("inf"))
        empties = [j for j in range(k) if load[j] == 0 and spare[j] > 0]
        if empties and w[ph] <= mn:
            j, p = empties[0], ph
        else:
            j = min((jj for jj in score if score[jj] == mn), key=lambda jj: (load[jj], jj))
            p = best[j][1]
        b = min(spare[j], rem[p])
        out.append((order[p], j, b))
        rem[p] -= b
        spare[j] -= b
        load[j] += b
        new = [s for s in srcs[p] if s not in covered[j]]
        covered[j].update(new)
        f[j] += sum(rates[s] for s in new)
    return out
