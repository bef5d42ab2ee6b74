"""Multi-dimensional load, heuristics on the §5.1 workload, and the time-limit path."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from placement import (
    Budget,
    ClusterState,
    KeyGroup,
    Node,
    SolverStatus,
    get_strategy,
    load_distance,
    synthetic_state,
)

#: the checked strategy (placement/registry.py): a params object or keywords
plan_milp = get_strategy("milp")


def _two_dimensional() -> ClusterState:
    """a, b need 60 % memory each; c, e 10 %. CPU (the bottleneck): 10, 10, 5, 15; mean 20."""
    kgs = (
        KeyGroup("a", "op", 10.0, loads={"mem": 60.0}),
        KeyGroup("b", "op", 10.0, loads={"mem": 60.0}),
        KeyGroup("c", "op", 5.0, loads={"mem": 10.0}),
        KeyGroup("e", "op", 15.0, loads={"mem": 10.0}),
    )
    return ClusterState((Node("n0"), Node("n1")), kgs, {k.id: "n0" for k in kgs})


def test_multi_dimensional_hand_computed() -> None:
    state = _two_dimensional()
    free = plan_milp(state, Budget(), candidates="all")
    assert free.after.load_distance == pytest.approx(0.0, abs=1e-6)  # {a, b} | {c, e}
    capped = plan_milp(state, Budget(), resource_caps={"mem": 100.0}, candidates="all")
    # a and b cannot share a node (120 > 100): best is {a, c} | {b, e} or {a, e} | {b, c}, d = 5
    assert capped.status is SolverStatus.OPTIMAL
    assert capped.after.load_distance == pytest.approx(5.0, abs=1e-6)
    assert capped.assignment["a"] != capped.assignment["b"]
    mem = {"n0": 0.0, "n1": 0.0}
    for kg in state.keygroups:
        mem[capped.assignment[kg.id]] += kg.loads["mem"]
    assert max(mem.values()) <= 100.0 + 1e-9
    impossible = plan_milp(state, Budget(), resource_caps={"mem": 50.0}, candidates="all")
    assert impossible.status is SolverStatus.INFEASIBLE and impossible.moves == ()
    assert "infeasible" in impossible.message


@pytest.mark.parametrize("name", ["flux", "greedy", "milp"])
@pytest.mark.parametrize("budget", [Budget(max_migrations=10),
                                    Budget(max_migration_cost=0.3),
                                    Budget(max_migration_cost=0.5, max_migrations=6)])
def test_heuristics_respect_budget_and_improve(name: str, budget: Budget) -> None:
    state = synthetic_state(20, 400, 3, 30.0, seed=3)
    plan = get_strategy(name)(state, budget, time_limit_s=1.0)
    if budget.max_migrations is not None:
        assert plan.migrations <= budget.max_migrations
    if budget.max_migration_cost is not None:
        assert plan.migration_cost <= budget.max_migration_cost + 1e-9
    assert plan.migrations > 0
    assert plan.after.load_distance < 0.8 * plan.before.load_distance
    assert plan.after.load_distance == pytest.approx(load_distance(state, plan.assignment))


def test_milp_never_worse_than_baselines() -> None:
    state = synthetic_state(20, 400, 3, 40.0, seed=5)
    budget = Budget(max_migrations=10)
    milp = get_strategy("milp")(state, budget, time_limit_s=1.0)
    for name in ("flux", "greedy", "random"):
        other = get_strategy(name)(state, budget, seed=1)
        assert milp.after.load_distance <= other.after.load_distance + 1e-9
    assert milp.after.load_distance < get_strategy("random")(state, budget).after.load_distance


@pytest.mark.parametrize("candidates", ["all", "auto"])
def test_time_limit_returns_valid_plan_and_bound(candidates: str) -> None:
    state = synthetic_state(40, 800, 3, 30.0, seed=2)
    budget = Budget(max_migrations=20)
    plan = plan_milp(state, budget, time_limit_s=0.3, candidates=candidates)
    assert plan.status in (SolverStatus.TIME_LIMITED, SolverStatus.OPTIMAL)
    assert set(plan.assignment) == {k.id for k in state.keygroups}
    assert plan.migrations <= 20
    assert plan.lower_bound is not None
    assert 0.0 <= plan.lower_bound <= plan.after.load_distance + 1e-9
    assert plan.after.load_distance < plan.before.load_distance


def test_cbc_is_selectable_at_scale() -> None:
    state = synthetic_state(10, 100, 2, 30.0, seed=4)
    plan = plan_milp(state, Budget(max_migrations=5), solver="cbc", time_limit_s=2.0)
    assert plan.status in (SolverStatus.TIME_LIMITED, SolverStatus.OPTIMAL)
    assert plan.migrations <= 5 and plan.after.load_distance < plan.before.load_distance


def test_neighbourhood_search_keeps_every_constraint() -> None:
    """The LNS path (6 000 x-variables > AUTO_MAX_VARS) with B, both budgets and a memory cap."""
    base = synthetic_state(12, 600, 3, 30.0, seed=6)
    nodes = tuple(replace(n, marked_for_removal=n.id in ("n010", "n011")) for n in base.nodes)
    kgs = tuple(replace(k, loads={"mem": 2.0 * k.load}) for k in base.keygroups)
    state = ClusterState(nodes, kgs, base.assignment)
    budget = Budget(max_migration_cost=0.6, max_migrations=25)
    caps = {"mem": 150.0}
    # the search runs only with a step budget (lns_steps: none by default, docs/algorithms.md)
    plan = plan_milp(state, budget, time_limit_s=1.5, resource_caps=caps, seed=3, lns_steps=3)
    search = plan.phase("neighbourhood search")
    assert search is not None and search.seconds > 0 and "improved" in search.outcome
    assert not search.outcome.startswith("0 sub-MILPs"), search.outcome
    assert plan.status in (SolverStatus.TIME_LIMITED, SolverStatus.OPTIMAL)
    assert plan.migrations <= 25 and plan.migration_cost <= 0.6 + 1e-9
    assert all(m.dst not in ("n010", "n011") for m in plan.moves)
    mem = {n.id: 0.0 for n in nodes}
    for kg in kgs:
        mem[plan.assignment[kg.id]] += kg.loads["mem"]
    assert max(mem.values()) <= 150.0 + 1e-9
    assert plan.after.load_distance < plan.before.load_distance
    assert plan.lower_bound is not None and plan.lower_bound <= plan.after.load_distance + 1e-9


@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_solver_failure_keeps_the_incumbent(solver: str, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    """A solver that dies (say, the cbc process) costs the step, not the plan."""
    import pulp

    def broken(self: pulp.LpProblem, *args: object, **kwargs: object) -> int:
        raise pulp.PulpSolverError("Pulp: Error while trying to execute cbc")

    monkeypatch.setattr(pulp.LpProblem, "solve", broken)
    state = synthetic_state(20, 400, 10, 30.0, seed=2)
    budget = Budget(max_migrations=10)
    plan = plan_milp(state, budget, solver=solver, time_limit_s=0.5)
    flux = get_strategy("flux")(state, budget)
    assert plan.status is SolverStatus.TIME_LIMITED and plan.migrations <= 10
    assert plan.after.load_distance <= flux.after.load_distance + 1e-9
    small = plan_milp(state, budget, solver=solver, candidates="all", time_limit_s=0.5)
    solve = small.phase("solve")
    assert solve is not None and solve.outcome == "solver_error (PulpSolverError)"
    assert small.after.load_distance <= flux.after.load_distance + 1e-9


def test_the_presolve_rule_switched_off_is_the_aggregator(tmp_path: Path) -> None:
    """The bit of `presolve_rule_off` is HiGHS's own numbering; its log names the rule."""
    import highspy
    import numpy as np

    from placement.highs import PRESOLVE_RULE_OFF

    log = tmp_path / "highs.log"
    h = highspy.Highs()
    h.setOptionValue("log_to_console", False)
    h.setOptionValue("log_file", str(log))
    h.setOptionValue("presolve_rule_off", PRESOLVE_RULE_OFF)
    idx = np.array([0, 1], dtype=np.int32)
    h.addVars(2, np.zeros(2), np.ones(2))
    h.changeColsIntegrality(2, idx, np.ones(2, dtype=np.uint8))
    h.changeColsCost(2, idx, np.array([-1.0, -2.0]))
    h.addRow(-highspy.kHighsInf, 1.5, 2, idx, np.ones(2))
    h.run()
    text = log.read_text()
    assert "Presolve rules not allowed" in text
    off = [line for line in text.splitlines() if f"set bit {PRESOLVE_RULE_OFF.bit_length() - 1} "
           in line]
    assert off and off[0].rstrip().endswith("Aggregator")
