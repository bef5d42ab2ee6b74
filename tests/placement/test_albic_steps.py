"""ALBIC (paper §4.3.2, Algorithm 2), step by step on hand-made graphs."""

from __future__ import annotations

import random

import pytest

from placement.albic import (
    calc_scores,
    calc_sets,
    improve_collocation,
    maintain_collocation,
)
from placement.graphpart import graph_part
from placement.model import Budget, ClusterState, Edge, KeyGroup, Node
from placement.registry import get_strategy

#: the checked strategy (placement/registry.py): a params object or keywords
plan_albic = get_strategy("albic")

KG = tuple[str, str, float, str]  # id, operator, load, node


def build(kgs: list[KG], edges: list[tuple[str, str, float]], nodes: list[str],
          marked: tuple[str, ...] = (), cost: dict[str, float] | None = None) -> ClusterState:
    return ClusterState(
        nodes=tuple(Node(n, marked_for_removal=n in marked) for n in nodes),
        keygroups=tuple(KeyGroup(k, op, load, migration_cost=(cost or {}).get(k, 1.0))
                        for k, op, load, _ in kgs),
        assignment={k: node for k, _, _, node in kgs},
        edges=tuple(Edge(s, d, r) for s, d, r in edges),
    )


# ---- step 1: scores -------------------------------------------------------------------------

def _two_ops(a0_node: str = "n1") -> ClusterState:
    kgs = [("a0", "A", 1.0, "n0"), ("a1", "A", 1.0, "n0"),
           ("b0", "B", 1.0, a0_node), ("b1", "B", 1.0, "n1"),
           ("b2", "B", 1.0, "n1"), ("b3", "B", 1.0, "n1")]
    # a0: output 11 over |B| = 4 downstream key groups -> avg 2.75; a1: output 6 -> avg 1.5
    edges = [("a0", "b0", 10.0), ("a0", "b1", 1.0), ("a1", "b2", 3.0), ("a1", "b3", 3.0)]
    return build(kgs, edges, ["n0", "n1"])


def test_scores_threshold_is_avg_times_sf_over_all_downstream_keygroups() -> None:
    s = calc_scores(_two_ops(), _two_ops().assignment, 1.5)
    assert s.avg == {"a0": pytest.approx(2.75), "a1": pytest.approx(1.5)}
    # 10 > 2.75·1.5; 1 is not; 3 > 1.5·1.5 = 2.25
    assert set(s.to_be_col_grps) == {("a0", "b0"), ("a1", "b2"), ("a1", "b3")}
    assert s.to_be_col_grps[0] == ("a0", "b0")  # largest out() first
    assert s.col_grps == ()


def test_scores_threshold_is_strict_and_scales_with_sf() -> None:
    state = _two_ops()
    s = calc_scores(state, state.assignment, 2.0)  # a1: 3 is not > 1.5·2 = 3
    assert set(s.to_be_col_grps) == {("a0", "b0")}
    assert calc_scores(state, state.assignment, 4.0).to_be_col_grps == ()  # 10 < 11


def test_scores_split_collocated_pairs_into_colgrps() -> None:
    state = _two_ops(a0_node="n0")  # b0 now sits with a0
    s = calc_scores(state, state.assignment, 1.5)
    assert s.col_grps == (("a0", "b0"),)
    assert ("a0", "b0") not in s.to_be_col_grps


def test_scores_sum_parallel_edges_ignore_self_edges_and_union_downstream_ops() -> None:
    kgs = [("a0", "A", 1.0, "n0"), ("b0", "B", 1.0, "n1"), ("c0", "C", 1.0, "n1"),
           ("c1", "C", 1.0, "n1")]
    edges = [("a0", "b0", 2.0), ("a0", "b0", 2.0), ("a0", "c0", 1.0), ("a0", "a0", 99.0)]
    s = calc_scores(build(kgs, edges, ["n0", "n1"]), {k: n for k, _, _, n in kgs}, 1.0)
    assert s.out[("a0", "b0")] == 4.0 and ("a0", "a0") not in s.out
    assert s.avg["a0"] == pytest.approx(5.0 / 3)  # O.down = {B, C}: 1 + 2 key groups
    assert set(s.to_be_col_grps) == {("a0", "b0")}


# ---- step 2: maintain collocation -----------------------------------------------------------

def test_calc_sets_merges_overlapping_pairs() -> None:
    sets = calc_sets([("a", "b"), ("c", "d"), ("e", "f"), ("b", "c"), ("f", "e")])
    assert sets == [frozenset("abcd"), frozenset("ef")]
    assert calc_sets([]) == []


