"""Stable plans (placement/stability.py): the no-op band, the cooldown and the oscillation
count, on every plan whatever the strategy, and on a closed loop with noisy loads."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from placement_testlib import make_state

from placement.model import Budget, ClusterState, KeyGroup
from placement.registry import get_strategy
from placement.stability import Stability, forbidden_returns, oscillations, stabilise


def test_oscillations_count_the_moves_back_onto_a_node_left_earlier() -> None:
    history = [[("k0", "n0", "n1")], [("k0", "n1", "n0"), ("k1", "n2", "n3")],
               [("k1", "n3", "n4")], [("k0", "n0", "n1")]]
    assert oscillations(history) == 2  # k0 back onto n0, then back onto n1
    assert oscillations(history[1:]) == 1  # k0 left n1, then back onto it
    assert oscillations(history[1:3]) == 0
    assert forbidden_returns(history, 2) == {"k1": {"n3"}, "k0": {"n0"}}
    assert forbidden_returns(history, 0) == {}


@settings(max_examples=80, deadline=None)
@given(loads=st.lists(st.floats(0, 30, allow_nan=False), min_size=3, max_size=10),
       seed=st.integers(0, 10**6), band=st.sampled_from([None, 0.0, 5.0, 50.0]),
       cooldown=st.integers(0, 3), strategy=st.sampled_from(["greedy", "milp", "flux"]))
def test_a_stabilised_plan_keeps_back_only_and_never_moves_a_unit_back(
        loads: list[float], seed: int, band: float | None, cooldown: int, strategy: str) -> None:
    rng = random.Random(seed)
    nodes = 3
    state = make_state(loads, [rng.randrange(nodes) for _ in loads], [1.0] * nodes,
                       [False] * nodes)
    ids = [n.id for n in state.nodes]
    history = [[(k.id, rng.choice(ids), state.assignment[k.id])
                for k in state.keygroups if rng.random() < 0.3] for _ in range(3)]
    plan = get_strategy(strategy)(state, Budget(max_migrations=4), time_limit_s=1.0)
    out = stabilise(state, plan, Stability(band, cooldown), history)
    assert {(m.keygroup, m.dst) for m in out.moves} <= {(m.keygroup, m.dst) for m in plan.moves}
    forbidden = forbidden_returns(history, cooldown)
    assert not [m for m in out.moves if m.dst in forbidden.get(m.keygroup, set())]
    if band is not None and plan.before.load_distance <= band and plan.moves:
        assert out.moves == () and "no-op band" in out.message
    if out.moves != plan.moves:
        assert out.status.value != "optimal"


def _noisy_loop(policy: Stability, periods: int = 24) -> tuple[int, int, float]:
    """Greedy on a cluster whose loads wobble ±30 % each period: (moves, moves back within 3
    periods, mean LD after)."""
    rng = random.Random(7)
    base = [rng.uniform(2, 12) for _ in range(24)]
    state = make_state(base, [i % 4 for i in range(24)], [1.0] * 4, [False] * 4)
    assignment = dict(state.assignment)
    history: list[list[tuple[str, str, str]]] = []
    moves, lds = 0, []
    for _ in range(periods):
        kgs = tuple(KeyGroup(k.id, k.operator, b * rng.uniform(0.7, 1.3))
                    for k, b in zip(state.keygroups, base, strict=True))
        now = ClusterState(state.nodes, kgs, assignment)
        plan = stabilise(now, get_strategy("greedy")(now, Budget(max_migrations=4)), policy,
                         history)
        history.append([(m.keygroup, m.src, m.dst) for m in plan.moves])
        assignment = dict(plan.assignment)
        moves += len(plan.moves)
        lds.append(plan.after.load_distance)
    back = sum(oscillations(history[max(0, i - 3):i + 1]) - oscillations(history[max(0, i - 3):i])
               for i in range(len(history)))
    return moves, back, sum(lds) / len(lds)


def test_band_and_cooldown_cut_the_back_and_forth_of_a_noisy_loop() -> None:
    plain = _noisy_loop(Stability())
    steady = _noisy_loop(Stability(band=4.0, cooldown=3))
    assert plain[1] > 0, plain
    assert steady[1] * 5 <= plain[1], (plain, steady)
    assert steady[0] < plain[0], (plain, steady)


def test_the_operations_guides_stability_example_loads_and_a_bad_value_is_refused(
        tmp_path) -> None:
    import pytest

    from schemas.config import PROJECT_ROOT, StabilityConfig, load_jobs
    from schemas.errors import ConfigError
    text = (PROJECT_ROOT / "docs" / "operations.md").read_text()
    section = text[text.index("## Stable plans"):]
    example = section[section.index("```toml\n") + 8:section.index("```\n", 10)]
    path = tmp_path / "jobs.toml"
    path.write_text("[jobs.orders]\n" + example)
    assert load_jobs(path)["orders"].stability == StabilityConfig(2.0, 3, 3)
    path.write_text("[jobs.orders]\n[jobs.orders.stability]\ncooldown_periods = -1\nspan = 2\n")
    with pytest.raises(ConfigError, match=r"jobs\.orders\.stability: unknown field\(s\) span"):
        load_jobs(path)
