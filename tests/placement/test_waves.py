"""The wave planner's invariants (placement/waves.py), for all plans hypothesis can draw."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.model import ClusterState, KeyGroup, Move, Node
from placement.waves import plan_waves, utilisation
from schemas.manifest import assignment_checksum
from schemas.schedule import Schedule, Wave, WaveLimits, apply_waves


@st.composite
def plans(draw: st.DrawFn) -> tuple[ClusterState, tuple[Move, ...], dict[str, str], WaveLimits]:
    n_nodes = draw(st.integers(2, 6))
    nodes = tuple(Node(f"n{i}", draw(st.sampled_from([0.5, 1.0, 2.0])),
                       marked_for_removal=(i > 0 and draw(st.booleans()) and i == n_nodes - 1))
                  for i in range(n_nodes))
    n_units = draw(st.integers(1, 30))
    units = tuple(KeyGroup(f"k{j:02d}", "op", draw(st.floats(0, 30)),
                           state_bytes=draw(st.integers(0, 5000))) for j in range(n_units))
    ids = [n.id for n in nodes]
    current = {k.id: draw(st.sampled_from(ids)) for k in units}
    target = {kg: (draw(st.sampled_from(ids)) if draw(st.booleans()) else node)
              for kg, node in current.items()}
    state = ClusterState(nodes, units, current)
    moves = tuple(Move(kg, current[kg], target[kg], 0.0) for kg in sorted(target)
                  if target[kg] != current[kg])
    limits = WaveLimits(
        max_moves_per_node=draw(st.none() | st.integers(1, 4)),
        max_moves_per_wave=draw(st.none() | st.integers(1, 8)),
        max_bytes_per_wave=draw(st.none() | st.integers(500, 12000).map(float)),
        ceiling_pct=draw(st.none() | st.floats(20, 150)),
    )
    return state, moves, target, limits


def _during(state: ClusterState, before: Mapping[str, str], wave: Wave) -> dict[str, float]:
    """Utilisation while `wave` runs: each moving unit counted on source and destination."""
    units = {k.id: k.load for k in state.keygroups}
    cap = {n.id: n.capacity for n in state.nodes}
    load = {n: u * cap[n] for n, u in utilisation(state, before).items()}
    for m in wave.moves:
        load[m.dst] += units[m.keygroup]
    return {n: load[n] / cap[n] for n in cap}


@settings(max_examples=150, deadline=None)
@given(plans())
def test_every_move_once_limits_held_and_the_target_reached(case: tuple) -> None:
    state, moves, target, limits = case
    schedule = plan_waves(state, moves, limits, target)
    scheduled = [m.keygroup for w in schedule.waves for m in w.moves]
    assert sorted(scheduled) == sorted(m.keygroup for m in moves)  # every move exactly once
    assert apply_waves(state.assignment, schedule.waves) == target  # final = the plan's
    for wave in schedule.waves:
        assert wave.moves
        if limits.max_moves_per_node is not None:
            assert max(wave.per_node().values()) <= limits.max_moves_per_node
        if limits.max_moves_per_wave is not None:
            assert len(wave.moves) <= limits.max_moves_per_wave
        if limits.max_bytes_per_wave is not None and len(wave.moves) > 1:
            assert wave.state_bytes <= limits.max_bytes_per_wave
        if wave.over_ceiling:
            assert len(wave.moves) == 1  # a forced move goes alone
    schedule.verify(assignment_checksum(target), "<test>")


@settings(max_examples=150, deadline=None)
@given(plans())
def test_no_wave_breaks_the_ceiling_unless_no_move_fits(case: tuple) -> None:
    state, moves, target, limits = case
    if limits.ceiling_pct is None:
        return
    ceiling = limits.ceiling_pct
    schedule = plan_waves(state, moves, limits, target)
    before = dict(state.assignment)
    left = {m.keygroup: m for m in moves}
    units = {k.id: k.load for k in state.keygroups}
    for wave in schedule.waves:
        during = _during(state, before, wave)
        if wave.over_ceiling:
            # only when no remaining move would have fitted alone
            base = utilisation(state, before)
            cap = {n.id: n.capacity for n in state.nodes}
            for m in left.values():
                assert base[m.dst] + units[m.keygroup] / cap[m.dst] > ceiling - 1e-6
        else:
            # a node the wave adds load to stays under the ceiling; the others gain nothing
            for m in wave.moves:
                assert during[m.dst] <= ceiling + 1e-6
            base = utilisation(state, before)
            receivers = {m.dst for m in wave.moves}
            assert all(during[n] == pytest.approx(base[n]) for n in during if n not in receivers)
        after = apply_waves(before, (wave,))
        for n, u in utilisation(state, after).items():
            assert u <= max(during[n], utilisation(state, before)[n]) + 1e-6
        before = after
        for m in wave.moves:
            left.pop(m.keygroup)


@settings(max_examples=150, deadline=None)
@given(plans())
def test_a_plan_whose_targets_fit_never_breaks_the_ceiling(case: tuple) -> None:
    """The guarantee in the docstring: when every node's current load plus all that the plan
    moves onto it stays under the ceiling, no wave is over it."""
    state, moves, target, limits = case
    if limits.ceiling_pct is None:
        return
    base = utilisation(state, state.assignment)
    units = {k.id: k.load for k in state.keygroups}
    cap = {n.id: n.capacity for n in state.nodes}
    incoming = {n: base[n] * cap[n] for n in cap}
    for m in moves:
        incoming[m.dst] += units[m.keygroup]
    if any(incoming[n] / cap[n] > limits.ceiling_pct for n in cap):
        return
    schedule = plan_waves(state, moves, limits, target)
    assert not any(w.over_ceiling for w in schedule.waves)
    assert all(w.peak_pct <= max(limits.ceiling_pct, max(base.values())) + 1e-6
               for w in schedule.waves)


def _two_nodes(load_a: float, load_b: float, *, marked: bool = False) -> ClusterState:
    return ClusterState(
        (Node("a", marked_for_removal=marked), Node("b")),
        (KeyGroup("x", "op", load_a, state_bytes=100), KeyGroup("y", "op", load_b, state_bytes=10)),
        {"x": "a", "y": "b"})


def test_a_swap_of_two_full_nodes_is_forced_one_move_per_wave_and_marked() -> None:
    state = _two_nodes(60, 60)
    moves = (Move("x", "a", "b", 0), Move("y", "b", "a", 0))
    schedule = plan_waves(state, moves, WaveLimits(ceiling_pct=100))
    assert [len(w.moves) for w in schedule.waves] == [1, 1]
    assert schedule.waves[0].over_ceiling and schedule.waves[0].peak_pct == pytest.approx(120)
    assert not schedule.waves[1].over_ceiling  # once one has moved, the other fits


def test_drains_marked_nodes_first_then_relief_per_byte() -> None:
    nodes = (Node("a", marked_for_removal=True), Node("b"), Node("c"))
    units = (KeyGroup("k1", "op", 5, state_bytes=1000), KeyGroup("k2", "op", 5, state_bytes=10),
             KeyGroup("k3", "op", 1, state_bytes=1))
    state = ClusterState(nodes, units, {"k1": "b", "k2": "b", "k3": "a"})
    moves = (Move("k1", "b", "c", 0), Move("k2", "b", "c", 0), Move("k3", "a", "c", 0))
    schedule = plan_waves(state, moves, WaveLimits(max_moves_per_wave=1, max_moves_per_node=None))
    assert [w.moves[0].keygroup for w in schedule.waves] == ["k3", "k2", "k1"]


def test_a_unit_above_the_byte_limit_moves_alone() -> None:
    state = _two_nodes(1, 1)
    moves = (Move("x", "a", "b", 0), Move("y", "b", "a", 0))
    schedule = plan_waves(state, moves, WaveLimits(max_bytes_per_wave=50, max_moves_per_node=None))
    assert sorted(len(w.moves) for w in schedule.waves) == [1, 1]


def test_moves_that_do_not_match_the_state_are_refused() -> None:
    with pytest.raises(ValueError, match="is on 'a'"):
        plan_waves(_two_nodes(1, 1), (Move("x", "b", "a", 0),), WaveLimits())


def test_the_checksum_binds_the_schedule_to_its_target() -> None:
    state = _two_nodes(1, 1)
    target = {"x": "b", "y": "b"}
    schedule = plan_waves(state, (Move("x", "a", "b", 0),), WaveLimits(), target)
    schedule.verify(assignment_checksum(target), "<t>")
    with pytest.raises(ValueError, match="does not match"):
        schedule.verify(assignment_checksum({"x": "a", "y": "b"}), "<t>")
    again = Schedule.from_dict(schedule.to_dict(), "<t>")
    assert again == schedule


def test_a_node_the_plan_adds_starts_empty_as_a_reference_node() -> None:
    state = _two_nodes(50, 30)
    move = (Move("x", "a", "new-0", 0),)
    fits = plan_waves(state, move, WaveLimits(ceiling_pct=60))
    assert not fits.waves[0].over_ceiling and fits.waves[0].peak_pct == pytest.approx(50)
    assert plan_waves(state, move, WaveLimits(ceiling_pct=40)).waves[0].over_ceiling
