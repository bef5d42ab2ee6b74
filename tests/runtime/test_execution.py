"""runtime/execution.py: waves rebased on what runs always end on the target, once per unit."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.model import ClusterState, KeyGroup, Move, Node
from placement.waves import plan_waves
from runtime.execution import (
    ApplyWave,
    execute,
    load_execution,
    request_stop,
    stop_requested,
    waves_to_run,
)
from schemas.manifest import Manifest
from schemas.schedule import ScheduledMove, WaveLimits

NODES = ("a", "b", "c")


@st.composite
def cases(draw: st.DrawFn) -> tuple[Manifest, dict[str, str]]:
    units = [f"k{i}" for i in range(draw(st.integers(1, 12)))]
    start = {u: draw(st.sampled_from(NODES)) for u in units}
    target = {u: draw(st.sampled_from(NODES)) for u in units}
    running = {u: draw(st.sampled_from(NODES)) if draw(st.booleans()) else start[u] for u in units}
    state = ClusterState(tuple(Node(n) for n in NODES),
                         tuple(KeyGroup(u, "op", draw(st.floats(0, 40))) for u in units), start)
    moves = tuple(Move(u, start[u], target[u], 0) for u in units if start[u] != target[u])
    schedule = plan_waves(state, moves, WaveLimits(max_moves_per_node=draw(st.integers(1, 3))),
                          target)
    manifest = Manifest.create(job_id="j", version=2, period_end="2026-01-01T00:05:00Z",
                               plan_id="p", assignment=target,
                               schedule=schedule if draw(st.booleans()) else None)
    return manifest, running


@settings(max_examples=100, deadline=None)
@given(cases())
def test_rebased_waves_end_on_the_target_moving_each_unit_at_most_once(
        case: tuple[Manifest, dict[str, str]]) -> None:
    manifest, running = case
    at = dict(running)
    seen: set[str] = set()
    for wave in waves_to_run(manifest, running):
        assert wave
        for m in wave:
            assert m.keygroup not in seen and at[m.keygroup] == m.src != m.dst
            seen.add(m.keygroup)
            at[m.keygroup] = m.dst
    assert at == dict(manifest.assignment)
    assert seen == {u for u in running if running[u] != manifest.assignment[u]}


def _runtime(assignment: dict[str, str], fail: frozenset[str] = frozenset()) -> ApplyWave:
    """The smallest runtime: an assignment in memory; `fail` units cannot move."""
    def apply_wave(moves: tuple[ScheduledMove, ...]) -> tuple[tuple[str, ...], float, float,
                                                             tuple[str, ...]]:
        failed = tuple(m.keygroup for m in moves if m.keygroup in fail)
        for m in moves:
            if m.keygroup not in failed:
                assignment[m.keygroup] = m.dst
        return tuple(m.keygroup for m in moves if m.keygroup not in failed), 0.0, 0.1, failed
    return apply_wave


def _manifest() -> tuple[Manifest, dict[str, str]]:
    start = {f"k{i}": "a" for i in range(4)}
    target = {f"k{i}": "b" for i in range(4)}
    state = ClusterState((Node("a"), Node("b")), tuple(KeyGroup(u, "op", 1.0) for u in start),
                         start)
    moves = tuple(Move(u, "a", "b", 0) for u in start)
    schedule = plan_waves(state, moves, WaveLimits(max_moves_per_node=1), target)
    return Manifest.create(job_id="j", version=3, period_end="2026-01-01T00:05:00Z",
                           plan_id="p", assignment=target, schedule=schedule), start


def test_a_stop_requested_before_a_wave_ends_the_schedule_there(tmp_path: Path) -> None:
    manifest, running = _manifest()
    request_stop(tmp_path, "j", "maintenance")
    done = execute(manifest, running, _runtime(running), tmp_path, "j")
    assert done.status == "stopped" and done.runs == () and not stop_requested(tmp_path, "j")
    assert set(running.values()) == {"a"}  # nothing moved
    assert load_execution(tmp_path, "j") == done


def test_a_failed_unit_ends_the_schedule_after_its_wave(tmp_path: Path) -> None:
    manifest, running = _manifest()
    assert manifest.schedule is not None
    stuck = manifest.schedule.waves[1].moves[0].keygroup
    done = execute(manifest, running, _runtime(running, frozenset({stuck})), tmp_path, "j")
    assert done.status == "failed" and len(done.runs) == 2 and done.runs[1].failed == (stuck,)
    assert running[stuck] == "a" and sum(n == "b" for n in running.values()) == 1
    assert "wave 2 of 4" in done.summary() and stuck in done.summary()


def test_a_manifest_without_schedule_is_one_wave(tmp_path: Path) -> None:
    manifest, running = _manifest()
    plain = Manifest.create(job_id="j", version=3, period_end="2026-01-01T00:05:00Z",
                            plan_id="p", assignment=dict(manifest.assignment))
    done = execute(plain, running, _runtime(running), tmp_path, "j")
    assert done.status == "done" and done.waves == 1 and done.moved == 4


@st.composite
def paced_cases(draw: st.DrawFn) -> tuple[Manifest, dict[str, str], float, list[float]]:
    """A random plan with state bytes, a random byte rate, and the runtime's own wave times."""
    units = [f"k{i}" for i in range(draw(st.integers(1, 14)))]
    start = {u: draw(st.sampled_from(NODES)) for u in units}
    target = {u: draw(st.sampled_from(NODES)) for u in units}
    sizes = {u: draw(st.floats(0, 1e9)) for u in units}
    state = ClusterState(tuple(Node(n) for n in NODES),
                         tuple(KeyGroup(u, "op", draw(st.floats(0, 40)), state_bytes=sizes[u])
                               for u in units), start)
    moves = tuple(Move(u, start[u], target[u], 0) for u in units if start[u] != target[u])
    rate = draw(st.floats(1.0, 1e9))
    limits = WaveLimits(max_moves_per_node=draw(st.integers(1, 3)),
                        max_bytes_per_wave=draw(st.none() | st.floats(1.0, 2e9)),
                        max_bytes_per_second=rate)
    schedule = plan_waves(state, moves, limits, target)
    expected = schedule.expected_s()  # each wave's least time at the rate, from the schedule
    assert expected is not None and len(expected) == len(schedule.waves)
    assert all(e >= w.state_bytes / rate for e, w in zip(expected, schedule.waves, strict=True))
    manifest = Manifest.create(job_id="j", version=2, period_end="2026-01-01T00:05:00Z",
                               plan_id="p", assignment=target, schedule=schedule)
    natural = draw(st.lists(st.floats(0, 100), min_size=len(schedule.waves) + 1,
                            max_size=len(schedule.waves) + 1))
    return manifest, dict(start), rate, natural


