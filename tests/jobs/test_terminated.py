"""Units on a node a published version terminated are moved off before the strategy plans
(jobs/plan/terminated.py): for every state, budget and set of terminated nodes, the plan leaves
no unit there and keeps the budget, or it is refused naming the nodes; the plan is stated
against the real starting point, so its moves include the evacuation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.errors import StageError
from jobs.plan.scaling import solve
from placement.model import Budget, ClusterState, KeyGroup, Node

NODES = ("n0", "n1", "n2", "n3")


@st.composite
def cases(draw: st.DrawFn) -> tuple[ClusterState, frozenset[str], Budget]:
    nodes = NODES[:draw(st.integers(2, len(NODES)))]
    units = [f"k{i:02d}" for i in range(draw(st.integers(1, 14)))]
    state = ClusterState(
        tuple(Node(n, draw(st.sampled_from((1.0, 2.0)))) for n in nodes),
        tuple(KeyGroup(u, f"op{i % 2}", draw(st.floats(0.5, 30)), state_bytes=10.0,
                       migration_cost=1.0) for i, u in enumerate(units)),
        {u: draw(st.sampled_from(nodes)) for u in units})
    gone = frozenset(draw(st.lists(st.sampled_from(nodes[1:]), min_size=1, unique=True)))
    budget = Budget(max_migrations=draw(st.integers(0, 16)),
                    max_migration_cost=draw(st.one_of(st.none(), st.floats(0, 20))))
    return state, gone, budget


@settings(max_examples=60, deadline=None)
@given(cases(), st.sampled_from(("greedy", "milp")))
def test_no_unit_stays_on_a_terminated_node_and_the_budget_holds(
        case: tuple[ClusterState, frozenset[str], Budget], strategy: str) -> None:
    state, gone, budget = case
    stranded = [u for u, n in state.assignment.items() if n in gone]
    fits = (budget.max_migrations is None or len(stranded) <= budget.max_migrations) and (
        budget.max_migration_cost is None or len(stranded) <= budget.max_migration_cost)
    if not fits:
        with pytest.raises(StageError) as refused:
            solve(state, budget, strategy, {}, 1.0, None, gone=gone, job_id="j")
        assert all(n in refused.value.what for n in sorted(gone))
        assert "rollback" in refused.value.fix
        return
    solved = solve(state, budget, strategy, {}, 1.0, None, gone=gone, job_id="j")
    plan = solved.plan
    assert not gone & set(plan.assignment.values())
    assert set(plan.assignment) == set(state.assignment)
    assert {m.keygroup for m in plan.moves} == {
        u for u in state.assignment if state.assignment[u] != plan.assignment[u]}
    assert {m.keygroup for m in plan.moves} >= set(stranded)
    assert budget.max_migrations is None or len(plan.moves) <= budget.max_migrations
    assert budget.max_migration_cost is None or (
        sum(m.cost for m in plan.moves) <= budget.max_migration_cost + 1e-9)
    assert solved.state.assignment == state.assignment  # stated against the real start
    marked = {n.id for n in solved.state.nodes if n.marked_for_removal}
    assert marked == gone & set(state.node_ids)
    if stranded:
        assert "terminated by a published version" in plan.message
