"""runtime/live.py, the live runtime, on the wall clock with a 2 s SPL: real landing and
published folders in tmp, the synthetic stand-in, the CLI as a subprocess where a real signal
must reach it. Waits poll the folders (never a sleep that stands in for a check)."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reconf.cli import main
from reconf.settings import make_source
from runtime.live import LiveRuntime, LiveSettings, Summary, first_period, runtime_lock
from runtime.source import load_state
from runtime.synthetic import SyntheticJob
from schemas.config import PROJECT_ROOT, Paths, resolve_job
from schemas.landing import SUCCESS_MARKER, format_period_end, period_dir, read_runtime_report
from schemas.manifest import Manifest, assignment_checksum, write_latest, write_manifest
from schemas.schedule import Schedule, ScheduledMove, Wave, WaveLimits

SPL = timedelta(seconds=2)
START = datetime(2026, 1, 1, tzinfo=UTC)
CONFIG = """\
[jobs.tick]
spl = "2s"
start_date = 2026-01-01T00:00:00Z
max_migrations = 3
source = { kind = "synthetic", operators = 2, keygroups_per_operator = 4, nodes = 3, seed = 7 }

[jobs.big]
spl = "2s"
start_date = 2026-01-01T00:00:00Z
source = { kind = "synthetic", operators = 2, keygroups_per_operator = 300, nodes = 4, seed = 7, samples_per_period = 10 }

