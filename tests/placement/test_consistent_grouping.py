"""Strategy `cg` (Consistent Grouping's VW pairing): convergence to α*, the signal rules, the
budget, capacity changes, and the VW count kept under any pairing sequence."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.consistent_grouping import (
    CgParams,
    Thresholds,
    cg_metrics,
    classify,
    imbalance,
    normalized_imbalance,
    optimal_vws,
    pair_step,
)
from placement.model import Budget, ClusterState, KeyGroup, Node
from placement.params import ParamsError
from placement.registry import get_strategy
from schemas.config import ConfigError, load_jobs

cg = get_strategy("cg")


def _cluster(caps: dict[str, float], vws: int, mean_util_pct: float = 80.0,
             assignment: dict[str, str] | None = None) -> ClusterState:
    """`vws` equal VWs, round robin over the nodes, loads giving `mean_util_pct` overall."""
    nodes = tuple(Node(n, c) for n, c in caps.items())
    load = mean_util_pct * sum(caps.values()) / vws
    kgs = tuple(KeyGroup(f"op-kg{i:03d}", "op", load, migration_cost=1.0) for i in range(vws))
    names = list(caps)
    assignment = assignment or {k.id: names[i % len(names)] for i, k in enumerate(kgs)}
    return ClusterState(nodes, kgs, assignment)


def _run(state: ClusterState, cycles: int, budget: Budget, **params: object
         ) -> tuple[ClusterState, list[int]]:
    moves = []
    for _ in range(cycles):
        plan = cg(state, budget, **params)
        moves.append(plan.migrations)
        state = ClusterState(state.nodes, state.keygroups, dict(plan.assignment))
    return state, moves


def _alpha(state: ClusterState) -> tuple[np.ndarray, np.ndarray]:
    count = Counter(state.assignment.values())
    alpha = np.array([count[n] for n in state.node_ids], dtype=float)
    return alpha, optimal_vws([n.capacity for n in state.nodes], len(state.keygroups))


@pytest.mark.parametrize("params", [{}, {"relative": True}, {"probe": True},
                                    {"relative": True, "probe": True, "rounds": 3}])
def test_three_nodes_converge_to_the_capacity_proportional_optimum(params: dict) -> None:
    """Capacities 1, 1, 2 and 30 equal VWs dealt 10/10/10: α* = 7.5/7.5/15; the pairing ends
    within one VW of α* on every node and then stops moving."""
    start = _cluster({"a": 1.0, "b": 1.0, "c": 2.0}, 30)
    before = cg_metrics(start, start.assignment)
    state, moves = _run(start, 12, Budget(max_migrations=2), **params)
    alpha, optimum = _alpha(state)
    assert np.all(np.abs(alpha - optimum) < 1.0), (alpha, optimum)
    assert moves[-3:] == [0, 0, 0]
    after = cg_metrics(state, state.assignment)
    assert after["utilisation_imbalance"] < before["utilisation_imbalance"] / 2
    assert after["vw_gap"] <= 1.0 < before["vw_gap"]


def test_the_load_blind_choice_reaches_alpha_star_but_may_swap_at_the_band_edge() -> None:
    """"cheapest" is the paper's choice: it reaches α* but, with 10 VWs per worker and no whole
    count inside the band (§7.2's 0.75 / 0.85 at 80 %), keeps swapping one VW between the two
    reference nodes; "balance" refuses a move that does not lower the pair's larger U."""
    state, moves = _run(_cluster({"a": 1.0, "b": 1.0, "c": 2.0}, 30), 12,
                        Budget(max_migrations=2), vw_choice="cheapest")
    alpha, optimum = _alpha(state)
    assert np.all(np.abs(alpha - optimum) < 1.0)
    assert moves[-3:] == [1, 1, 1]


def test_classify_absolute_and_relative() -> None:
    u = [0.9, 0.8, 0.7, 0.86, 0.74]
    busy, idle = classify(u, Thresholds(0.85, 0.75))
    assert busy.tolist() == [True, False, False, True, False]
    assert idle.tolist() == [False, False, True, False, True]
    # relative: U / mean U (mean 0.5) against θ_b = 1.5, θ_i = 0.5
    busy, idle = classify([0.2, 0.8, 0.5, 0.5], Thresholds(1.5, 0.5, relative=True))
    assert busy.tolist() == [False, True, False, False]
    assert idle.tolist() == [True, False, False, False]


def test_pairing_is_fcfs_busiest_with_idlest_one_vw_per_pair() -> None:
    u = [0.95, 0.50, 0.90, 0.70, 0.80, 0.99]
    vws = [3, 3, 3, 3, 3, 0]  # node 5 is busy but holds no VW: it cannot give one
    assert pair_step(u, vws) == [(0, 1), (2, 3)]
    assert pair_step(u, vws, max_moves=1) == [(0, 1)]


def test_idle_only_destinations_stall_where_probe_moves() -> None:
    """A busy node and a node inside the band: §5.2.1 pairs nothing, §6.1.2's probe does."""
    u, vws = [0.95, 0.80], [5, 5]
    assert pair_step(u, vws) == []
    assert pair_step(u, vws, probe=True) == [(0, 1)]
    assert pair_step([0.95, 0.90], vws, probe=True) == []  # nobody is free


def test_nodes_marked_for_removal_are_drained_and_never_receive() -> None:
    state = _cluster({"a": 1.0, "b": 1.0, "c": 1.0}, 12, mean_util_pct=50.0)
    nodes = (state.nodes[0], state.nodes[1], Node("c", 1.0, marked_for_removal=True))
    state = ClusterState(nodes, state.keygroups, state.assignment)
    assert cg(state, Budget(max_migrations=3), probe=True).migrations == 1  # one per signal
    plan = cg(state, Budget(max_migrations=3), probe=True, rounds=5)
    assert plan.migrations == 3
    assert {m.src for m in plan.moves} == {"c"}
    assert all(m.dst != "c" for m in plan.moves)


def test_budget_count_and_cost_are_kept() -> None:
    state = _cluster({f"n{i}": 1.0 if i < 6 else 5.0 for i in range(9)}, 90)
    plan = cg(state, Budget(max_migrations=2), rounds=5)
    assert plan.migrations == 2
    plan = cg(state, Budget(max_migration_cost=3.5), rounds=5)
    assert plan.migrations == 3 and plan.migration_cost <= 3.5
    assert cg(state, Budget(max_migrations=0)).migrations == 0
    assert cg(state, Budget(), rounds=5).migrations > 6  # unbounded: every pair moves


def test_capacity_change_is_followed_to_the_new_optimum() -> None:
    """Fig. 12's set-up in small: 3 of 10 nodes 5x stronger, then the strong set rotates
    (capacity sum constant); the pairing follows to the new α*."""
    caps = {f"n{i}": 5.0 if i < 3 else 1.0 for i in range(10)}
    state, _ = _run(_cluster(caps, 100), 15, Budget(max_migrations=10), probe=True)
    assert _alpha(state)[0][:3].min() >= 20
    rotated = {f"n{i}": 5.0 if 3 <= i < 6 else 1.0 for i in range(10)}
    moved = _cluster(rotated, 100, assignment=dict(state.assignment))
    before = cg_metrics(moved, moved.assignment)["utilisation_imbalance"]
    state, _ = _run(moved, 25, Budget(max_migrations=10), probe=True)
    alpha, optimum = _alpha(state)
    assert np.all(np.abs(alpha - optimum) <= 2.0), (alpha, optimum)
    assert cg_metrics(state, state.assignment)["utilisation_imbalance"] < before / 3


def test_metrics_on_a_hand_computed_cluster() -> None:
    state = _cluster({"a": 1.0, "b": 1.0, "c": 2.0}, 4, mean_util_pct=50.0,
                     assignment={"op-kg000": "a", "op-kg001": "a", "op-kg002": "b",
                                 "op-kg003": "c"})
    m = cg_metrics(state, state.assignment)  # VW load 50: U = 100, 50, 25 %
    assert m["utilisation_imbalance"] == pytest.approx(100 - 175 / 3)
    assert m["normalized_imbalance"] == pytest.approx((100 - 175 / 3) / (175 / 3))
    assert m["vw_gap"] == pytest.approx(1.0)  # α = 2, 1, 1 against α* = 1, 1, 2
    assert m["vws_optimal/c"] == 2.0 and m["vws/a"] == 2.0
    assert m["utilisation_pct/b"] == pytest.approx(50.0)
    assert imbalance([1, 1]) == 0.0 and normalized_imbalance([0, 0]) == 0.0


@pytest.mark.parametrize(("params", "message"), [
    ({"idle_below": 0.9, "busy_above": 0.8}, "idle_below < busy_above"),
    ({"idle_below": 0.85}, "idle_below < busy_above"),
    ({"busy_ratio": 0.9}, "greater than 1"),
    ({"idle_ratio": 1.2}, "less than 1"),
    ({"idle_below": -0.1}, "greater than 0"),
    ({"vw_choice": "random"}, "balance"),
])
def test_bad_params_are_refused_with_the_rule(params: dict, message: str) -> None:
    with pytest.raises(ParamsError, match=message):
        cg(_cluster({"a": 1.0}, 2), Budget(), **params)


def test_thresholds_out_of_order_fail_when_the_config_loads(tmp_path: Path) -> None:
    path = tmp_path / "jobs.toml"
    path.write_text("[jobs.a]\nstrategy = \"cg\"\n[jobs.a.strategy_params.cg]\n"
                    "idle_below = 0.9\nbusy_above = 0.8\n")
    with pytest.raises(ConfigError, match=r"jobs\.a\.strategy_params\.cg.*idle_below"):
        load_jobs(path)
    with pytest.raises(ValueError, match="0 < idle < busy"):
        Thresholds(0.7, 0.8)
    with pytest.raises(ValueError, match="capacity must be > 0"):
        optimal_vws([1.0, 0.0], 10)
    assert CgParams(relative=True).busy_ratio > 1


@st.composite
def _states(draw: st.DrawFn) -> tuple[ClusterState, Budget, CgParams, int]:
    n = draw(st.integers(1, 6))
    caps = draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 5.0]), min_size=n, max_size=n))
    ops = draw(st.integers(1, 3))
    per_op = draw(st.integers(1, 12))
    loads = draw(st.lists(st.floats(0, 200), min_size=ops * per_op, max_size=ops * per_op))
    homes = draw(st.lists(st.integers(0, n - 1), min_size=ops * per_op, max_size=ops * per_op))
    kgs = tuple(KeyGroup(f"op{i // per_op}-kg{i % per_op:02d}", f"op{i // per_op}", load,
                         migration_cost=float(i % 3)) for i, load in enumerate(loads))
    nodes = tuple(Node(f"n{i}", c) for i, c in enumerate(caps))
    state = ClusterState(nodes, kgs, {k.id: f"n{h}" for k, h in zip(kgs, homes, strict=True)})
    budget = Budget(max_migrations=draw(st.none() | st.integers(0, 5)),
                    max_migration_cost=draw(st.none() | st.floats(0, 10)))
    params = CgParams(relative=draw(st.booleans()), probe=draw(st.booleans()),
                      vw_choice=draw(st.sampled_from(["balance", "cheapest"])),
                      rounds=draw(st.integers(1, 4)))
    return state, budget, params, draw(st.integers(1, 4))