def _chain(load: float, heavy: float = 100.0) -> tuple[ClusterState, list[tuple[str, str]]]:
    """a->b (heavy), b->c (light), c->d (heavy), all on n0: one collocated set of four."""
    kgs = [(k, f"op{i}", load, "n0") for i, k in enumerate("abcd")]
    edges = [("a", "b", heavy), ("b", "c", 1.0), ("c", "d", heavy)]
    return build(kgs, edges, ["n0", "n1"]), [("a", "b"), ("b", "c"), ("c", "d")]


def test_maintain_splits_by_max_pl_along_the_min_cut() -> None:
    state, pairs = _chain(load=10.0)  # PL = 40 > maxPL 25 -> p2 = 2
    out = {(e.src, e.dst): e.rate for e in state.edges}
    parts = maintain_collocation(state, pairs, out, Budget(), 25.0, random.Random(0))
    assert parts == [frozenset("ab"), frozenset("cd")]
    whole = maintain_collocation(state, pairs, out, Budget(), 40.0, random.Random(0))
    assert whole == [frozenset("abcd")]  # fits maxPL: one partition


def test_maintain_splits_by_migration_budget() -> None:
    state, pairs = _chain(load=1.0)
    out = {(e.src, e.dst): e.rate for e in state.edges}
    by_count = maintain_collocation(state, pairs, out, Budget(max_migrations=2), 25.0,
                                    random.Random(0))
    assert by_count == [frozenset("ab"), frozenset("cd")]  # p1 = ⌈4 / 2⌉
    by_cost = maintain_collocation(state, pairs, out, Budget(max_migration_cost=3.0), 25.0,
                                   random.Random(0))  # Pmc = 4 > 3 -> p1 = 2
    assert by_cost == [frozenset("ab"), frozenset("cd")]
    assert all(len(p) <= 2 for p in by_cost)


def test_maintain_survives_a_budget_so_small_the_ratio_overflows() -> None:
    """Pmc / 1e-310 is inf: the set splits into single key groups, not an OverflowError."""
    state, pairs = _chain(load=1.0)
    out = {(e.src, e.dst): e.rate for e in state.edges}
    tiny = Budget(max_migration_cost=1e-310)
    assert maintain_collocation(state, pairs, out, tiny, 25.0, random.Random(0)) == []


def test_maintain_resplits_parts_that_still_violate() -> None:
    kgs = [(f"k{i}", f"op{i}", 10.0, "n0") for i in range(6)]
    edges = [(f"k{i}", f"k{i + 1}", 50.0) for i in range(5)]
    state = build(kgs, edges, ["n0", "n1"])
    out = {(e.src, e.dst): e.rate for e in state.edges}
    parts = maintain_collocation(state, [(s, d) for s, d, _ in edges], out, Budget(), 20.0,
                                 random.Random(0))
    assert parts and all(sum(10.0 for _ in p) <= 20.0 for p in parts)
    assert all(len(p) == 2 for p in parts)


def test_single_heavy_vertex_is_handled() -> None:
    """METIS leaves {heavy, light} unsplit; the fallback splits it; no partition remains."""
    kgs = [("h", "A", 40.0, "n0"), ("x", "B", 1.0, "n0"), ("y", "B", 1.0, "n1"),
           ("z", "B", 1.0, "n1")]
    state = build(kgs, [("h", "x", 100.0)], ["n0", "n1"])
    assert calc_scores(state, state.assignment, 1.5).col_grps == (("h", "x"),)
    parts = graph_part(["h", "x"], {"h": 40.0, "x": 1.0}, {("h", "x"): 100.0}, 2)
    assert sorted(map(sorted, parts)) == [["h"], ["x"]]
    assert maintain_collocation(state, [("h", "x")], {("h", "x"): 100.0}, Budget(), 25.0,
                                random.Random(0)) == []
    plan = plan_albic(state, Budget(max_migrations=1), time_limit_s=2.0)
    assert plan.assignment["x"] == "n1"  # the heavy vertex alone on a node balances best
    assert plan.after.load_distance < plan.before.load_distance


def test_max_pl_zero_means_no_partitions() -> None:
    state, pairs = _chain(load=1.0)
    out = {(e.src, e.dst): e.rate for e in state.edges}
    assert maintain_collocation(state, pairs, out, Budget(), 0.0, random.Random(0)) == []


# ---- step 3: improve collocation, the paper's three cases -----------------------------------

def _cases_state() -> ClusterState:
    """n0 load 10 (less loaded), n1 load 20. Partition P = {p, q} on n1, R = {r, s} on n0."""
    kgs = [("gi", "A", 2.0, "n1"), ("gj", "B", 2.0, "n0"),
           ("p", "A", 5.0, "n1"), ("q", "B", 5.0, "n1"), ("f", "C", 8.0, "n1"),
           ("r", "A", 3.0, "n0"), ("s", "B", 3.0, "n0"), ("t", "C", 2.0, "n0")]
    return build(kgs, [], ["n0", "n1"])


