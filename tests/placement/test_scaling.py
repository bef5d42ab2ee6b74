"""Algorithm 1 (placement/scaling/cycle.py) and its policy (placement/scaling/policy.py)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from placement.metrics import node_loads
from placement.model import Budget, ClusterState, KeyGroup, Node
from placement.scaling import ScalingOutcome, scaling_cycle, terminate_empty
from placement.scaling.policy import (
    ScalingHistory,
    ScalingPolicy,
    lpt_load_distance,
    new_node_ids,
)


def cluster(nodes: int, per_node: int, load: float, *, marked: int = 0) -> ClusterState:
    """`nodes` unit nodes n00.., `per_node` key groups of `load` each; the last `marked` in B."""
    kgs, assignment = [], {}
    for i in range(nodes):
        for j in range(per_node):
            kg = f"g{i:02d}{j:02d}"
            kgs.append(KeyGroup(kg, "op", load, state_bytes=1000.0 + j, migration_cost=1.0))
            assignment[kg] = f"n{i:02d}"
    ns = tuple(Node(f"n{i:02d}", marked_for_removal=i >= nodes - marked) for i in range(nodes))
    return ClusterState(ns, tuple(kgs), assignment)


def scaled(state: ClusterState, factor: float) -> ClusterState:
    kgs = tuple(replace(k, load=k.load * factor) for k in state.keygroups)
    return replace(state, keygroups=kgs)


def advance(outcome: ScalingOutcome) -> ClusterState:
    """What the runtime runs after applying the plan: the planned nodes and assignment."""
    return replace(outcome.state, assignment=dict(outcome.plan.assignment))


def check_round(before: ClusterState, outcome: ScalingOutcome) -> None:
    """Invariants of one cycle: Lemma 1, nothing lost, no non-empty node terminated."""
    plan, after = outcome.plan, outcome.state
    marked = {n.id for n in after.nodes if n.marked_for_removal}
    assert set(plan.assignment) == {k.id for k in before.keygroups}
    assert set(plan.assignment.values()) <= set(after.node_ids)
    for move in plan.moves:  # Lemma 1: no key group migrates from A to B
        assert move.dst not in marked, move
    busy = set(before.assignment.values())
    assert not set(plan.scaling.nodes_to_terminate) & busy
    assert not set(plan.scaling.nodes_to_terminate) & set(plan.assignment.values())
    assert set(plan.scaling.nodes_to_mark) == marked
    assert len(after.nodes) - len(marked) >= 1


def test_terminate_empty_only_drops_empty_marked_nodes() -> None:
    state = cluster(3, 2, 10.0, marked=1)
    kept, gone = terminate_empty(state)
    assert gone == () and kept is state
    empty = replace(state, assignment={k: "n00" for k in state.assignment})
    kept, gone = terminate_empty(empty)
    assert gone == ("n02",) and kept.node_ids == ("n00", "n01")


def test_scale_out_adds_ceil_total_over_target_and_fills_new_nodes() -> None:
    state = cluster(4, 10, 9.0)  # every node at 90 % > 80 %: total 360 needs 4.5 nodes → 5
    outcome = scaling_cycle(state, Budget(max_migrations=40), strategy="greedy")
    check_round(state, outcome)
    assert outcome.decision.direction == "out"
    assert outcome.plan.scaling.nodes_to_add == ("n04",)
    assert "360.0" in outcome.plan.scaling.reason and "4.50" in outcome.plan.scaling.reason
    loads = node_loads(outcome.state, outcome.plan.assignment)
    assert loads["n04"] > 0 and max(loads.values()) <= 80.0 + 1e-9


def test_hot_node_that_balancing_fixes_does_not_scale_out() -> None:
    state = cluster(4, 10, 5.0)  # 50 % each; make n00 hot at 95 %
    kgs = tuple(replace(k, load=9.5) if state.assignment[k.id] == "n00" else k
                for k in state.keygroups)
    state = replace(state, keygroups=kgs)
    assert node_loads(state, state.assignment)["n00"] == pytest.approx(95.0)
    outcome = scaling_cycle(state, Budget(max_migrations=10), strategy="greedy")
    assert outcome.decision.direction == "none" and outcome.plan.scaling.nodes_to_add == ()
    assert max(node_loads(state, outcome.plan.assignment).values()) <= 80.0
    # a budget too small to fix it: still hot after the plan, but the total fits on A
    outcome = scaling_cycle(state, Budget(max_migrations=1), strategy="greedy")
    assert outcome.decision.direction == "none" and outcome.plan.scaling.nodes_to_add == ()
    assert "balancing" in outcome.decision.reason


def test_scale_in_marks_cheapest_nodes_and_respects_min_nodes() -> None:
    state = cluster(6, 4, 5.0)  # 6 nodes at 20 %: 120 fits on 2 nodes at 80 %
    kgs = tuple(replace(k, state_bytes=1e9) if state.assignment[k.id] == "n00" else k
                for k in state.keygroups)
    state = replace(state, keygroups=kgs)
    policy = ScalingPolicy(min_nodes=3, max_ld=100.0)
    outcome = scaling_cycle(state, Budget(max_migrations=4), strategy="greedy", policy=policy)
    check_round(state, outcome)
    assert outcome.decision.direction == "in"
    assert set(outcome.decision.mark) == {"n01", "n02", "n03"}  # n00 holds the most state
    assert len(outcome.state.nodes) - len(outcome.marked) == 3


def test_scale_in_refused_when_remaining_nodes_cannot_be_balanced() -> None:
    kgs = (KeyGroup("big", "op", 70.0), KeyGroup("s1", "op", 10.0), KeyGroup("s2", "op", 10.0))
    state = ClusterState((Node("n0"), Node("n1"), Node("n2")), kgs,
                         {"big": "n0", "s1": "n1", "s2": "n2"})
    # 90 % fits on two nodes at 80 %, but two nodes reach LD 25 > maxLD 10
    assert lpt_load_distance(state, ["n0", "n1"]) == pytest.approx(25.0)
    outcome = scaling_cycle(state, Budget(max_migrations=2), strategy="greedy")
    assert outcome.decision.direction == "none" and "maxLD" in outcome.decision.reason


def test_never_removes_the_last_node() -> None:
    state = cluster(1, 3, 1.0)
    outcome = scaling_cycle(state, Budget(max_migrations=2), strategy="greedy")
    assert outcome.decision.direction == "none" and outcome.marked == ()
    state = cluster(3, 1, 1.0)
    outcome = scaling_cycle(state, Budget(max_migrations=2), strategy="greedy",
                            policy=ScalingPolicy(min_nodes=0))
    assert len(outcome.state.nodes) - len(outcome.marked) == 1


def test_max_nodes_caps_scale_out_and_reason_says_so() -> None:
    state = cluster(2, 10, 10.0)  # 200 % needs 2.5 nodes at 80 % → 3
    policy = ScalingPolicy(max_nodes=2)
    outcome = scaling_cycle(state, Budget(max_migrations=5), strategy="greedy", policy=policy)
    assert outcome.decision.direction == "none" and "max_nodes" in outcome.decision.reason
    outcome = scaling_cycle(scaled(state, 2.0), Budget(max_migrations=5), strategy="greedy",
                            policy=ScalingPolicy(max_nodes=3))
    assert outcome.plan.scaling.nodes_to_add == ("n02",) and "capped" in outcome.decision.reason


def test_cooldown_blocks_opposite_decision_only_within_window() -> None:
    state = cluster(6, 4, 5.0)
    policy = ScalingPolicy(cooldown_cycles=2, max_ld=100.0)
    budget = Budget(max_migrations=4)
    recent = ScalingHistory(("out", "none"))
    outcome = scaling_cycle(state, budget, strategy="greedy", policy=policy, history=recent)
    assert outcome.decision.direction == "none" and "cool-down" in outcome.decision.reason
    old = ScalingHistory(("out", "none", "none"))
    outcome = scaling_cycle(state, budget, strategy="greedy", policy=policy, history=old)
    assert outcome.decision.direction == "in"


def test_scale_out_reinstates_draining_nodes_before_adding() -> None:
    state = cluster(4, 10, 9.0, marked=1)  # A = 3 nodes, 360 % needs 4.5
    outcome = scaling_cycle(state, Budget(max_migrations=10), strategy="greedy")
    assert outcome.decision.reinstate == ("n03",)
    assert outcome.plan.scaling.nodes_to_add == ("n04",) and outcome.marked == ()


def test_new_node_ids_continue_numbering_and_never_reuse() -> None:
    assert new_node_ids(["node-00", "node-07"], 2) == ("node-08", "node-09")
    assert new_node_ids(["n059", "n010"], 1, used=["n060"]) == ("n061",)
    assert new_node_ids(["alpha", "beta"], 2) == ("node-00", "node-01")


@pytest.mark.parametrize("bad", [
    {"target_utilisation": 0.0}, {"target_utilisation": 1.5}, {"cooldown_cycles": -1},
    {"min_nodes": 4, "max_nodes": 3}, {"max_ld": -1.0},
])
def test_policy_rejects_bad_parameters(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="scaling"):
        ScalingPolicy(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("strategy", ["greedy", "milp"])
def test_ramp_scales_out_then_in_and_drains_before_terminating(strategy: str) -> None:
    """Lemma 1 every round; Lemma 4.2: marked nodes drain and are terminated, never while busy."""
    base = cluster(4, 6, 12.0)  # 72 % per node: 288 % needs 3.6 nodes, no scaling
    state, history = base, ScalingHistory()
    policy = ScalingPolicy(cooldown_cycles=2, max_ld=15.0)
    budget = Budget(max_migrations=6)
    seen: list[str] = []
    terminated: list[str] = []
    for factor in [1.0] + [1.5] * 4 + [0.6] * 9:
        current = scaled(replace(state, keygroups=base.keygroups), factor)
        outcome = scaling_cycle(current, budget, strategy=strategy, policy=policy,
                                history=history, time_limit_s=2.0)
        check_round(current, outcome)
        assert not set(terminated) & set(outcome.state.node_ids)
        seen.append(outcome.decision.direction)
        terminated += outcome.terminated
        history = history.after(outcome.decision.direction, outcome.decision.add)
        state = advance(outcome)
    assert seen[0] == "none", seen
    assert "out" in seen and "in" in seen and seen.index("out") < seen.index("in"), seen
    assert terminated, "the marked nodes drained and were terminated"
    for i, d in enumerate(seen):  # cool-down: no opposite decision within 2 cycles
        window = seen[max(0, i - 2):i]
        assert not (d == "in" and "out" in window) and not (d == "out" and "in" in window)
