"""ROD (Xing et al. 2006): the paper's Example 2, Theorem 1, the measures against exact
volumes, exhaustive search against brute force, the budget, and bad input."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.facets import Stream
from placement.model import Budget, ClusterState, Edge, KeyGroup, Node
from placement.registry import StrategyInputError, get_strategy
from placement.rod.algorithm import rod_assign
from placement.rod.baselines import count_plans, optimal
from placement.rod.clustering import cluster, clustered_rod, comm_weights
from placement.rod.measures import (
    exact_ratio,
    feasible_set_ratio,
    mmad_bound,
    plane_distance,
    plane_distance_ratio,
    qmc_ratio,
)
from placement.rod.model import LoadModel, LoadModelError, weights
from placement.rod.querygraph import Operator, QueryGraph, cluster_state, linearise, random_trees
from placement.rod.resilience import plan_resilience

#: Example 2 (§2.3, Table 2): L^o of Fig. 4's operators, two equal nodes
EXAMPLE2 = np.array([[14.0, 0.0], [6.0, 0.0], [0.0, 9.0], [0.0, 7.0]])
PLANS = {"a": [0, 0, 1, 1], "b": [0, 1, 0, 1], "c": [0, 1, 1, 0]}
HALF = np.array([0.5, 0.5])


def _w(coef: np.ndarray, bins: list[int] | np.ndarray, share: np.ndarray = HALF) -> np.ndarray:
    return weights(coef / coef.sum(axis=0), np.asarray(bins, dtype=np.int64), share)


def _example2_state(bins: list[int] | None = None) -> ClusterState:
    ops = [f"o{j + 1}" for j in range(4)]
    on = bins or [0, 0, 1, 1]
    return ClusterState(
        nodes=(Node("N1"), Node("N2")),
        keygroups=tuple(KeyGroup(o, o, 1.0, migration_cost=1.0) for o in ops),
        assignment={o: f"N{on[j] + 1}" for j, o in enumerate(ops)},
        streams=(Stream("I1", 1.0), Stream("I2", 1.0)),
        load_model={o: {"I1": float(EXAMPLE2[j, 0]), "I2": float(EXAMPLE2[j, 1])}
                    for j, o in enumerate(ops)})


def test_example2_ratios_of_the_three_plans() -> None:
    """Fig. 5/6: (a) is the product of the axis intercepts, (b) one binding node, (c) best."""
    got = {p: exact_ratio(_w(EXAMPLE2, bins)) for p, bins in PLANS.items()}
    assert got["a"] == pytest.approx(0.5)
    assert got["b"] == pytest.approx(40 / 63)  # W_1 = (1.4, 1.125) dominates W_2
    assert got["c"] == pytest.approx(0.755858, abs=1e-5)
    assert got["c"] > got["b"] > got["a"]


def test_example2_rod_picks_plan_c_and_the_literal_min_picks_b() -> None:
    """§5.2's "maximum candidate plane distance" gives (c); Fig. 10's "min" gives (b)."""
    norm = EXAMPLE2 / EXAMPLE2.sum(axis=0)
    assert list(rod_assign(EXAMPLE2, norm, HALF)) == PLANS["c"]
    assert list(rod_assign(EXAMPLE2, norm, HALF, class2="min")) == PLANS["b"]
    best = max(exact_ratio(_w(EXAMPLE2, list(p))) for p in itertools.product((0, 1), repeat=4))
    assert exact_ratio(_w(EXAMPLE2, PLANS["c"])) == pytest.approx(best)  # (c) is optimal


def test_example2_through_the_strategy() -> None:
    state = _example2_state()
    plan = get_strategy("rod")(state, Budget())
    together = {frozenset(o for o, n in plan.assignment.items() if n == node)
                for node in ("N1", "N2")}
    assert together == {frozenset({"o1", "o4"}), frozenset({"o2", "o3"})}
    assert plan.facet_metrics["feasible_set_ratio"] == pytest.approx(0.755858, abs=1e-5)
    assert plan.facet_before["feasible_set_ratio"] == pytest.approx(0.5)
    literal = get_strategy("rod")(state, Budget(), class2="min")
    assert literal.facet_metrics["feasible_set_ratio"] == pytest.approx(40 / 63)


@pytest.mark.parametrize(("coef", "caps"), [
    (np.array([[1.0, 0], [1, 0], [0, 1], [0, 1]]), np.array([1.0, 1.0])),
    (np.array([[2.0, 0], [1, 0], [0, 2], [0, 1]]), np.array([2.0, 1.0])),
    (np.array([[1.0, 1, 1], [1, 1, 1], [2, 2, 2]]), np.array([1.0, 1.0])),
])
def test_theorem1_ideal_is_reached_when_realisable(coef: np.ndarray, caps: np.ndarray) -> None:
    """When A·L^o can equal L^{n*} = l_k·C_i/C_T, ROD finds it and F = F* (Theorem 1)."""
    share = caps / caps.sum()
    bins = rod_assign(coef, coef / coef.sum(axis=0), share)
    w = _w(coef, bins, share)
    assert np.allclose(w, 1.0)
    assert exact_ratio(w) == pytest.approx(1.0)
    assert plane_distance_ratio(w) == pytest.approx(1.0)
    assert mmad_bound(w) == pytest.approx(1.0)


def test_theorem1_ideal_volume_in_rate_space() -> None:
    """V(F*) = C_T^d/d!·Π 1/l_k: the fraction of a box under the ideal hyperplane."""
    totals, c_t = np.array([20.0, 16.0, 5.0]), 30.0
    rng = np.random.default_rng(0)
    box = c_t / totals  # the axis intercepts
    r = rng.random((200_000, 3)) * box
    inside = (r @ totals <= c_t).mean() * np.prod(box)
    assert inside == pytest.approx(c_t**3 / math.factorial(3) / np.prod(totals), rel=0.02)


def _random_w(seed: int, n: int, d: int) -> np.ndarray:
    """A random plan's W: each stream's load split over n equal nodes by a Dirichlet(1)."""
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(n), size=d).T * n


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 6), d=st.integers(2, 3))
def test_qmc_estimate_agrees_with_the_exact_volume(seed: int, n: int, d: int) -> None:
    w = _random_w(seed, n, d)
    exact = exact_ratio(w)
    est = qmc_ratio(w, points=2048, seed=seed)
    assert abs(est.value - exact) <= max(4 * est.half_width, 0.01)
    assert mmad_bound(w) <= exact + 1e-9  # §4.1: a lower bound
    # §4.2: the partial hypersphere of radius r lies in F
    r = plane_distance(w)
    ball = math.pi ** (d / 2) * r**d / math.gamma(d / 2 + 1) / 2**d
    assert ball * math.factorial(d) <= exact + 1e-9


def test_exact_volume_against_integration_and_closed_forms() -> None:
    w = _random_w(3, 4, 2)
    x = (np.arange(200_000) + 0.5) / 200_000  # area under min(1 - x, min_i (1 - w_i1 x)/w_i2)
    top = np.minimum(1 - x, np.min((1 - np.outer(x, w[:, 0])) / w[:, 1], axis=1))
    assert exact_ratio(w) == pytest.approx(np.clip(top, 0, None).mean() * 2, abs=1e-6)
    corner = np.array([[2.0, 1.5, 4.0], [0.0, 0.5, 0.0]])  # one binding node: 1/(abc)
    assert exact_ratio(corner) == pytest.approx(1 / (2 * 1.5 * 4))
    lower = np.array([0.1, 0.2, 0.0])  # from B': the shifted simplex (1 - ΣB')^3 ratio
    assert exact_ratio(np.ones((2, 3)), lower) == pytest.approx(1.0)
    assert feasible_set_ratio(corner, method="qmc", points=4096).value == pytest.approx(
        1 / 12, abs=0.005)


def test_qmc_reaches_its_tolerance() -> None:
    est = qmc_ratio(_random_w(1, 10, 10), tol=0.002, seed=1)
    assert est.half_width <= 0.002 and not est.exact


@pytest.mark.parametrize(("m", "caps"), [(6, [1.0, 1.0]), (5, [1.0, 1.0, 1.0]), (5, [2.0, 1.0])])
def test_exhaustive_search_agrees_with_brute_force(m: int, caps: list[float]) -> None:
    rng = np.random.default_rng(m)
    coef = rng.random((m, 2)) * (rng.random((m, 2)) < 0.7) + np.eye(m, 2)
    norm, share = coef / coef.sum(axis=0), np.array(caps) / sum(caps)
    brute = max(exact_ratio(weights(norm, np.array(p), share))
                for p in itertools.product(range(len(caps)), repeat=m))
    bins, value = optimal(norm, share, keep=10**6)
    assert value == pytest.approx(brute)
    assert exact_ratio(weights(norm, bins, share)) == pytest.approx(brute)
    _, screened = optimal(norm, share, keep=8, points=4096)  # screened by QMC, then exact
    assert screened == pytest.approx(brute, abs=0.02)
    identical = len(set(caps)) == 1
    assert count_plans(m, len(caps), identical) <= len(caps) ** m


def test_budget_is_kept_and_moves_raise_resilience() -> None:
    state = cluster_state(linearise(random_trees(3, 10, np.random.default_rng(4))), 4)
    full = get_strategy("rod")(state, Budget())
    assert full.migrations > 3
    for budget, most in ((Budget(max_migrations=3), 3), (Budget(max_migration_cost=2.0), 2),
                         (Budget(max_migrations=0), 0)):
        plan = get_strategy("rod")(state, budget)
        assert plan.migrations <= most  # every move costs 1
        if plan.migrations:
            assert _energy(state, plan.assignment) < _energy(state, state.assignment)
            assert "left out by the budget" in plan.message


def _energy(state: ClusterState, assignment: Mapping[str, str]) -> float:
    """E = Σ_i (C_i/C_T)·‖W_i‖⁴, what the budgeted moves lower."""
    model = LoadModel.of(state)
    w = weights(model.normalised(), model.bins(assignment), model.share())
    return float(np.sum(model.share() * np.sum(w * w, axis=1) ** 2))


def test_relabel_keeps_a_rod_plan_in_place() -> None:
    """A current allocation that is ROD's plan with the node names permuted needs no move."""
    state = cluster_state(linearise(random_trees(3, 8, np.random.default_rng(2))), 3)
    target = get_strategy("rod")(state, Budget()).assignment
    rename = {"n0": "n2", "n1": "n0", "n2": "n1"}
    moved = ClusterState(state.nodes, state.keygroups,
                         {u: rename[n] for u, n in target.items()}, state.edges,
                         streams=state.streams, load_model=state.load_model)
    assert get_strategy("rod")(moved, Budget()).migrations == 0


