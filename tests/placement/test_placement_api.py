"""Registry, bad input, metrics definitions and the synthetic workload."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable

import pytest
from placement_testlib import make_state

from placement import (
    Budget,
    ClusterState,
    Edge,
    KeyGroup,
    Node,
    Plan,
    SolverStatus,
    collocation_factor,
    get_strategy,
    load_distance,
    node_loads,
    plan_metrics,
    strategy_names,
    synthetic_state,
)
from placement.baselines.flux import plan_flux

#: the checked strategy (placement/registry.py): a params object or keywords
plan_milp = get_strategy("milp")


def test_registry_names_and_errors() -> None:
    assert {"milp", "flux", "greedy", "random"} <= set(strategy_names())
    with pytest.raises(ValueError, match=r"unknown strategy 'nope'.*flux.*milp"):
        get_strategy("nope")
    state = make_state([3.0, 1.0], [0, 0], [1.0, 1.0], [False, False])
    with pytest.raises(TypeError, match=r"strategy 'flux': tim_limit: unknown parameter"):
        get_strategy("flux")(state, Budget(max_migrations=1), tim_limit=3)
    plan = get_strategy("flux")(state, Budget(max_migrations=1), seed=3, time_limit_s=1.0)
    assert plan.strategy == "flux" and plan.migrations == 1


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: KeyGroup("g", "op", load=math.nan), r"key group 'g': load"),
        (lambda: KeyGroup("g", "op", load=1.0, loads={"mem": -1.0}), r"load\['mem'\]"),
        (lambda: Node("n", capacity=0.0), r"node 'n': capacity"),
        (lambda: Node("n", capacity=math.inf), r"node 'n': capacity"),
        (lambda: Node(""), "node id"),
        (lambda: ClusterState((), (), {}), "at least one node"),
        (lambda: ClusterState((Node("n", marked_for_removal=True),), (), {}), "marked"),
        (lambda: ClusterState((Node("n"),), (KeyGroup("g", "op", 1.0),), {"g": "x"}),
         "unknown node 'x'"),
        (lambda: ClusterState((Node("n"),), (KeyGroup("g", "op", 1.0),), {}), "no current"),
        (lambda: Budget(max_migrations=-1), "max_migrations"),
        (lambda: Budget(max_migrations=1.5), "max_migrations"),  # type: ignore[arg-type]
        (lambda: Budget(max_migration_cost=-2.0), "max_migration_cost"),
        (lambda: Budget(max_migration_cost=math.nan), "max_migration_cost"),
        (lambda: KeyGroup("g", "op", load=-1.0), r"key group 'g': load must be a finite number >= 0"),
        (lambda: KeyGroup("g", "op", load=math.inf), r"key group 'g': load must be a finite"),
        (lambda: KeyGroup("g", "op", 1.0, state_bytes=-5.0), r"'g': state_bytes must be a finite"),
        (lambda: KeyGroup("g", "op", 1.0, state_bytes=math.nan), r"'g': state_bytes"),
        (lambda: KeyGroup("g", "op", 1.0, state_bytes=math.inf), r"'g': state_bytes"),
        (lambda: KeyGroup("g", "op", 1.0, migration_cost=-1.0), r"'g': migration_cost"),
        (lambda: Node("n", capacity=-2.0), r"node 'n': capacity weight must be a finite number > 0"),
        (lambda: Edge("a", "b", rate=-1.0), r"edge 'a'->'b': rate"),
        (lambda: synthetic_state(0, 10, 1, 10, 0), "nodes"),
        (lambda: synthetic_state(4, 10, 1, -1, 0), "varies"),
    ],
)
def test_bad_input_names_item_and_rule(build: Callable[[], object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build()


def test_bad_planner_parameters() -> None:
    state = make_state([3.0, 1.0], [0, 0], [1.0, 1.0], [False, False])
    budget = Budget(max_migrations=1)
    for kwargs, match in [({"time_limit_s": 0}, "time_limit_s"), ({"solver": "gurobi"}, "solver"),
                          ({"w1": 1.0, "w2": 1.0}, "w1 > 2"),
                          ({"resource_caps": {"mem": -1.0}}, r"resource_caps\.mem"),
                          ({"candidates": "some"}, "candidates")]:
        with pytest.raises(ValueError, match=match):
            plan_milp(state, budget, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Budget"):
        plan_milp(state, 3)
    with pytest.raises(ValueError, match="unknown node"):
        node_loads(state, {"g0": "n0", "g1": "n9"})


def test_metrics_definitions() -> None:
    # n0 (cap 2) carries 6, n1 (cap 1) carries 2, n2 in B carries 1 -> mean = 9 / 3 = 3
    state = ClusterState(
        nodes=(Node("n0", 2.0), Node("n1"), Node("n2", marked_for_removal=True)),
        keygroups=(KeyGroup("a", "op", 6.0), KeyGroup("b", "op", 2.0), KeyGroup("c", "op", 1.0)),
        assignment={"a": "n0", "b": "n1", "c": "n2"},
        edges=(Edge("a", "b", 3.0), Edge("b", "c", 1.0), Edge("a", "a", 50.0)),
    )
    assert node_loads(state, state.assignment) == {"n0": 3.0, "n1": 2.0, "n2": 1.0}
    assert load_distance(state, state.assignment) == pytest.approx(1.0)  # |2 - 3|, B excluded
    assert collocation_factor(state, state.assignment) == 0.0  # self-edge not counted
    together = {"a": "n0", "b": "n0", "c": "n1"}
    assert collocation_factor(state, together) == pytest.approx(75.0)
    metrics = plan_metrics(state, together)
    assert metrics.max_node_load == pytest.approx(4.0) and metrics.min_node_load == 1.0
    quiet = ClusterState(state.nodes, state.keygroups, state.assignment)
    assert collocation_factor(quiet, quiet.assignment) == 100.0
    # no ceil on mean: a perfectly balanced cluster has LD exactly 0
    even = make_state([1.3, 1.3], [0, 1], [1.0, 1.0], [False, False])
    assert load_distance(even, even.assignment) == 0.0


def test_synthetic_workload_shape() -> None:
    a = synthetic_state(20, 400, 3, 30.0, seed=7)
    b = synthetic_state(20, 400, 3, 30.0, seed=7)
    assert a == b and a != synthetic_state(20, 400, 3, 30.0, seed=8)
    loads = sorted(node_loads(a, a.assignment).values())
    assert sum(loads) / len(loads) == pytest.approx(50.0, abs=0.5)
    assert loads[0] == pytest.approx(35.0, abs=1.5) and loads[1] == pytest.approx(35.0, abs=1.5)
    assert loads[-1] == pytest.approx(65.0, abs=1.5) and loads[2] > 45.0
    assert {k.operator for k in a.keygroups} == {"op0", "op1", "op2"}
    assert all(k.migration_cost > 0 for k in a.keygroups) and a.edges


def test_infeasible_requests_keep_the_current_assignment_and_say_why() -> None:
    # a cost budget below every mc_k: nothing can move (not an error)
    state = make_state([3.0, 1.0], [0, 0], [1.0, 1.0], [False, False], costs=[5.0, 5.0])
    for name in ("milp", "flux", "greedy", "drain_then_balance"):
        plan = get_strategy(name)(state, Budget(max_migration_cost=1.0), time_limit_s=1.0)
        assert plan.assignment == dict(state.assignment) and plan.moves == ()
    milp = plan_milp(state, Budget(max_migration_cost=1.0))
    assert "the budget allows no migration; current assignment kept" in milp.message
    # one key group heavier than 2·mean: no assignment satisfies constraint (5), and none
    # lowers d either; (5) is relaxed, the current assignment is the proven optimum
    heavy = make_state([10.0, 0.5], [0, 1], [1.0, 1.0, 1.0], [False, False, False])
    plan = plan_milp(heavy, Budget(max_migrations=2))
    assert plan.status is SolverStatus.OPTIMAL and plan.moves == ()
    assert plan.assignment == dict(heavy.assignment)
    assert "constraint (5) relaxed" in plan.message
    assert plan.lower_bound == pytest.approx(6.5, abs=1e-4)


def test_the_registry_checks_the_hard_post_conditions() -> None:
    from placement.common import make_plan
    from placement.params import StrategyParams
    from placement.registry import PostConditionError, Spec, check_plan

    state = make_state([3.0, 1.0], [0, 0], [1.0, 1.0], [False, True])  # n1 in B
    spec = Spec("x", StrategyParams, plan_flux, "heuristic")

    def plan(assignment: dict[str, str], status: SolverStatus) -> Plan:
        return make_plan(state, assignment, status=status, lower_bound=None)

    keep = plan({"g0": "n0", "g1": "n0"}, SolverStatus.HEURISTIC)
    check_plan(spec, state, Budget(max_migrations=0), keep)
    onto_b = plan({"g0": "n0", "g1": "n1"}, SolverStatus.HEURISTIC)
    with pytest.raises(PostConditionError, match="exceed"):
        check_plan(spec, state, Budget(max_migrations=0), onto_b)
    with pytest.raises(PostConditionError, match="onto a node of B"):
        check_plan(spec, state, Budget(), onto_b)
    with pytest.raises(PostConditionError, match="heuristic reported OPTIMAL"):
        check_plan(spec, state, Budget(), plan(dict(state.assignment), SolverStatus.OPTIMAL))


def test_every_strategy_declares_its_guarantee() -> None:
    from placement.registry import get_spec

    for name in strategy_names():
        spec = get_spec(name)
        assert spec.guarantee in ("exact", "heuristic")
        assert spec.params.model_config.get("frozen") and spec.params.model_config.get("extra") \
            == "forbid"


def test_every_strategy_has_the_one_signature() -> None:
    # plan(state, budget, params) -> Plan, the params its registered class and always given:
    # the registry's wrapper builds them, so no strategy takes keywords or a None default
    from placement.registry import get_spec

    for name in strategy_names():
        spec = get_spec(name)
        sig = inspect.signature(spec.fn)
        params = list(sig.parameters.values())
        assert [p.name for p in params] == ["state", "budget", "params"], name
        assert [p.kind for p in params] == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 3, name
        assert all(p.default is inspect.Parameter.empty for p in params), name
        hints = inspect.get_annotations(spec.fn, eval_str=True)
        assert hints[params[0].name] is ClusterState and hints[params[1].name] is Budget, name
        assert hints[params[2].name] is spec.params and hints["return"] is Plan, name


def test_the_wrapper_names_and_times_the_plan() -> None:
    # a strategy leaves its plan unnamed and untimed (make_plan); the wrapper stamps both, so
    # one function registered under two names would give two names
    from placement.registry import get_spec

    state = synthetic_state(4, 40, 2, 30.0, seed=3)
    for name in ("milp", "flux", "greedy", "random", "drain_then_balance", "cg"):
        spec = get_spec(name)
        raw = spec.fn(state, Budget(max_migrations=3), spec.params(time_limit_s=1.0))
        assert (raw.strategy, raw.wall_s) == ("", 0.0), name
        plan = get_strategy(name)(state, Budget(max_migrations=3), time_limit_s=1.0)
        assert plan.strategy == name and plan.wall_s > 0, name
        assert plan.assignment == raw.assignment, name


def test_the_pre_check_refuses_a_tampered_assignment() -> None:
    from placement.registry import StrategyInputError

    state = make_state([3.0, 1.0], [0, 0], [1.0, 1.0], [False, False])
    object.__setattr__(state, "assignment", {"g0": "n0", "g1": "n7"})
    for name in ("milp", "herding_online", "cg"):
        with pytest.raises(StrategyInputError, match=r"key group 'g1' is on unknown node 'n7'"):
            get_strategy(name)(state, Budget())
