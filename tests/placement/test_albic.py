"""ALBIC end to end: the maxPL recursion, invariants (units never split, budget), bad input."""

from __future__ import annotations

import math
import random

import pytest

from placement.albic import calc_scores, maintain_collocation
from placement.albic.contract import solve_constrained
from placement.albic.core import level_cost
from placement.albic.params import DEFAULT_LEVEL_WORK, LEVEL_OVERHEAD, AlbicParams
from placement.metrics import collocation_factor
from placement.model import Budget, ClusterState, Edge, KeyGroup, Node, SolverStatus
from placement.registry import get_spec, get_strategy
from placement.workloads.comm import comm_workload

#: the checked strategies (placement/registry.py): a params object or keywords
plan_albic, plan_albic_many = get_strategy("albic"), get_strategy("albic_many")


def _pair_state() -> ClusterState:
    """p1 + p2 (10 each) talk heavily and sit together on n0; n1 is empty; mean 10."""
    nodes = (Node("n0"), Node("n1"))
    kgs = (KeyGroup("p1", "A", 10.0, migration_cost=1.0),
           KeyGroup("p2", "B", 10.0, migration_cost=1.0),
           KeyGroup("o", "B", 0.0, migration_cost=1.0))
    edges = (Edge("p1", "p2", 100.0),)
    return ClusterState(nodes, kgs, {"p1": "n0", "p2": "n0", "o": "n1"}, edges)


def test_recursion_lowers_max_pl_until_ld_fits() -> None:
    state = _pair_state()
    assert calc_scores(state, state.assignment, 1.5).col_grps == (("p1", "p2"),)
    kept = plan_albic(state, Budget(max_migrations=2), max_ld=10.0, time_limit_s=2.0)
    assert kept.assignment["p1"] == kept.assignment["p2"]  # LD 10 <= maxLD: stays together
    assert "maxPL 20" not in kept.message
    split = plan_albic(state, Budget(max_migrations=2), max_ld=5.0, time_limit_s=2.0)
    # maxPL 25, 20: {p1, p2} (load 20) is one unit, LD 10 > 5; at 15 it is split and balanced
    assert "maxPL 25" in split.message and "maxPL 20" in split.message
    assert "maxPL 15" in split.message and "maxPL 10" not in split.message
    # the levels are data too: each timed, with its constrained MILP's status
    assert [p.name for p in split.phases] == ["maxPL 25", "maxPL 20", "maxPL 15"]
    assert all(p.seconds > 0 and p.outcome == "optimal" for p in split.phases)
    assert split.assignment["p1"] != split.assignment["p2"]
    assert split.after.load_distance == pytest.approx(0.0)


def test_recursion_ends_in_the_plain_milp() -> None:
    state = _pair_state()
    plan = plan_albic(state, Budget(max_migrations=0), max_ld=1.0, time_limit_s=2.0)
    assert "maxPL 0: plain MILP" in plan.message
    assert plan.message.count("maxPL") == 6  # 25, 20, 15, 10, 5, then 0
    assert [p.name for p in plan.phases][-2:] == ["maxPL 5", "plain MILP"]
    assert plan.migrations == 0


def test_pinned_unit_does_not_move_and_units_stay_whole() -> None:
    state = _pair_state()
    unit = frozenset({"p1", "p2"})
    solved = solve_constrained(state, Budget(max_migrations=2), [unit], {unit: "n0"}, (0, 0.0),
                               time_limit_s=2.0)
    assert solved.assignment["p1"] == solved.assignment["p2"] == "n0"  # LD 10 is forced
    free = solve_constrained(state, Budget(max_migrations=2), [unit], {}, (0, 0.0),
                             time_limit_s=2.0)
    assert free.assignment["p1"] == free.assignment["p2"]  # moved or not, never split


def test_unit_move_counts_every_key_group_against_the_count_budget() -> None:
    """A two-key-group unit may not move on a one-migration budget, whatever it would gain."""
    nodes = (Node("n0"), Node("n1"))
    kgs = (KeyGroup("a", "A", 10.0, migration_cost=1.0), KeyGroup("b", "B", 10.0,
           migration_cost=1.0), KeyGroup("c", "B", 20.0, migration_cost=1.0))
    state = ClusterState(nodes, kgs, {"a": "n0", "b": "n0", "c": "n0"})
    unit = frozenset({"a", "b"})
    for budget in (Budget(max_migrations=1), Budget(max_migrations=1, max_migration_cost=5.0)):
        solved = solve_constrained(state, budget, [unit], {}, (0, 0.0), time_limit_s=2.0)
        assert solved.assignment["a"] == solved.assignment["b"] == "n0"
        assert solved.assignment["c"] == "n1"  # the single migration goes to c
    two = solve_constrained(state, Budget(max_migrations=2), [unit], {}, (0, 0.0),
                            time_limit_s=2.0)
    moved = {k for k in "abc" if two.assignment[k] != "n0"}
    assert moved in ({"a", "b"}, {"c"})  # both balance perfectly: 20 / 20


