"""The replay runtime executes a manifest's schedule wave by wave: progress in the period report,
a clean stop between waves, a failed wave, and a kill -9 mid-wave that loses no unit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from jobs.lake.api import start_from
from placement.model import ClusterState, KeyGroup, Move, Node
from placement.waves import plan_waves
from runtime.execution import FAIL_MOVES_ENV, load_execution, request_stop, stop_requested
from runtime.replay.datasets import Datasets
from runtime.replay.source import ReplayJob
from runtime.replay.spec import ReplaySpec
from schemas.landing import RUNTIME_REPORT, read_runtime_report
from schemas.manifest import Manifest, write_latest, write_manifest
from schemas.schedule import ScheduledMove, WaveLimits

SPEC = ReplaySpec("waves", job=2, nodes=3, keygroups_per_node=2, periods=6)


def end(n: int) -> datetime:
    return SPEC.start + timedelta(seconds=n * SPEC.period_s)


def rotate(assignment: dict[str, str], count: int) -> dict[str, str]:
    """Move the first `count` units (by id) one node on: a plan of many moves."""
    nodes = SPEC.node_names
    out = dict(assignment)
    for kg in sorted(assignment)[:count]:
        out[kg] = nodes[(nodes.index(assignment[kg]) + 1) % len(nodes)]
    return out


def publish(root: Path, version: int, start: dict[str, str], target: dict[str, str],
            per_node: int = 1, rate: float | None = None) -> Manifest:
    state = ClusterState(tuple(Node(n) for n in SPEC.node_names),
                         tuple(KeyGroup(k, "op", 1.0, state_bytes=10) for k in start), start)
    moves = tuple(Move(k, start[k], target[k], 0.0) for k in sorted(start)
                  if start[k] != target[k])
    schedule = plan_waves(state, moves, WaveLimits(max_moves_per_node=per_node,
                                                   max_bytes_per_second=rate), target)
    manifest = Manifest.create(job_id=SPEC.job_id, version=version, period_end=end(1),
                               plan_id=f"p{version}", assignment=target, schedule=schedule)
    write_manifest(root, manifest)
    write_latest(root, SPEC.job_id, version)
    return manifest


def test_waves_apply_in_order_and_the_period_report_shows_progress(tiny: Datasets,
                                                                   tmp_path: Path) -> None:
    job = ReplayJob(SPEC, tmp_path / "rt", data=tiny)
    job.land_period(tmp_path / "landing", end(1))
    start = dict(job.state.assignment)
    target = rotate(start, 6)
    manifest = publish(tmp_path / "pub", 1, start, target)
    assert manifest.schedule is not None and len(manifest.schedule.waves) >= 3
    result = job.apply_latest(tmp_path / "pub")
    assert result.applied and job.state.version == 1 and dict(job.state.assignment) == target
    execution = load_execution(tmp_path / "rt", SPEC.job_id)
    assert execution is not None and execution.status == "done"
    assert execution.waves == len(manifest.schedule.waves) == len(execution.runs)
    assert [r.moved for r in execution.runs] == [
        tuple(sorted(m.keygroup for m in w.moves)) for w in manifest.schedule.waves]
    assert execution.seconds > 0 and execution.moved == 6
    landed = job.land_period(tmp_path / "landing", end(2))
    report = read_runtime_report(landed)
    assert report is not None and report.assignment is None  # it runs v1 exactly
    assert report.execution is not None
    assert report.execution["summary"].startswith(f"v1: wave {execution.waves} of "
                                                  f"{execution.waves}, 6 unit(s) moved")


def test_the_replay_paces_waves_under_the_byte_rate_in_its_simulated_clock(
        tiny: Datasets, tmp_path: Path) -> None:
    """The replay's clock is its cost model's: a wave lasts max(its longest pause, bytes / R)."""
    job = ReplayJob(SPEC, tmp_path / "rt", data=tiny)
    for n in (1, 2, 3):  # windows fill the state stores
        job.land_period(tmp_path / "landing", end(n))
    start = dict(job.state.assignment)
    rate = 1000.0  # far below the cost model's 1e6 B/s per transfer: every wave is paced
    publish(tmp_path / "pub", 1, start, rotate(start, len(start)), rate=rate)
    assert job.apply_latest(tmp_path / "pub").applied
    execution = load_execution(tmp_path / "rt", SPEC.job_id)
    assert execution is not None and execution.max_bytes_per_second == rate
    assert sum(r.state_bytes > 0 for r in execution.runs) >= 2  # units with state moved
    for run in execution.runs:
        assert run.transfer_s is not None and run.transfer_s > 0  # the cost model's pause
        assert run.seconds == pytest.approx(max(run.transfer_s, run.state_bytes / rate))
        assert run.bytes_per_s is not None and run.bytes_per_s <= rate
    assert any(r.seconds > r.transfer_s for r in execution.runs if r.transfer_s is not None)
    report = read_runtime_report(job.land_period(tmp_path / "landing", end(4)))
    assert report is not None and report.execution is not None
    assert all(r["bytes_per_s"] <= rate for r in report.execution["runs"])
    assert f"paced at most {rate:.6g} B/s" in report.execution["summary"]


def test_a_stop_finishes_the_current_wave_and_the_next_plan_starts_from_it(
        tiny: Datasets, tmp_path: Path) -> None:
    job = ReplayJob(SPEC, tmp_path / "rt", data=tiny)
    job.land_period(tmp_path / "landing", end(1))
    start = dict(job.state.assignment)
    target = rotate(start, 6)
    manifest = publish(tmp_path / "pub", 1, start, target)
    assert manifest.schedule is not None
    migrate = job.engine.migrate

    def operator_stops_during_the_first_wave(*args, **kwargs):
        report = migrate(*args, **kwargs)
        request_stop(tmp_path / "rt", SPEC.job_id, "operator")  # `reconf stop` mid-wave
        return report

    job.engine.migrate = operator_stops_during_the_first_wave  # type: ignore[method-assign]
    result = job.apply_latest(tmp_path / "pub")
    job.engine.migrate = migrate  # type: ignore[method-assign]
    assert result.status == "partial" and "stopped between waves" in result.reason
    assert not stop_requested(tmp_path / "rt", SPEC.job_id)  # the flag was consumed
    first = {m.keygroup for m in manifest.schedule.waves[0].moves}
    partial = dict(job.state.assignment)
    assert {kg for kg in start if partial[kg] != start[kg]} == first  # exactly wave 1 ran
    assert job.state.version is None  # it runs no published version exactly
    assert job.apply_latest(tmp_path / "pub").status == "unchanged"  # no silent resume
    report = read_runtime_report(job.land_period(tmp_path / "landing", end(2)))
    assert report is not None and report.assignment == partial
    assert report.execution is not None and report.execution["status"] == "stopped"
    assert "wave 1 of" in report.execution["summary"]
    # the next plan starts from the partial assignment the runtime reports
    begin = start_from(None, SPEC.job_id, 1, target, report)  # type: ignore[arg-type]
    assert begin.assignment == partial and "partial assignment" in begin.note
    newer = rotate(start, 2)
    publish(tmp_path / "pub", 2, partial, newer)
    assert job.apply_latest(tmp_path / "pub").applied
    assert dict(job.state.assignment) == newer and job.state.version == 2


def test_a_failed_wave_stops_the_schedule_and_the_report_says_what_runs(
        tiny: Datasets, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = ReplayJob(SPEC, tmp_path / "rt", data=tiny)
    job.land_period(tmp_path / "landing", end(1))
    start = dict(job.state.assignment)
    target = rotate(start, 6)
    manifest = publish(tmp_path / "pub", 1, start, target)
    assert manifest.schedule is not None
    stuck = manifest.schedule.waves[1].moves[0].keygroup
    monkeypatch.setenv(FAIL_MOVES_ENV, stuck)
    result = job.apply_latest(tmp_path / "pub")
    assert result.status == "partial" and "could not move" in result.reason and stuck in result.reason
    execution = load_execution(tmp_path / "rt", SPEC.job_id)
    assert execution is not None and execution.status == "failed" and len(execution.runs) == 2
    assert job.state.assignment[stuck] == start[stuck]  # it stayed on its source
    done = {m.keygroup for w in manifest.schedule.waves[:2] for m in w.moves} - {stuck}
    assert all(job.state.assignment[kg] == target[kg] for kg in done)
    report = json.loads((job.land_period(tmp_path / "landing", end(2)) / RUNTIME_REPORT)
                        .read_text())
    assert report["assignment"] == dict(sorted(job.state.assignment.items()))
    assert report["execution"]["status"] == "failed"


_KILLED = """
import sys
sys.path.insert(0, {conftest!r})
from conftest import make_data
from runtime.replay.source import ReplayJob
from runtime.replay.spec import ReplaySpec
spec = ReplaySpec("waves", job=2, nodes=3, keygroups_per_node=2, periods=6)
job = ReplayJob(spec, {rt!r}, data=make_data())
job.apply_latest({pub!r})
"""


def test_kill_9_mid_schedule_then_restart_resumes_without_losing_a_unit(
        tiny: Datasets, tmp_path: Path) -> None:
    job = ReplayJob(SPEC, tmp_path / "rt", data=tiny)
    job.land_period(tmp_path / "landing", end(1))
    start = dict(job.state.assignment)
    target = rotate(start, 6)
    publish(tmp_path / "pub", 1, start, target)
    script = textwrap.dedent(_KILLED.format(conftest=str(Path(__file__).parent),
                                            rt=str(tmp_path / "rt"), pub=str(tmp_path / "pub")))
    env = {**os.environ, "RECONF_FAILPOINT": "runtime.wave"}
    done = subprocess.run([sys.executable, "-c", script], env=env, start_new_session=True,
                          capture_output=True, timeout=300, check=False)
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    after_kill = ReplayJob(SPEC, tmp_path / "rt", data=tiny)
    moved = {kg for kg in start if after_kill.state.assignment[kg] != start[kg]}
    assert moved and moved != set(target) - {kg for kg in start if target[kg] == start[kg]}
    assert after_kill.state.version is None
    assert after_kill.apply_latest(tmp_path / "pub").applied  # resumed
    assert dict(after_kill.state.assignment) == target and after_kill.state.version == 1
    names = after_kill.engine.layout.names
    assert set(after_kill.state.assignment) == set(names)  # no unit lost
    assert all(after_kill.engine.store.node_of(g) in (None, target[names[g]])
               for g in range(len(names)))


def test_kill_9_between_a_wave_and_its_record_keeps_every_wave_in_the_reports(
        tiny: Datasets, tmp_path: Path) -> None:
    """The runtime is killed after a wave moved its units (the state saved) and before the
    progress was recorded: the resumed record, the period report and the pause are whole."""
    job = ReplayJob(SPEC, tmp_path / "rt", data=tiny)
    job.land_period(tmp_path / "landing", end(1))
    start = dict(job.state.assignment)
    target = rotate(start, 6)
    manifest = publish(tmp_path / "pub", 1, start, target)
    assert manifest.schedule is not None
    scheduled = (len(manifest.schedule.waves), manifest.schedule.moves)
    script = textwrap.dedent(_KILLED.format(conftest=str(Path(__file__).parent),
                                            rt=str(tmp_path / "rt"), pub=str(tmp_path / "pub")))
    env = {**os.environ, "RECONF_FAILPOINT": "runtime.wave"}
    done = subprocess.run([sys.executable, "-c", script], env=env, start_new_session=True,
                          capture_output=True, timeout=300, check=False)
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    after_kill = ReplayJob(SPEC, tmp_path / "rt", data=tiny)
    assert after_kill.apply_latest(tmp_path / "pub").applied
    execution = load_execution(tmp_path / "rt", SPEC.job_id)
    assert execution is not None and execution.status == "done"
    assert (execution.waves, execution.moved) == scheduled, execution.summary()
    assert [r.wave for r in execution.runs] == list(range(1, scheduled[0] + 1))
    report = json.loads((after_kill.land_period(tmp_path / "landing", end(2)) / RUNTIME_REPORT)
                        .read_text())
    assert (report["execution"]["waves"], report["execution"]["moved"]) == scheduled


_PACED = """
import sys, time
from pathlib import Path
from runtime.execution import execute
from schemas.manifest import read_manifest
manifest = read_manifest(Path({pub!r}), "waves", 1)
running = dict({start!r})
def wave(moves):
    for m in moves:
        running[m.keygroup] = m.dst
    return tuple(m.keygroup for m in moves), sum(m.state_bytes for m in moves), 0.0, ()
