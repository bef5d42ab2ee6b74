"""The non-integrated scale-in baseline of paper §5.1 (`drain_then_balance`)."""

from __future__ import annotations

import pytest
from placement_testlib import make_state

from placement import Budget, SolverStatus, get_strategy, node_loads
from placement.scaling.drain import drain_evenly

#: the checked strategy (placement/registry.py): a params object or keywords
plan_drain_then_balance = get_strategy("drain_then_balance")


def test_drain_spreads_b_evenly_hand_computed() -> None:
    """A = n0 (10), n1 (4); B = n2 with 3, 2, 1. Largest first, each to the least loaded of A."""
    state = make_state([10.0, 4.0, 3.0, 2.0, 1.0], [0, 1, 2, 2, 2], [1.0] * 3,
                       [False, False, True])
    drained, count, _ = drain_evenly(state, Budget(max_migrations=3))
    assert count == 3
    assert {k: drained[k] for k in ("g2", "g3", "g4")} == {"g2": "n1", "g3": "n1", "g4": "n1"}
    loads = node_loads(state, drained)
    assert loads == {"n0": 10.0, "n1": 10.0, "n2": 0.0}
    partial, count, _ = drain_evenly(state, Budget(max_migrations=2))
    assert count == 2 and partial["g4"] == "n2"  # the smallest is left on B


def test_drain_empties_the_smallest_b_node_first_and_skips_costly() -> None:
    # n2 (B) holds g1, g2; n3 (B) holds g3 only; g3 costs too much for the budget
    state = make_state([5.0, 1.0, 1.0, 1.0], [0, 2, 2, 3], [1.0] * 4,
                       [False, False, True, True], costs=[1.0, 1.0, 1.0, 9.0])
    drained, count, cost = drain_evenly(state, Budget(max_migration_cost=2.5))
    assert drained["g3"] == "n3"  # mc 9 > 2.5: skipped, although n3 comes first
    assert drained["g1"] == drained["g2"] == "n1" and count == 2 and cost == 2.0


@pytest.mark.parametrize("balancer", ["milp", "flux", "greedy"])
def test_drain_first_then_balance_with_the_rest(balancer: str) -> None:
    """One overloaded node in A and load on B; with 1 migration the non-integrated way drains
    B, while the integrated MILP relieves the overload (the point of paper Figure 5)."""
    state = make_state([6.0, 6.0, 1.0, 1.0, 2.0], [0, 0, 1, 1, 2], [1.0] * 3,
                       [False, False, True])
    plan = plan_drain_then_balance(state, Budget(max_migrations=1), balancer=balancer)
    assert [m.keygroup for m in plan.moves] == ["g4"] and plan.moves[0].dst == "n1"
    assert plan.status is SolverStatus.HEURISTIC and plan.lower_bound is None
    assert "drain: 1 key groups moved off B, 0 left on B" in plan.message
    integrated = get_strategy("milp")(state, Budget(max_migrations=1))
    assert integrated.after.load_distance < plan.after.load_distance
    # with 2 migrations the second balances A: g0 or g1 (6) to n1 (4): n0 6, n1 10, mean 8
    two = plan_drain_then_balance(state, Budget(max_migrations=2), balancer=balancer)
    assert two.migrations == 2 and two.after.load_distance == pytest.approx(2.0)
    assert "balance" in two.message


def test_drain_then_balance_registered_and_checked() -> None:
    state = make_state([1.0, 1.0], [0, 1], [1.0, 1.0], [False, True])
    plan = get_strategy("drain_then_balance")(state, Budget(max_migrations=3), seed=2,
                                               time_limit_s=1.0)
    assert plan.strategy == "drain_then_balance" and plan.assignment["g1"] == "n0"
    with pytest.raises(ValueError, match=r"balancer.*got 'best'"):
        plan_drain_then_balance(state, Budget(), balancer="best")
    with pytest.raises(ValueError, match="time_limit_s"):
        plan_drain_then_balance(state, Budget(), time_limit_s=-1.0)