def _collocated_workload(seed: int) -> tuple[ClusterState, Budget]:
    """A small §5.3 workload where some one-to-one pairs already share a node."""
    w = comm_workload(6, 60, 6, 60.0, seed)
    rng = random.Random(seed)
    assignment = dict(w.initial)
    for src, dst in w.one_to_one:
        if rng.random() < 0.5:
            assignment[dst] = assignment[src]
    budgets = [Budget(max_migrations=4), Budget(max_migration_cost=0.2),
               Budget(max_migrations=5, max_migration_cost=0.3), Budget()]
    return w.state(assignment), budgets[seed % 4]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("name", ["albic", "albic_many"])
def test_invariants_units_never_split_and_budget_respected(name: str, seed: int) -> None:
    state, budget = _collocated_workload(seed)
    plan = get_strategy(name)(state, budget, time_limit_s=1.0, seed=seed, max_ld=100.0)
    assert set(plan.assignment) == {k.id for k in state.keygroups}
    cost = sum(m.cost for m in plan.moves)
    if budget.max_migrations is not None:
        assert plan.migrations <= budget.max_migrations
    if budget.max_migration_cost is not None:
        assert cost <= budget.max_migration_cost + 1e-9
    scores = calc_scores(state, state.assignment, 1.5)
    parts = maintain_collocation(state, scores.col_grps, scores.out, budget, 25.0,
                                 random.Random(seed), seed=seed)
    assert parts  # the instance does exercise partitions
    for part in parts:  # maxLD 100 keeps the first level: its partitions move whole
        assert len({plan.assignment[k] for k in part}) == 1
    assert plan.status is not SolverStatus.INFEASIBLE


def test_albic_collocates_where_the_plain_milp_does_not() -> None:
    w = comm_workload(6, 60, 6, 100.0, 1)
    state = w.state(w.initial)
    budget = Budget(max_migrations=6)
    milp = get_strategy("milp")(state, budget, time_limit_s=1.0)
    one = plan_albic(state, budget, time_limit_s=1.0)
    many = plan_albic_many(state, budget, time_limit_s=1.0)
    before = collocation_factor(state, state.assignment)
    assert collocation_factor(state, one.assignment) > before
    assert collocation_factor(state, many.assignment) > collocation_factor(state, one.assignment)
    assert collocation_factor(state, many.assignment) > collocation_factor(state, milp.assignment)
    assert many.migrations <= 6 and one.migrations <= 6


# ---- bad input --------------------------------------------------------------------------------

def test_edges_naming_unknown_keygroups_or_negative_rates_are_rejected() -> None:
    state = _pair_state()
    with pytest.raises(ValueError, match="unknown key group 'ghost'"):
        ClusterState(state.nodes, state.keygroups, state.assignment,
                     (Edge("p1", "ghost", 1.0),))
    with pytest.raises(ValueError, match="rate"):
        Edge("p1", "p2", -1.0)
    # a state assembled without the model's checks is still refused by ALBIC itself
    tampered = _pair_state()
    object.__setattr__(tampered, "edges", (Edge("p1", "p2", 1.0), Edge("p1", "ghost", 1.0)))
    with pytest.raises(ValueError, match="albic: edge 'p1'->'ghost' names unknown key group"):
        get_spec("albic").fn(tampered, Budget(max_migrations=1), AlbicParams())
    # and the registry's wrapper, which re-checks the state as it puts it in canonical order
    with pytest.raises(ValueError, match="edge 'p1'->'ghost' names unknown key group"):
        plan_albic(tampered, Budget(max_migrations=1))
    negative = Edge("p1", "p2", 1.0)
    object.__setattr__(negative, "rate", -5.0)
    tampered = _pair_state()
    object.__setattr__(tampered, "edges", (negative,))
    with pytest.raises(ValueError, match="rates must be finite numbers >= 0"):
        plan_albic_many(tampered, Budget(max_migrations=1))


@pytest.mark.parametrize(
    ("params", "match"),
    [({"s_f": 0.0}, "sF"), ({"s_f": -1.5}, "sF"), ({"s_f": math.nan}, "sF"),
     ({"max_pl": 0.0}, r"maxPL.*greater than 0"), ({"max_pl": -5.0}, "maxPL"),
     ({"max_pl": 100.5}, "maxPL"), ({"max_pl": math.inf}, "maxPL"),
     ({"step_pl": 0.0}, "stepPL"), ({"max_ld": -1.0}, "maxLD"),
     ({"time_limit_s": 0.0}, "time_limit_s"),
     ({"level_work": 0}, r"level_work.*greater than or equal to 1"),
     ({"level_work": 2.5}, "level_work")],
)
@pytest.mark.parametrize("name", ["albic", "albic_many"])
def test_bad_parameters_raise_value_error(name: str, params: dict[str, float],
                                          match: str) -> None:
    with pytest.raises(ValueError, match=match):
        get_strategy(name)(_pair_state(), Budget(max_migrations=1), **params)