def test_every_strategy_plan_carries_resilience_when_there_is_a_load_model() -> None:
    state = _example2_state([0, 1, 0, 1])
    plan = get_strategy("greedy")(state, Budget())
    assert {"feasible_set_ratio", "headroom_all", "plane_distance_ratio"} <= set(
        plan.facet_metrics)
    plain = ClusterState(state.nodes, state.keygroups, state.assignment)
    assert get_strategy("greedy")(plain, Budget()).facet_metrics == {}


def test_headroom_by_hand() -> None:
    """Two reference nodes (100 % each); u on N1 loads 10·r_s + 5·r_t, v on N2 loads 20·r_t."""
    state = ClusterState(
        nodes=(Node("N1"), Node("N2")),
        keygroups=(KeyGroup("u", "op", 50.0), KeyGroup("v", "op", 40.0)),
        assignment={"u": "N1", "v": "N2"},
        streams=(Stream("s", 4.0), Stream("t", 2.0)),
        load_model={"u": {"s": 10.0, "t": 5.0}, "v": {"t": 20.0}})
    got = plan_resilience(state, state.assignment)
    assert got["headroom_all"] == pytest.approx(100 / 50)  # N1 at 50 %, N2 at 40 %
    assert got["headroom_s"] == pytest.approx((4 + 50 / 10) / 4)
    assert got["headroom_t"] == pytest.approx((2 + min(50 / 5, 60 / 20)) / 2)
    assert got["headroom_min"] == pytest.approx(min(got["headroom_s"], got["headroom_t"]))