@settings(max_examples=150, deadline=None)
@given(paced_cases())
def test_no_wave_moves_state_faster_than_the_byte_rate(
        case: tuple[Manifest, dict[str, str], float, list[float]]) -> None:
    manifest, running, rate, natural = case
    assert manifest.schedule is not None
    size = {m.keygroup: m.state_bytes for w in manifest.schedule.waves for m in w.moves}
    times = iter(natural)

    def apply_wave(moves: tuple[ScheduledMove, ...]) -> tuple[tuple[str, ...], float, float,
                                                             tuple[str, ...]]:
        for m in moves:
            running[m.keygroup] = m.dst
        return tuple(m.keygroup for m in moves), sum(size[m.keygroup] for m in moves), \
            next(times), ()

    slept: list[float] = []
    with tempfile.TemporaryDirectory() as root:
        done = execute(manifest, running, apply_wave, Path(root), "j", sleep=slept.append)
    assert done.status == "done" and running == dict(manifest.assignment)
    for run in done.runs:
        assert run.bytes_per_s is None or run.bytes_per_s <= rate  # never faster than R
        assert run.transfer_s is not None and run.seconds >= run.transfer_s
    total = sum(r.state_bytes for r in done.runs)
    assert done.seconds >= total / rate * (1 - 1e-12)
    # a wall clock waits out exactly the pacing (what the runtime did not spend itself)
    assert sum(slept) == pytest.approx(sum(r.seconds - (r.transfer_s or 0.0) for r in done.runs))
    assert "paced at most" in done.summary()


def test_without_a_rate_the_runtimes_time_stands(tmp_path: Path) -> None:
    manifest, running = _manifest()
    done = execute(manifest, running, _runtime(running), tmp_path, "j", sleep=_never)
    assert all(r.seconds == r.transfer_s == 0.1 for r in done.runs)
    assert done.max_bytes_per_second is None and "paced" not in done.summary()


def _never(seconds: float) -> None:
    raise AssertionError(f"slept {seconds} s without a byte rate")


class _Killed(BaseException):
    """kill -9 between a wave's move (the runtime's state saved) and its progress record."""


@settings(max_examples=120, deadline=None)
@given(paced_cases(), st.integers(0, 20))
def test_a_kill_between_a_wave_and_its_record_loses_no_wave_from_the_record(
        case: tuple[Manifest, dict[str, str], float, list[float]], kill_at: int) -> None:
    """Whatever wave the kill hits, the resumed execution's record is the uninterrupted one's:
    every move in it, in as many waves, and every wave paced at least bytes / rate."""
    manifest, start, rate, _ = case
    assert manifest.schedule is not None
    size = {m.keygroup: m.state_bytes for w in manifest.schedule.waves for m in w.moves}
    calls = 0

    def runtime(running: dict[str, str], kill: bool) -> ApplyWave:
        def apply_wave(moves: tuple[ScheduledMove, ...]) -> tuple[tuple[str, ...], float,
                                                                  float, tuple[str, ...]]:
            nonlocal calls
            for m in moves:
                running[m.keygroup] = m.dst
            calls += 1
            if kill and calls == kill_at + 1:
                raise _Killed
            return tuple(m.keygroup for m in moves), sum(size[m.keygroup] for m in moves), 0.0, ()
        return apply_wave

    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        whole = execute(manifest, dict(start), runtime(dict(start), False), Path(a), "j",
                        sleep=lambda s: None)
        running = dict(start)
        calls = 0
        resumed = None
        with contextlib.suppress(_Killed):  # no kill when kill_at is past the last wave
            resumed = execute(manifest, running, runtime(running, True), Path(b), "j",
                              sleep=lambda s: None)
        if resumed is None:
            resumed = execute(manifest, dict(running), runtime(running, False), Path(b), "j",
                              sleep=lambda s: None)
        on_disk = load_execution(Path(b), "j")
    assert resumed.status == "done" and running == dict(manifest.assignment)
    assert (resumed.moved, resumed.waves, len(resumed.runs)) == (
        whole.moved, whole.waves, len(whole.runs))
    assert sorted(u for r in resumed.runs for u in r.moved) == sorted(
        u for r in whole.runs for u in r.moved)
    assert [r.wave for r in resumed.runs] == list(range(1, len(resumed.runs) + 1))
    assert all(r.bytes_per_s is None or r.bytes_per_s <= rate for r in resumed.runs)
    assert on_disk is not None and on_disk.to_dict()["runs"] == resumed.to_dict()["runs"]