@settings(max_examples=60, deadline=None)
@given(_states())
def test_vw_count_per_operator_is_constant_under_any_pairing_sequence(
        case: tuple[ClusterState, Budget, CgParams, int]) -> None:
    state, budget, params, cycles = case
    per_op = Counter(k.operator for k in state.keygroups)
    for _ in range(cycles):
        plan = cg(state, budget, params)
        assert Counter(state.keygroup(kg).operator for kg in plan.assignment) == per_op
        assert sum(Counter(plan.assignment.values()).values()) == len(state.keygroups)
        assert set(plan.assignment.values()) <= set(state.node_ids)
        assert all(m.src != m.dst for m in plan.moves)
        state = ClusterState(state.nodes, state.keygroups, dict(plan.assignment))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 2), st.integers(0, 5)), min_size=1, max_size=30),
       st.booleans())
def test_pair_step_pairs_distinct_busy_sources_with_distinct_destinations(
        nodes: list[tuple[float, int]], probe: bool) -> None:
    u = [x for x, _ in nodes]
    vws = [c for _, c in nodes]
    pairs = pair_step(u, vws, probe=probe)
    srcs, dsts = [s for s, _ in pairs], [d for _, d in pairs]
    assert len(set(srcs)) == len(srcs) and len(set(dsts)) == len(dsts)
    assert all(u[s] > 0.85 and vws[s] > 0 for s in srcs)
    assert all(u[d] <= 0.85 if probe else u[d] < 0.75 for d in dsts)
    busy = sum(1 for x, c in nodes if x > 0.85 and c > 0)
    free = sum(1 for x, _ in nodes if (x <= 0.85 if probe else x < 0.75))
    assert len(pairs) == min(busy, free)
