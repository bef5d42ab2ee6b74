"""The offline algorithms' defining rules on hand-made instances, Thm 3 against brute force,
and the budgeted migration towards a target."""

from __future__ import annotations

import numpy as np
import pytest
from herding_testlib import brute_force, greedy_reference, qa_state, tiny
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.herding.workload import workload
from placement.herding.instance import capacities, from_state
from placement.herding.metrics import stream_traffic
from placement.herding.migrate import within_budget
from placement.herding.offline import (
    Triples,
    greedy_ic_mms,
    mqp,
    offrand,
    run_offline,
    single_source,
)
from placement.model import Budget, ClusterState
from placement.registry import get_strategy


def named(state: ClusterState, triples: Triples) -> list[tuple[tuple[str, ...], int, int]]:
    inst = from_state(state)
    return [(tuple(inst.source_ids[s] for s in inst.type_sources(int(t))), int(j), int(b))
            for t, j, b in zip(*triples, strict=True)]


def ic_vs_mms_state() -> ClusterState:
    # P={s1} (w 1), Q={s0} (w 10), R={s0,s1} (w 11); caps ⌊1.5·3/2⌋ = 2
    return qa_state([[1], [0], [0, 1]], [10.0, 1.0], 2)


def test_ic_takes_the_pair_of_least_incremental_cost() -> None:
    state = ic_vs_mms_state()
    inst = from_state(state)
    steps = named(state, greedy_ic_mms(inst, capacities(inst, 0.5), mms=False))
    # lightest type on an empty server; an empty server wins a tie (Q: Δ 10 on n0 or n1);
    # R then goes where it adds least: n1 already has s0, Δ = w(s1) = 1
    assert steps == [(("s1",), 0, 1), (("s0",), 1, 1), (("s0", "s1"), 1, 1)]


def test_mms_takes_the_pair_of_least_server_traffic() -> None:
    state = ic_vs_mms_state()
    inst = from_state(state)
    steps = named(state, greedy_ic_mms(inst, capacities(inst, 0.5), mms=True))
    # R: f(n0 ∪ R) = 1 + 10 = 11 = f(n1 ∪ R) = 10 + 1: a tie, the lower index wins
    assert steps[-1] == (("s0", "s1"), 0, 1)


@st.composite
def exact_rates_case(draw: st.DrawFn) -> tuple[list[list[int]], list[float], int, float]:
    """Up to 60 queries on up to 10 sources (the first ones popular), k ≤ 6, quarter rates
    (0 included): every sum is exact in floating point, so a tie is a tie on both paths."""
    m = draw(st.integers(1, 10))
    rate = st.sampled_from([1.0, 1.0, 2.0, 0.5, 0.0]) | st.integers(0, 40).map(lambda x: x / 4)
    rates = draw(st.lists(rate, min_size=m, max_size=m))
    popular = st.integers(0, m - 1) | st.integers(0, min(m, 3) - 1)
    subs = draw(st.lists(st.sets(popular, min_size=1, max_size=min(m, 4)).map(sorted),
                         min_size=1, max_size=60))
    return subs, rates, draw(st.integers(1, 6)), draw(st.sampled_from([0.0, 0.05, 0.5]))


@settings(max_examples=150, deadline=None)
@given(case=exact_rates_case(), mms=st.booleans(), small=st.sampled_from([0, 2, 16]))
def test_fast_ic_and_mms_follow_the_rule_by_the_letter(case: tuple, mms: bool,
                                                       small: int) -> None:
    """The incremental best-pair structure gives exactly the triples of the rule computed by
    brute force every round (the oracle), in both its Python and numpy gains."""
    subs, rates, k, nu = case
    inst = from_state(qa_state(subs, rates, k))
    caps = capacities(inst, nu)
    t, j, b = (a.tolist() for a in greedy_ic_mms(inst, caps, mms=mms, small=small))
    assert list(zip(t, j, b, strict=True)) == greedy_reference(inst, caps.tolist(), mms=mms)


@pytest.mark.parametrize(("beta", "d"), [(2.0, 2), (1.5, 3)])
def test_fast_ic_and_mms_follow_the_rule_on_the_generator(beta: float, d: int) -> None:
    """The same on the §6.1 generator (n = 200, k = 12, unit rates: many exact ties, many
    types covered on two sources at once, servers tied across both heaps)."""
    inst = workload(200, d, beta, 3).instance(12)
    caps = capacities(inst, 0.05)
    for mms in (False, True):
        want = greedy_reference(inst, caps.tolist(), mms=mms)
        for small in (0, 16):
            t, j, b = (a.tolist() for a in greedy_ic_mms(inst, caps, mms=mms, small=small))
            assert list(zip(t, j, b, strict=True)) == want