def test_linearisation_of_examples_1_and_3() -> None:
    """Example 1: l = c_1, c_2·s_1, c_3, c_4·s_3; §6.2: a varying selectivity and a join get
    their output as a new variable, the join's load (c/s)·r_out."""
    ops = (Operator("o1", 14, 1.0), Operator("o2", 6, 0.9), Operator("o3", 9, 0.5),
           Operator("o4", 14, 0.7))
    lin = linearise(QueryGraph(ops, (("o1", "o2"), ("o3", "o4")),
                               {"I1": ("o1",), "I2": ("o3",)}))
    assert np.allclose(lin.coefficients, EXAMPLE2)
    ops3 = (Operator("a", 2.0, kind="variable"), Operator("b", 3.0, 0.5),
            Operator("j", 4.0, 0.25, kind="join"), Operator("k", 1.0))
    lin3 = linearise(QueryGraph(ops3, (("a", "b"), ("b", "j"), ("j", "k")), {"I1": ("a", "j")}))
    assert lin3.variables == ("I1", "a.out", "j.out")
    assert np.allclose(lin3.coefficients, [[2, 0, 0], [0, 3, 0], [0, 0, 16], [0, 0, 1]])


def test_clustering_respects_threshold_and_cap() -> None:
    state = cluster_state(linearise(random_trees(2, 6, np.random.default_rng(0))), 2)
    coef = np.array([[state.load_model[k.id].get(s.id, 0.0) for s in state.streams]
                     for k in state.keygroups])
    norm = coef / coef.sum(axis=0)
    arcs = [(int(e.src[1:]), int(e.dst[1:])) for e in state.edges]
    labels = cluster(norm, 2, arcs, np.ones(len(arcs)), threshold=0.5, cap=0.6)
    merged = [c for c in set(labels) if np.sum(labels == c) > 1]
    assert merged  # something merged, and no merge went above the cap
    for c in merged:
        assert 2 * np.max(norm[labels == c].sum(axis=0)) <= 0.6 + 1e-9
    assert len(set(cluster(norm, 2, arcs, np.ones(len(arcs)), 2.0, 1.0))) == len(norm)
    cost = np.array([0.3 * norm[u] for u, _ in arcs])
    best = clustered_rod(coef, norm, HALF, arcs, np.full(len(arcs), 0.3), cost,
                         thresholds=(0.1,), caps=(0.3, 0.6))
    plain = rod_assign(coef, norm, HALF)
    assert best.plane_distance >= plane_distance(comm_weights(norm, plain, HALF, arcs, cost))


