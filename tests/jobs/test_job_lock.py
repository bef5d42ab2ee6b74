"""The job lock: a stage that waits names the holder's stage, pid and start, and says so on stdout
(a wait is news, not an error: an Airflow task log shows stderr as ERROR, which made a green task
look failed); the holder's release lets the waiter in."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from jobs.errors import StageError, job_lock
from schemas.config import Paths


def test_a_waiting_stage_names_the_stage_that_holds_the_lock(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = Paths(tmp_path)
    held, release = threading.Event(), threading.Event()

    def plan() -> None:
        with job_lock(paths, "j", "plan"):
            held.set()
            release.wait(10)

    holder = threading.Thread(target=plan)
    holder.start()
    try:
        assert held.wait(10)
        with pytest.raises(StageError, match="has held its lock"), job_lock(
                paths, "j", "publish", wait_s=0.3):
            pass
    finally:
        release.set()
        holder.join(10)
    out = capsys.readouterr().out
    assert f"held by plan pid {os.getpid()} since 20" in out and "publish j: waiting" in out
    with job_lock(paths, "j", "collect", wait_s=1):  # released: the next stage proceeds
        pass


def test_a_lock_wait_is_said_on_stdout_and_ends_when_the_holder_lets_go(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    paths = Paths(tmp_path)
    lock = tmp_path / "locks" / "j.lock"
    lock.parent.mkdir(parents=True)
    with open(lock, "a+") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        threading.Timer(1.0, fcntl.flock, (held.fileno(), fcntl.LOCK_UN)).start()
        started = time.monotonic()
        with job_lock(paths, "j", "plan", wait_s=30):
            waited = time.monotonic() - started
    out, err = capfd.readouterr()
    assert waited >= 0.9
    assert "plan j: waiting for another collect, plan or publish of this job to finish" in out
    assert err == ""
