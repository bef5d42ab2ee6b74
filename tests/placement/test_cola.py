"""COLA (Khandekar et al., as described in paper §2.1): split from one partition until balanced."""

from __future__ import annotations

import pytest

from placement.baselines.cola import cola_partitions
from placement.metrics import collocation_factor, load_distance
from placement.model import Budget, ClusterState, Edge, KeyGroup, Node
from placement.registry import get_strategy
from placement.workloads.comm import comm_workload

#: the checked strategy (placement/registry.py): a params object or keywords
plan_cola = get_strategy("cola")


def _cliques(marked: tuple[str, ...] = ()) -> ClusterState:
    """Two cliques of four key groups (heavy inside, one light edge across), scattered."""
    nodes = tuple(Node(n, marked_for_removal=n in marked) for n in ("n0", "n1", "n2"))
    kgs = tuple(KeyGroup(f"{c}{i}", f"op{i}", 5.0, migration_cost=1.0)
                for c in "ab" for i in range(4))
    edges = [Edge(f"{c}{i}", f"{c}{j}", 50.0) for c in "ab" for i in range(4)
             for j in range(4) if i < j]
    edges.append(Edge("a3", "b0", 1.0))
    assignment = {k.id: ("n0", "n1", "n2")[i % 3] for i, k in enumerate(kgs)}
    return ClusterState(nodes, kgs, assignment, tuple(edges))


def test_cola_keeps_cliques_together_when_the_balance_allows() -> None:
    state = _cliques(marked=("n2",))
    plan = plan_cola(state, Budget(max_migrations=1))
    assert {plan.assignment[f"a{i}"] for i in range(4)} != {plan.assignment[f"b{i}"]
                                                            for i in range(4)}
    assert len({plan.assignment[f"a{i}"] for i in range(4)}) == 1
    assert collocation_factor(state, plan.assignment) > 99.0  # only the light edge is cut
    assert plan.after.load_distance == pytest.approx(0.0)


def test_cola_ignores_the_budget_and_never_uses_nodes_marked_for_removal() -> None:
    state = _cliques(marked=("n2",))
    plan = plan_cola(state, Budget(max_migrations=0))
    assert plan.migrations > 0  # from scratch, whatever the budget says
    assert "n2" not in set(plan.assignment.values())
    assert "budget ignored" in plan.message


def test_cola_splits_until_load_distance_fits_max_ld() -> None:
    state = _cliques()  # 3 nodes, mean 40/3: two whole cliques leave a node empty, LD 40/3
    loose = cola_partitions(state, max_ld=14.0)
    assert len(loose[0]) == 2 and loose[2] == pytest.approx(40.0 / 3)
    tight_parts, tight_assignment, tight_ld = cola_partitions(state, max_ld=4.0)
    assert len(tight_parts) > 2 and tight_ld <= 4.0
    assert load_distance(state, tight_assignment) == pytest.approx(tight_ld)
    # LD 0 is unreachable (8 × 5 on 3 nodes): it splits down to single key groups, then stops
    parts, _, ld = cola_partitions(state, max_ld=0.0)
    assert len(parts) == 8 and ld == pytest.approx(40.0 / 3 - 10.0)  # loads 15, 15, 10


def test_cola_on_the_synthetic_workload_reaches_max_collocation_but_moves_a_lot() -> None:
    w = comm_workload(10, 100, 5, 60.0, 3)
    state = w.state(w.initial)
    plan = get_strategy("cola")(state, Budget(max_migrations=5), seed=1, time_limit_s=1.0)
    assert collocation_factor(state, plan.assignment) >= w.max_collocation - 1.0
    assert plan.after.load_distance <= 10.0
    assert plan.migrations > 5 * 5
    again = plan_cola(state, Budget(max_migrations=5), seed=1)
    assert again.assignment == plan.assignment  # deterministic


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_cola_rejects_bad_max_ld(bad: float) -> None:
    with pytest.raises(ValueError, match="max_ld"):
        plan_cola(_cliques(), Budget(), max_ld=bad)


def test_cola_without_edges_or_keygroups() -> None:
    empty = ClusterState((Node("n0"), Node("n1")), (), {})
    assert plan_cola(empty, Budget()).assignment == {}
    no_edges = ClusterState((Node("n0"), Node("n1")),
                            tuple(KeyGroup(f"g{i}", "A", 1.0) for i in range(4)),
                            {f"g{i}": "n0" for i in range(4)})
    plan = plan_cola(no_edges, Budget(), max_ld=0.0)
    assert plan.after.load_distance == pytest.approx(0.0)