def test_bad_input_is_a_clear_error() -> None:
    base = _example2_state()
    with pytest.raises(ValueError, match=r"load model: unit 'o1' on stream 'I1'.*>= 0"):
        ClusterState(base.nodes, base.keygroups, base.assignment, streams=base.streams,
                     load_model={**base.load_model, "o1": {"I1": -1.0}})
    with pytest.raises(ValueError, match=r"unit 'o1' has coefficients on unknown streams"):
        ClusterState(base.nodes, base.keygroups, base.assignment, streams=base.streams,
                     load_model={**base.load_model, "o1": {"I9": 1.0}})
    with pytest.raises(ValueError, match=r"min_rate 5.0 is above the observed rate 1.0"):
        Stream("I1", 1.0, min_rate=5.0)
    partial = ClusterState(base.nodes, base.keygroups, base.assignment, streams=base.streams,
                           load_model={"o1": {"I1": 1.0}})
    with pytest.raises(LoadModelError, match=r"3 unit\(s\) have no coefficients"):
        get_strategy("rod")(partial, Budget())
    with pytest.raises(StrategyInputError, match="needs the load_model facet"):
        get_strategy("rod")(ClusterState(base.nodes, base.keygroups, base.assignment),
                            Budget())
    with pytest.raises(ValueError, match="arcs form a cycle"):
        linearise(QueryGraph((Operator("a", 1), Operator("b", 1)),
                             (("a", "b"), ("b", "a")), {"I": ("a",)}))