execute(manifest, running, wave, Path({rt!r}), "waves", sleep=time.sleep)
"""


def test_kill_9_mid_pause_the_restart_waits_out_the_rest_of_the_wall_clock_pause(
        tmp_path: Path) -> None:
    """A wall-clock runtime killed after a wave and before its byte-rate pause: the restarted
    execution still waits out what is left of that pause before the next wave."""
    start = {f"k{i}": "node-00" for i in range(4)}
    target = {k: "node-01" for k in start}
    nodes = ("node-00", "node-01")
    state = ClusterState(tuple(Node(n) for n in nodes),
                         tuple(KeyGroup(k, "op", 1.0, state_bytes=1000) for k in start), start)
    moves = tuple(Move(k, start[k], target[k], 0.0) for k in sorted(start))
    schedule = plan_waves(state, moves, WaveLimits(max_moves_per_node=2,
                                                   max_bytes_per_second=100.0), target)
    assert len(schedule.waves) == 2  # 2000 bytes a wave at 100 B/s: a 20 s pause each
    write_manifest(tmp_path / "pub", Manifest.create(
        job_id="waves", version=1, period_end=end(1), plan_id="p1", assignment=target,
        schedule=schedule))
    script = _PACED.format(pub=str(tmp_path / "pub"), rt=str(tmp_path / "rt"), start=start)
    env = {**os.environ, "RECONF_FAILPOINT": "runtime.wave"}
    killed_at = time.time()
    done = subprocess.run([sys.executable, "-c", script], env=env, start_new_session=True,
                          capture_output=True, timeout=300, check=False)
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    from runtime.execution import execute
    running = {k: target[k] if k in {m.keygroup for m in schedule.waves[0].moves} else v
               for k, v in start.items()}
    slept: list[float] = []

    def wave(moves: tuple[ScheduledMove, ...]) -> tuple[tuple[str, ...], float, float,
                                                        tuple[str, ...]]:
        assert sum(slept) > 0, "the next wave started before the last one's pause was over"
        for m in moves:
            running[m.keygroup] = m.dst
        return tuple(m.keygroup for m in moves), sum(m.state_bytes for m in moves), 0.0, ()

    restarted = time.time()
    manifest = Manifest.from_json((tmp_path / "pub" / "waves" / "v1.json").read_text(), "v1")
    done_ex = execute(manifest, running, wave, tmp_path / "rt", "waves", sleep=slept.append)
    assert done_ex.status == "done" and done_ex.moved == 4 and done_ex.waves == 2
    # the first wave's 20 s pause, less what already passed since it started
    assert slept[0] >= 20.0 - (restarted - killed_at) - 0.5, slept
    assert done_ex.runs[0].seconds >= 20.0