[jobs.flights]
source = { kind = "replay", job = 2 }
"""


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    config = tmp_path / "jobs.toml"
    config.write_text(CONFIG)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    return Paths.from_env()


def settings(paths: Paths, job_id: str = "tick", **extra: object) -> LiveSettings:
    return LiveSettings(job_id, START, SPL, paths.landing, paths.published, paths.runtime,
                        poll_s=0.2, **extra)  # type: ignore[arg-type]


def landed(paths: Paths, job_id: str = "tick") -> list[str]:
    folder = paths.landing / job_id
    return sorted(p.name.removeprefix("period_end=") for p in folder.glob("period_end=*")
                  if (p / SUCCESS_MARKER).is_file())


def wait_for(what: str, check: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class Loop:
    """The live loop in a thread, its lines collected."""

    def __init__(self, live: LiveSettings, source: SyntheticJob) -> None:
        self.lines: list[str] = []
        self.stop = threading.Event()
        self.summary: Summary | None = None
        self.runtime = LiveRuntime(live, source, self.lines.append)
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.summary = self.runtime.run(self.stop)

    def __enter__(self) -> Loop:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()


def publish(paths: Paths, source: SyntheticJob, version: int, moves: dict[str, str]) -> None:
    """Version `version` moving `moves` (key group -> node), one move per wave."""
    target = {**source.assignment, **moves}
    waves = tuple(Wave((ScheduledMove(kg, source.assignment[kg], dst, 64.0),))
                  for kg, dst in sorted(moves.items()))
    checksum = assignment_checksum(target)
    manifest = Manifest.create(job_id="tick", version=version, period_end=START + SPL,
                               plan_id=f"p{version}", assignment=target,
                               schedule=Schedule.sealed(waves, WaveLimits(), checksum))
    write_manifest(paths.published, manifest)
    write_latest(paths.published, "tick", version)


def test_the_first_period_is_the_newest_ended_unless_landed_then_the_next(paths: Paths) -> None:
    live = settings(paths)
    now = START + 10 * SPL + timedelta(seconds=1)
    assert first_period(live, now) == START + 10 * SPL
    assert first_period(live, START - timedelta(days=1)) == START + SPL  # before the grid
    make_source(resolve_job("tick"), paths).land_period(paths.landing, START + 10 * SPL)
    assert first_period(live, now) == START + 11 * SPL


def test_it_lands_each_period_once_in_order_and_applies_a_version_published_meanwhile(
        paths: Paths) -> None:
    source = make_source(resolve_job("tick"), paths)
    assert isinstance(source, SyntheticJob)
    moves = {"op0-kg000": "node-02", "op1-kg003": "node-00"}
    assert all(source.assignment[kg] != dst for kg, dst in moves.items())
    with Loop(settings(paths), source) as loop:
        wait_for("two landed periods", lambda: len(landed(paths)) >= 2)
        publish(paths, source, 1, moves)
        wait_for("v1 applied", lambda: any("applied v1 wave 2/2" in ln for ln in loop.lines))
        applied_at = len(landed(paths))
        wait_for("a period landed after v1", lambda: len(landed(paths)) >= applied_at + 1)
    summary = loop.summary
    assert summary is not None and summary.applied == (1,)
    ends = [datetime.fromisoformat(e.replace("Z", "+00:00")) for e in landed(paths)]
    assert [format_period_end(e) for e in summary.landed] == landed(paths)  # each once
    assert all(b - a == SPL for a, b in itertools.pairwise(ends))  # in order, no gap
    state = load_state(paths.runtime, "tick")
    assert state is not None and state.version == 1
    assert all(state.assignment[kg] == dst for kg, dst in moves.items())
    last = read_runtime_report(period_dir(paths.landing, "tick", ends[-1]))
    assert last is not None and last.version == 1  # the period after the apply reports v1
    waves = [ln for ln in loop.lines if "applied v1 wave" in ln]
    assert [w.split("applied v1 ")[1][:8] for w in waves] == ["wave 1/2", "wave 2/2"]
    assert sum(f"landed period {e}" in ln for e in landed(paths) for ln in loop.lines) == \
        len(ends)


def test_kill_node_writes_a_dead_report_after_the_chosen_landing(paths: Paths) -> None:
    from schemas.health import list_reports, read_report

    source = make_source(resolve_job("tick"), paths)
    assert isinstance(source, SyntheticJob)
    with Loop(settings(paths, kill_node="node-01", kill_after=2), source) as loop:
        wait_for("a health report", lambda: bool(list_reports(paths.landing, "tick")))
    (path,) = list_reports(paths.landing, "tick")
    report = read_report(path)
    assert report.dead == ("node-01",)
    assert loop.summary is not None and len(loop.summary.landed) >= 2
    assert report.report_id == f"node-01-dead-{loop.summary.landed[1]:%Y%m%dT%H%M%SZ}"
    assert any(f"health report {report.report_id} written" in ln for ln in loop.lines)


def test_over_capacity_is_reported_once_per_crossing(paths: Paths) -> None:
    """A threshold below every node's load: each node crosses once, at the first landing, and
    staying above it reports nothing more."""
    from schemas.health import list_reports, read_report

    source = make_source(resolve_job("tick"), paths)
    assert isinstance(source, SyntheticJob)
    with Loop(settings(paths, over_capacity=0.01), source):
        wait_for("three landed periods", lambda: len(landed(paths)) >= 3)
    reports = [read_report(p) for p in list_reports(paths.landing, "tick")]
    assert sorted(n for r in reports for n in r.utilisation) == list(source.state.nodes)
    assert all(v > 0.01 for r in reports for v in r.utilisation.values())


def _cli(paths: Paths, job: str) -> subprocess.Popen[str]:
    env = {**os.environ, "RECONF_HOME": str(paths.home),
           "RECONF_CONFIG": os.environ["RECONF_CONFIG"]}
    return subprocess.Popen([sys.executable, "-u", "-m", "reconf.cli", "runtime", "run",
                             "--job", job, "--poll", "0.2"], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture
def started(paths: Paths) -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigterm_mid_landing_finishes_that_period_and_a_restart_never_relands(
        paths: Paths, started: list[subprocess.Popen[str]]) -> None:
    """SIGTERM while a landing is being written (its hidden temp directory exists): the period is
    completed, the process exits 0; a restarted runtime lands only later periods."""
    folder = paths.landing / "big"
    proc = _cli(paths, "big")
    started.append(proc)
    wait_for("a first landing", lambda: len(landed(paths, "big")) >= 1, 120)
    count = len(landed(paths, "big"))

    def writing() -> bool:
        return any(p.name.startswith(".period_end=") for p in folder.iterdir())

    deadline = time.monotonic() + 60
    while not writing():
        assert time.monotonic() < deadline, "never saw a landing in progress"
        time.sleep(0.002)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "received SIGTERM" in out and "none half-landed" in out
    assert "Traceback" not in out
    before = {e: (folder / f"period_end={e}").stat().st_ino for e in landed(paths, "big")}
    assert len(before) == count + 1  # the period being written when the signal came, whole
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no partial period
    assert sorted(p.name.removeprefix("period_end=") for p in folder.glob("period_end=*")) == \
        sorted(before)

    again = _cli(paths, "big")
    started.append(again)
    wait_for("a landing after the restart", lambda: len(landed(paths, "big")) > len(before), 120)
    again.send_signal(signal.SIGINT)
    out, _ = again.communicate(timeout=60)
    assert again.returncode == 0, out
    after = landed(paths, "big")
    assert all((folder / f"period_end={e}").stat().st_ino == ino for e, ino in before.items())
    assert min(set(after) - set(before)) > max(before)  # only later periods
    assert not any(f"landed period {e}" in out for e in before)


def test_a_second_runtime_of_the_job_is_refused(paths: Paths,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    with runtime_lock(paths.runtime, "tick"):
        assert main(["runtime", "run", "--job", "tick"]) == 2
        err = capsys.readouterr().err
        assert main(["apply", "--job", "tick"]) == 2  # it would apply behind the runtime's back
        apply_err = capsys.readouterr().err
    assert f"a live runtime of job 'tick' already runs (pid {os.getpid()}" in err
    assert "where:" in err and "fix:" in err and "Traceback" not in err
    assert "a live runtime of job 'tick' already runs" in apply_err
    assert landed(paths) == [] and load_state(paths.runtime, "tick") is None


@pytest.mark.parametrize(("argv", "words"), [
    (["--job", "nope"], "unknown job id 'nope'"),
    (["--job", "flights"], "job 'flights' has no live stand-in: the replay engine"),
    (["--job", "tick", "--kill-node", "node-9"], "job 'tick' runs no node 'node-9'"),
    (["--job", "tick", "--poll", "0"], "--poll must be > 0"),
])
def test_bad_input_is_one_message_exit_2(paths: Paths, capsys: pytest.CaptureFixture[str],
                                         argv: list[str], words: str) -> None:
    assert main(["runtime", "run", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and "where:" in err and "fix:" in err, err
    assert "Traceback" not in err
    assert landed(paths) == []


def test_a_landing_the_file_system_refuses_is_tried_again_not_skipped(paths: Paths) -> None:
    """The job's landing folder is a file (as a lost mount or a full disk, an OSError): the
    runtime says so and lands that same period once the folder can be made."""
    blocker = paths.landing / "tick"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("not a folder")
    source = make_source(resolve_job("tick"), paths)
    assert isinstance(source, SyntheticJob)
    with Loop(settings(paths), source) as loop:
        wait_for("a refused landing", lambda: any("could not land period" in ln
                                                  for ln in loop.lines))
        refused = next(ln for ln in loop.lines if "could not land period" in ln)
        period = refused.split("could not land period ", 1)[1].split()[0]
        blocker.unlink()
        wait_for("a landing", lambda: len(landed(paths)) >= 1)
    assert landed(paths)[0] == period  # the refused period itself, not the next one