P, R = frozenset({"p", "q"}), frozenset({"r", "s"})


@pytest.mark.parametrize(
    ("pair", "parts", "case", "node", "unit"),
    [
        (("gi", "gj"), [], 1, "n0", {"gi", "gj"}),            # less loaded of n1, n0
        (("p", "gj"), [P], 2, "n1", {"p", "q", "gj"}),        # the partition's node (busier)
        (("gi", "r"), [R], 2, "n0", {"gi", "r", "s"}),
        (("p", "r"), [P, R], 3, "n0", {"p", "q", "r", "s"}),  # both partitions, less loaded
    ],
)
def test_three_cases(pair: tuple[str, str], parts: list[frozenset[str]], case: int, node: str,
                     unit: set[str]) -> None:
    state = _cases_state()
    imp = improve_collocation(state, [pair], {pair: 10.0}, parts, Budget(), 25.0,
                              random.Random(0))
    [c] = imp.constraints
    assert (c.case, c.node, set(c.unit)) == (case, node, unit)
    assert imp.pins == {frozenset(unit): node}
    movers = [k for k in unit if state.assignment[k] != node]
    assert imp.forced_count == len(movers)


def test_case_one_end_to_end_the_pair_lands_on_the_less_loaded_node() -> None:
    state = _cases_state()
    pair = ("gi", "gj")
    edges = (Edge("gi", "gj", 100.0), Edge("gi", "t", 1.0))
    state = ClusterState(state.nodes, state.keygroups, state.assignment, edges)
    plan = plan_albic(state, Budget(max_migrations=3), time_limit_s=2.0, max_ld=100.0)
    assert plan.assignment[pair[0]] == plan.assignment[pair[1]] == "n0"
    assert plan.migrations <= 3


def test_pair_choice_takes_the_largest_out_with_seeded_random_ties() -> None:
    state = _cases_state()
    pairs = [("gi", "gj"), ("t", "f"), ("r", "q")]
    out = {("gi", "gj"): 5.0, ("t", "f"): 7.0, ("r", "q"): 7.0}
    picks = {improve_collocation(state, pairs, out, [], Budget(), 25.0,
                                 random.Random(seed)).constraints[0].pair for seed in range(20)}
    assert picks == {("t", "f"), ("r", "q")}  # never the smaller pair; both tied ones occur
    again = [improve_collocation(state, pairs, out, [], Budget(), 25.0,
                                 random.Random(3)).constraints[0].pair for _ in range(3)]
    assert len(set(again)) == 1  # seeded


def test_pair_skipped_when_unaffordable_over_max_pl_or_onto_b() -> None:
    state = _cases_state()
    out = {("gi", "gj"): 9.0, ("p", "gj"): 8.0, ("t", "f"): 1.0}
    # budget 0: no pin can move anything
    imp = improve_collocation(state, list(out), out, [P], Budget(max_migrations=0), 25.0,
                              random.Random(0))
    assert imp.constraints == []
    # maxPL 3: {gi, gj} weighs 4 -> skipped; {p,q,gj} too; {t, f} = 10 also too heavy
    imp = improve_collocation(state, list(out), out, [P], Budget(), 3.0, random.Random(0))
    assert imp.constraints == []
    marked = build([("gi", "A", 2.0, "n1"), ("gj", "B", 2.0, "n0"), ("z", "C", 1.0, "n2")],
                   [], ["n0", "n1", "n2"], marked=("n0",))
    imp = improve_collocation(marked, [("gi", "gj")], {("gi", "gj"): 1.0}, [], Budget(), 25.0,
                              random.Random(0))
    assert [c.node for c in imp.constraints] == ["n1"]  # n0 is less loaded but in B


def test_many_adds_pairs_until_the_allowance_is_spent() -> None:
    kgs = [(f"a{i}", "A", 1.0, "n0") for i in range(6)] + \
          [(f"b{i}", "B", 1.0, "n1") for i in range(6)]
    state = build(kgs, [], ["n0", "n1"])
    pairs = [(f"a{i}", f"b{i}") for i in range(6)]
    out = {p: 10.0 - i for i, p in enumerate(pairs)}
    one = improve_collocation(state, pairs, out, [], Budget(max_migrations=4), 25.0,
                              random.Random(0))
    many = improve_collocation(state, pairs, out, [], Budget(max_migrations=4), 25.0,
                               random.Random(0), many=True)
    assert [c.pair for c in one.constraints] == [pairs[0]]
    assert [c.pair for c in many.constraints] == pairs[:4]  # one forced move each
    assert many.forced_count == 4