def test_fig2_fills_the_emptiest_server_with_the_heaviest_source() -> None:
    state = qa_state([[0]] * 3 + [[1]] * 2 + [[2]], [5.0, 3.0, 1.0], 2)
    inst = from_state(state)
    steps = named(state, single_source(inst, capacities(inst, 0.0)))
    assert steps == [(("s0",), 0, 3), (("s1",), 1, 2), (("s2",), 1, 1)]


def test_mqp_saturates_a_server_with_the_largest_types_first() -> None:
    state = qa_state([[0]] * 3 + [[1]] * 2 + [[2]] * 1, [1.0, 1.0, 1.0], 2)
    inst = from_state(state)
    steps = named(state, mqp(inst, capacities(inst, 0.0)))
    assert steps == [(("s0",), 0, 3), (("s1",), 1, 2), (("s2",), 1, 1)]
    # eq. 3's θ = 6 − 1.05·6/2 < 0 is clamped to one query: server 0 takes the largest type
    eq3 = named(state, mqp(inst, capacities(inst, 0.05), theta="eq3", nu=0.05))
    assert eq3[0] == (("s0",), 0, 3)


@settings(max_examples=80, deadline=None)
@given(case=tiny(single=True, max_n=7, max_k=3), nu=st.sampled_from([0.0, 0.05, 0.5]))
def test_single_source_is_within_twice_the_optimum(case: tuple, nu: float) -> None:
    """Theorem 3: with one source per query, Fig. 2's traffic ≤ 2·OPT (brute force)."""
    subs, rates, k = case
    state = qa_state(subs, rates, k)
    plan = get_strategy("herding_offline")(state, Budget(), algorithm="single_source", nu=nu)
    opt = brute_force(state, nu)
    assert plan.facet_metrics["stream_traffic"] <= 2 * opt + 1e-9
    assert plan.facet_metrics["traffic_lower_bound"] <= opt + 1e-9


@settings(max_examples=40, deadline=None)
@given(case=tiny(max_n=12, max_k=4), algorithm=st.sampled_from(
    ["ic", "mms", "mqp", "single_source", "offrand"]), nu=st.sampled_from([0.0, 0.05, 1.0]),
    seed=st.integers(0, 3))
def test_every_algorithm_places_every_query_within_the_caps(case: tuple, algorithm: str,
                                                            nu: float, seed: int) -> None:
    subs, rates, k = case
    inst = from_state(qa_state(subs, rates, k))
    caps = capacities(inst, nu)
    node = run_offline(inst, caps, algorithm, seed=seed, nu=nu, theta="eq3")
    assert (node >= 0).all()
    assert (np.bincount(node, minlength=k) <= caps).all()
    assert caps.sum() >= inst.n


def test_offrand_is_seeded() -> None:
    inst = from_state(qa_state([[i % 3] for i in range(30)], [1.0, 1.0, 1.0], 4))
    caps = capacities(inst, 0.05)
    a, b = offrand(inst, caps, 7), offrand(inst, caps, 7)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_offrand_moves_a_type_on_only_when_its_server_is_full() -> None:
    """§6.1: a random type goes to a random server with room until the server is saturated or
    the type is placed; so a type spans several servers only through servers it filled."""
    inst = from_state(qa_state([[i % 7, 7 + i % 5] for i in range(90)], [1.0] * 12, 4))
    caps = capacities(inst, 0.05)
    t_arr, j_arr, b_arr = offrand(inst, caps, 3)
    assert int(b_arr.sum()) == inst.n
    used = np.bincount(j_arr, weights=b_arr, minlength=inst.k)
    for t in set(t_arr.tolist()):
        servers = j_arr[t_arr == t].tolist()
        assert len(servers) == len(set(servers))  # never back to a server it left
        assert all(used[j] == caps[j] for j in servers[:-1])  # it left only full servers


@settings(max_examples=60, deadline=None)
@given(case=tiny(max_n=12, max_k=4), homes=st.lists(st.integers(0, 3), min_size=12,
                                                     max_size=12),
       moves=st.integers(0, 4), algorithm=st.sampled_from(["ic", "mms", "offrand"]))
