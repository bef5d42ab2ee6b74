"""The MLflow comm-graph's heaviest pairs: the pre-filter at the k-th heaviest rate keeps
exactly the full sort's first k (ties at that rate included), on any graph."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.tracking.charts import heaviest_pairs
from placement.graphpart import pair_rates
from placement.model import ClusterState, Edge, KeyGroup, Node

KGS = [f"kg{i}" for i in range(8)]


def _full_sort(state: ClusterState, after: dict[str, str], k: int) -> list[tuple[str, str, float]]:
    """The definition: every unordered pair's two-way rate, sorted, the first k."""
    both: dict[tuple[str, str], float] = {}
    for (src, dst), rate in pair_rates(state).items():
        key = (src, dst) if src < dst else (dst, src)
        both[key] = both.get(key, 0.0) + rate
    before = state.assignment

    def order(item: tuple[tuple[str, str], float]) -> tuple[float, bool, tuple[str, str]]:
        (a, b), rate = item
        return (-rate, (before[a] == before[b]) == (after[a] == after[b]), (a, b))

    return [(a, b, rate) for (a, b), rate in sorted(both.items(), key=order)[:k]]


@settings(max_examples=150, deadline=None)
@given(
    edges=st.lists(st.tuples(st.sampled_from(KGS), st.sampled_from(KGS),
                             st.sampled_from([0.0, 1.0, 2.0, 3.0])), max_size=30),
    before=st.lists(st.sampled_from(["n1", "n2", "n3"]), min_size=8, max_size=8),
    after=st.lists(st.sampled_from(["n1", "n2", "n3"]), min_size=8, max_size=8),
    k=st.integers(0, 12),
)
def test_the_heaviest_pairs_are_the_full_sorts_first_k(
    edges: list[tuple[str, str, float]], before: list[str], after: list[str], k: int
) -> None:
    state = ClusterState(
        nodes=(Node("n1"), Node("n2"), Node("n3")),
        keygroups=tuple(KeyGroup(g, "op", 1.0) for g in KGS),
        assignment=dict(zip(KGS, before, strict=True)),
        edges=tuple(Edge(s, d, r) for s, d, r in edges if s != d),
    )
    moved = dict(zip(KGS, after, strict=True))
    assert heaviest_pairs(state, moved, k) == _full_sort(state, moved, k)


def _partners_by_every_pair(state: ClusterState, wanted: set[str]
                            ) -> dict[str, dict[str, float]]:
    """The definition: a walk over every pair, both directions summed per partner."""
    out: dict[str, dict[str, float]] = {}
    for (src, dst), rate in pair_rates(state).items():
        if src in wanted:
            out.setdefault(src, {})[dst] = out.setdefault(src, {}).get(dst, 0.0) + rate
        if dst in wanted:
            out.setdefault(dst, {})[src] = out.setdefault(dst, {}).get(src, 0.0) + rate
    return out


@settings(max_examples=150, deadline=None)
@given(
    edges=st.lists(st.tuples(st.sampled_from(KGS), st.sampled_from(KGS),
                             st.floats(0.0, 50.0)), max_size=40),
    wanted=st.sets(st.sampled_from([*KGS, "gone"]), max_size=9),
)
def test_the_moved_units_partners_equal_a_walk_over_every_pair(
    edges: list[tuple[str, str, float]], wanted: set[str]
) -> None:
    """moves.csv's local-traffic shares read the partners of the moved units only: the same
    floats, in the same order, as the walk over every pair (which cost 34 s at 9 M pairs)."""
    from jobs.tracking.audit_trail import _partners

    state = ClusterState(nodes=(Node("n1", 1.0),),
                         keygroups=tuple(KeyGroup(k, "op", 1.0) for k in KGS),
                         assignment=dict.fromkeys(KGS, "n1"),
                         edges=tuple(Edge(a, b, r) for a, b, r in edges))
    got = _partners(state, wanted)
    want = _partners_by_every_pair(state, wanted)
    assert got == want
    assert [list(v) for v in got.values()] == [list(v) for v in want.values()]
