"""runtime.procs.stop with no grace: an immediate SIGKILL (an instance killed mid-run); and what a
leader that exited leaves behind is not waited for."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from runtime.procs import ORPHAN_GRACE_S, _members, alive, spawn, stop


def test_stop_without_grace_kills_at_once(tmp_path: Path) -> None:
    record = spawn("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"],
                   env=dict(os.environ), cwd=tmp_path, run_dir=tmp_path / "run",
                   log=tmp_path / "sleeper.log", url=None)
    assert alive(record)
    assert stop(record, grace_s=0.0) == "killed after 0 s"
    assert not alive(record)


def test_what_an_exited_leader_leaves_behind_is_killed_without_the_whole_grace(
        tmp_path: Path) -> None:
    """A leader that exits on SIGTERM, leaving a child that ignores it (a LocalExecutor worker
    of a forkserver after its task, waiting for the next one for ever): the child is killed a
    few seconds after the leader has gone, not after the service's whole grace."""
    child = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
             "open('child.ready', 'w').close(); time.sleep(600)")
    leader = (f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {child!r}]); "
              "time.sleep(600)")
    record = spawn("leader", [sys.executable, "-c", leader], env=dict(os.environ), cwd=tmp_path,
                   run_dir=tmp_path / "run", log=tmp_path / "leader.log", url=None)
    deadline = time.monotonic() + 30
    while not (tmp_path / "child.ready").exists():
        assert time.monotonic() < deadline, (tmp_path / "leader.log").read_text()
        time.sleep(0.1)
    started = time.monotonic()
    assert stop(record, grace_s=60) == "stopped; killed 1 process(es) it left behind"
    assert time.monotonic() - started < ORPHAN_GRACE_S + 5
    assert not alive(record) and not _members(record)