def test_max_pl_of_exactly_100_is_accepted_and_pair_share_is_checked() -> None:
    plan = plan_albic(_pair_state(), Budget(max_migrations=1), max_pl=100.0, time_limit_s=1.0)
    assert plan.strategy == "albic"
    with pytest.raises(ValueError, match="pair_share"):
        plan_albic_many(_pair_state(), Budget(max_migrations=1), pair_share=0.0)


def test_no_edges_is_the_plain_milp_under_another_name() -> None:
    state = ClusterState((Node("n0"), Node("n1")),
                         tuple(KeyGroup(f"g{i}", "A", float(i + 1)) for i in range(4)),
                         {f"g{i}": "n0" for i in range(4)})
    plan = plan_albic(state, Budget(max_migrations=2), time_limit_s=1.0)
    assert plan.strategy == "albic" and "0 collocated / 0 to-be-collocated" in plan.message
    assert plan.after.load_distance == pytest.approx(0.0)  # {1,4} / {2,3}: 5 and 5


@pytest.mark.parametrize("level_work", [1, 503, 5_000, 25_000])
def test_levels_stop_on_their_work_budget_not_on_the_clock(level_work: int) -> None:
    """maxLD 1 is met by no level and stepPL 0.01 makes 2,500 of them: the levels that run are
    the ones `level_work` pays for (|K| + LEVEL_OVERHEAD each), with a net far off, and the
    plan is deterministic, saying where the budget stopped the levels."""
    state = _pair_state()
    plan = plan_albic(state, Budget(max_migrations=0), max_ld=1.0, step_pl=0.01,
                      time_limit_s=60.0, level_work=level_work)
    levels = [p.name for p in plan.phases if p.name.startswith("maxPL")]
    paid = level_work // level_cost(state)
    assert level_cost(state) == 3 + LEVEL_OVERHEAD
    assert levels == [f"maxPL {25 - 0.01 * i:g}" for i in range(paid)]
    assert plan.phases[-1].name == "plain MILP"
    stop = round(25 - 0.01 * paid, 2)
    assert (f"maxPL {stop:g} and below: not tried, the levels' work budget is spent "
            f"(level_work {level_work:,} key-group levels, a level costs 503 here)"
            in plan.message), plan.message
    assert plan.determinism.startswith("deterministic: "), plan.determinism


def test_a_budget_paying_for_no_level_is_the_plain_milp_and_skips_step_1() -> None:
    """At 32,768 key groups the default budget pays for no level: ALBIC is then the paper's
    maxPL 0, the plain MILP, and step 1 (which serves the levels only) is not run."""
    w = comm_workload(6, 60, 6, 60.0, 2)
    state, budget = w.state(w.initial), Budget(max_migrations=4)
    plan = plan_albic(state, budget, level_work=level_cost(state) - 1, time_limit_s=60.0)
    milp = get_strategy("milp")(state, budget, time_limit_s=60.0)
    assert dict(plan.assignment) == dict(milp.assignment) and plan.moves == milp.moves
    assert (plan.before, plan.after, plan.status) == (milp.before, milp.after, milp.status)
    assert plan.message.startswith("maxPL 25 and below: not tried, the levels' work budget "
                                   "is spent"), plan.message
    assert "to-be-collocated" not in plan.message
    assert [p.name for p in plan.phases] == ["plain MILP"]
    assert plan.determinism.startswith("deterministic: "), plan.determinism
    one = plan_albic(state, budget, level_work=level_cost(state), time_limit_s=60.0)
    assert one.phases[0].name == "maxPL 25" and "to-be-collocated" in one.message


def test_the_paper_s_five_levels_run_up_to_4500_key_groups_and_none_at_32k() -> None:
    """The default budget's reach (placement/albic/params.py), in levels per instance size."""
    def runs(keygroups: int) -> int:
        return min(5, DEFAULT_LEVEL_WORK // (keygroups + LEVEL_OVERHEAD))
    assert [runs(k) for k in (64, 1_200, 4_500, 4_501, 10_000, 24_500, 24_501, 32_768)] == [
        5, 5, 5, 4, 2, 1, 0, 0]


def test_the_clock_is_the_levels_safety_net_and_its_cut_is_recorded() -> None:
    """Levels the work budget pays for but the time limit cannot hold: the net stops them (the
    plain MILP's reserve left), the plan still comes, and it says a clock cut it; the same
    without a work budget (the benchmarks' clock-limited comparison: the first level always
    runs, then the clock)."""
    import time

    state = _pair_state()
    for extra in ({"level_work": 10**9}, {"work_limit": None, "node_limit": None}):
        t0 = time.perf_counter()
        plan = plan_albic(state, Budget(max_migrations=0), max_ld=1.0, step_pl=0.01,
                          time_limit_s=1.0, **extra)
        wall = time.perf_counter() - t0
        levels = [p for p in plan.phases if p.name.startswith("maxPL")]
        assert 1 <= len(levels) < 2500, extra
        assert plan.phases[-1].name == "plain MILP"
        assert "not tried, the levels' time" in plan.message
        assert "ALBIC's maxPL levels" in plan.determinism
        assert plan.determinism.startswith("clock-limited")
        assert wall < 10.0, wall