def test_connected_lb_and_llf_run_as_strategies() -> None:
    state = cluster_state(linearise(random_trees(3, 6, np.random.default_rng(7))), 3)
    assert state.edges and all(isinstance(e, Edge) for e in state.edges)
    for name in ("llf", "connected_lb"):
        plan = get_strategy(name)(state, Budget())
        assert 0 < plan.facet_metrics["feasible_set_ratio"] <= 1


@st.composite
def rod_states(draw: st.DrawFn) -> tuple[ClusterState, Budget]:
    """Mixed capacities, nodes of B, zero rows, streams no unit loads, budgets."""
    n, g, d = draw(st.integers(1, 5)), draw(st.integers(1, 12)), draw(st.integers(1, 4))
    caps = draw(st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=n, max_size=n))
    marked = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    marked[draw(st.integers(0, n - 1))] = False
    coef = draw(st.lists(st.lists(st.just(0.0) | st.floats(0.0, 10.0), min_size=d, max_size=d),
                         min_size=g, max_size=g))
    homes = draw(st.lists(st.integers(0, n - 1), min_size=g, max_size=g))
    costs = draw(st.lists(st.floats(0.0, 3.0), min_size=g, max_size=g))
    state = ClusterState(
        nodes=tuple(Node(f"n{i}", caps[i], marked[i]) for i in range(n)),
        keygroups=tuple(KeyGroup(f"g{k}", "op", sum(coef[k]), migration_cost=costs[k])
                        for k in range(g)),
        assignment={f"g{k}": f"n{homes[k]}" for k in range(g)},
        streams=tuple(Stream(f"s{k}", 1.0, draw(st.sampled_from([0.0, 0.3])))
                      for k in range(d)),
        load_model={f"g{k}": {f"s{j}": coef[k][j] for j in range(d)} for k in range(g)})
    budget = Budget(draw(st.none() | st.floats(0.0, 5.0)), draw(st.none() | st.integers(0, g)))
    return state, budget


@settings(max_examples=60, deadline=None)
@given(case=rod_states())
def test_rod_plans_are_valid_on_any_state(case: tuple[ClusterState, Budget]) -> None:
    """The registry checks completeness, the budget and B; here: the resilience metrics in
    range, and an unlimited budget reaches ROD's target, which leaves B empty."""
    state, budget = case
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    plan = get_strategy("rod")(state, budget)
    metrics = plan.facet_metrics
    if "feasible_set_ratio" in metrics:
        assert 0.0 <= metrics["mmad_bound"] <= metrics["feasible_set_ratio"] + 0.05
        assert metrics["feasible_set_ratio"] <= 1.0 + 1e-9
    if plan.moves and "feasible_set_ratio" in metrics and not marked & set(state.assignment.values()):
        # ROD never proposes a placement less resilient than the one in force
        assert metrics["feasible_set_ratio"] > plan.facet_before["feasible_set_ratio"]
    free = get_strategy("rod")(state, Budget())
    assert "left out" not in free.message
    assert not marked & set(free.assignment.values())


def test_the_fit_recovers_known_coefficients() -> None:
    """A job whose true coefficients are known: loads = R·l (+ 1 % noise) over 12 periods."""
    from placement.rod.fit import fit_load_model

    rng = np.random.default_rng(5)
    true = rng.random((30, 3)) * (rng.random((30, 3)) < 0.6)
    rates = rng.uniform(50, 150, (12, 3))
    loads = rates @ true.T * rng.uniform(0.99, 1.01, (12, 30))
    units, streams = [f"g{j}" for j in range(30)], ["a", "b", "c"]
    fit = fit_load_model(units, streams, loads, rates)
    got = np.array([[fit.coefficients[u][s] for s in streams] for u in units])
    assert np.all(got >= 0)
    assert np.allclose(got, true, atol=0.03)
    assert max(fit.residual.values()) < 0.02
    with pytest.raises(LoadModelError, match="rank 1 < 3 streams"):
        fit_load_model(units, streams, loads, np.outer(rates[:, 0], [1.0, 2.0, 3.0]))