def test_budgeted_moves_save_traffic_and_never_overfill(case: tuple, homes: list[int],
                                                       moves: int, algorithm: str) -> None:
    """Under a budget: within it, traffic never above the current one, and no node gets more
    units than max(cap_j, its current count)."""
    subs, rates, k = case
    current = [h % k for h in homes[:len(subs)]]
    state = qa_state(subs, rates, k, current=current)
    budget = Budget(max_migrations=moves)
    plan = get_strategy("herding_offline")(state, budget, algorithm=algorithm)
    target_moves = get_strategy("herding_offline")(state, Budget(), algorithm=algorithm).moves
    assert plan.migrations <= moves
    if len(target_moves) > moves:
        assert plan.facet_metrics["stream_traffic"] <= plan.facet_before["stream_traffic"] + 1e-9
    inst = from_state(state)
    caps = capacities(inst, 0.05)
    before = np.bincount(inst.current, minlength=k)
    after = np.bincount([int(plan.assignment[u][1:]) for u in inst.unit_ids], minlength=k)
    assert (after <= np.maximum(caps, before)).all()


@settings(max_examples=150, deadline=None)
@given(case=tiny(max_n=12, max_k=4), homes=st.lists(st.integers(-1, 3), min_size=12,
                                                     max_size=12),
       moves=st.integers(0, 5), max_cost=st.sampled_from([None, 0.0, 1.5, 3.0]),
       costs=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=12, max_size=12),
       marked=st.lists(st.integers(0, 3), max_size=1),
       algorithm=st.sampled_from(["ic", "mms", "offrand"]))
def test_stopping_once_the_budget_is_spent_changes_no_placement(
        case: tuple, homes: list[int], moves: int, max_cost: float | None, costs: list[float],
        marked: list[int], algorithm: str) -> None:
    """`within_budget` ends its passes when not even the cheapest unit fits: exactly the
    placement of scoring every bundle left (arrivals, nodes of B and costs included)."""
    subs, rates, k = case
    n = len(subs)
    current = [None if h < 0 else h % k for h in homes[:n]]
    state = qa_state(subs, rates, k, current=current, costs=costs[:n],
                     marked=[j % k for j in marked if k > 1])
    inst = from_state(state)
    caps = capacities(inst, 0.05)
    target = run_offline(inst, caps, algorithm, seed=3)
    budget = Budget(max_migrations=moves, max_migration_cost=max_cost)
    fast, note = within_budget(inst, target, caps, budget)
    slow, slow_note = within_budget(inst, target, caps, budget, stop_when_spent=False)
    assert fast.tolist() == slow.tolist() and note == slow_note


@pytest.mark.parametrize("moves", [1, 40, 400])
def test_stopping_once_spent_changes_nothing_on_the_generator(moves: int) -> None:
    """The same on a medium instance of §6.1's generator (3,000 queries, 30 servers, every
    unit currently on a random server): a budget of 1, 40 or 400 moves."""
    from dataclasses import replace

    inst = workload(3000, 2, 2.0, seed=5).instance(30)
    inst = replace(inst, current=np.random.default_rng(5).integers(0, 30, inst.n),
                   migration_cost=np.ones(inst.n))
    caps = capacities(inst, 0.05)
    target = run_offline(inst, caps, "ic")
    budget = Budget(max_migrations=moves)
    fast, _ = within_budget(inst, target, caps, budget)
    slow, _ = within_budget(inst, target, caps, budget, stop_when_spent=False)
    assert fast.tolist() == slow.tolist()
    assert int(((fast != inst.current)).sum()) <= moves


def test_units_on_a_node_marked_for_removal_leave_first() -> None:
    state = qa_state([[0], [0], [1], [1]], [1.0, 1.0], 3, current=[2, 2, 0, 1], marked=[2])
    plan = get_strategy("herding_offline")(state, Budget(max_migrations=2), algorithm="ic")
    assert {m.keygroup for m in plan.moves} == {"q00", "q01"}
    assert all(m.dst != "n2" for m in plan.moves)


def test_arrivals_are_placed_without_counting_as_migrations() -> None:
    state = qa_state([[0], [0], [1], [1]], [1.0, 1.0], 2, current=[0, None, 1, None])
    plan = get_strategy("herding_offline")(state, Budget(max_migrations=0), algorithm="ic")
    assert plan.migrations == 0
    assert plan.assignment["q01"] == "n0" and plan.assignment["q03"] == "n1"
    assert stream_traffic(state, plan.assignment) == pytest.approx(2.0)
