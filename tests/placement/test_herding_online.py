"""The online algorithms: eq. 4's balance rule, each metric's choice on hand-made clusters,
and that an online plan places the arrivals (and the units on B) and moves nothing else."""

from __future__ import annotations

import numpy as np
from herding_testlib import qa_state, tiny
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.herding.online import OnlinePlacer
from placement.model import Budget
from placement.registry import get_strategy

ONE = np.array([0])


def placer(metric: str, k: int = 2, rates: tuple[float, ...] = (1.0, 1.0, 10.0), *,
           alpha: float = 10.0, nu: float = 0.05) -> OnlinePlacer:
    return OnlinePlacer(np.array(rates), np.ones(k), metric=metric, alpha=alpha, nu=nu)


def test_eq4_admits_the_first_query_and_then_bounds_each_server() -> None:
    p = placer("least_cost", alpha=1.0, nu=0.0)
    assert p.eligible().all()  # n = 1: d(1) = 1/2 + α; Fig. 3's strict test admits none
    p.add(ONE, 0, 0)
    p.add(ONE, 0, 0)
    # n = 3 with the incoming one: d = max(1.5 + 1, 1.5) = 2.5; server 0 would hold 3
    assert p.eligible().tolist() == [False, True]
    assert p.place(ONE, 0) == 1  # the least-cost server (0, which has s0) is not a candidate


def test_eq4_switches_to_the_relative_slack_for_many_queries() -> None:
    p = placer("least_cost", alpha=1.0, nu=0.5)
    p.count[:] = [60, 40]  # n = 101: d = max(50.5 + 1, 1.5·50.5 = 75.75)
    p.sync()
    assert p.eligible().tolist() == [True, True]
    p.count[:] = [75, 25]
    p.sync()
    assert p.eligible().tolist() == [False, True]


def test_least_cost_takes_the_server_adding_least_traffic() -> None:
    p = placer("least_cost", k=3)
    p.add(np.array([2]), 1, 0)  # server 0 has the heavy s2
    p.add(np.array([0]), 0, 1)  # server 1 has s0
    assert p.place(np.array([0, 2]), 5) == 0  # adds w(s0) = 1 on 0, w(s2) = 10 on 1
    assert p.place(np.array([1]), 6) == 2  # adds 1 anywhere: the least loaded server


def test_least_source_takes_the_server_with_least_traffic_after() -> None:
    p = placer("least_source", k=2)
    p.add(np.array([0, 2]), 1, 0)  # f(0) = 11
    p.add(np.array([1]), 0, 1)  # f(1) = 1
    assert p.place(np.array([0]), 2) == 1  # 11 + 0 > 1 + 1
    q = placer("least_cost", k=2)
    q.add(np.array([0, 2]), 1, 0)
    q.add(np.array([1]), 0, 1)
    assert q.place(np.array([0]), 2) == 0  # LeastCost: adds 0 on server 0


def test_least_qt_takes_the_server_with_fewest_types_after() -> None:
    p = placer("least_qt", k=2)
    p.add(np.array([0]), 6, 0)
    p.add(np.array([0]), 7, 0)
    p.add(np.array([1]), 8, 1)
    p.add(np.array([2]), 9, 1)
    assert p.place(np.array([2]), 9) == 1  # type 9 already there: 2 types vs 0's 2 + 1
    assert p.qt.tolist() == [2, 2]
    assert p.place(np.array([0]), 10) == 0  # a new type: 3 types anywhere, the less loaded


def test_round_robin_cycles_and_onrand_is_seeded() -> None:
    rr = placer("round_robin", k=3)
    assert [rr.place(ONE) for _ in range(4)] == [0, 1, 2, 0]
    picks = [[placer("onrand", k=5).place(ONE) for _ in range(3)] for _ in range(2)]
    assert picks[0] == picks[1]


def test_departures_undo_arrivals() -> None:
    p = placer("least_qt", k=2)
    p.add(np.array([0, 2]), 3, 1)
    p.remove(np.array([0, 2]), 3, 1)
    assert p.f.tolist() == [0.0, 0.0] and p.count.tolist() == [0, 0] and p.qt.tolist() == [0, 0]
    assert not p.readers.any()


@settings(max_examples=60, deadline=None)
@given(case=tiny(max_n=10, max_k=4), homes=st.lists(st.none() | st.integers(0, 3),
                                                     min_size=10, max_size=10),
       metric=st.sampled_from(["least_cost", "least_source", "least_qt", "onrand",
                               "round_robin"]),
       marked=st.booleans(), moves=st.none() | st.integers(0, 3), known=st.booleans())
def test_online_places_arrivals_and_moves_only_units_off_b(
        case: tuple, homes: list[int | None], metric: str, marked: bool, moves: int | None,
        known: bool) -> None:
    subs, rates, k = case
    current = [None if h is None else h % k for h in homes[:len(subs)]]
    b = [k - 1] if marked and k > 1 else []
    state = qa_state(subs, rates, k, current=current, marked=b)
    plan = get_strategy("herding_online")(state, Budget(max_migrations=moves), metric=metric,
                                          known_types=known)
    assert set(plan.assignment) == {kg.id for kg in state.keygroups}
    for kg, node in state.assignment.items():
        if int(node[1:]) not in b:
            assert plan.assignment[kg] == node  # irrevocable: placed units stay
    assert all(int(m.src[1:]) in b for m in plan.moves)
    assert moves is None or plan.migrations <= moves
    for kg in state.arrivals:
        assert int(plan.assignment[kg][1:]) not in b


def test_known_types_use_the_offline_reservations() -> None:
    # two types, four servers: IC reserves one server per type, so arrivals herd perfectly
    subs = [[0, 1]] * 8 + [[2, 3]] * 8
    state = qa_state(subs, [1.0] * 4, 4)
    plan = get_strategy("herding_online")(state, Budget(), known_types=True, nu=0.0)
    assert plan.facet_metrics["replication_factor"] <= 2.0
    assert "reservations" in plan.message
