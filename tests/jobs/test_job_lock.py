"""The job lock's wait is news, not an error: it goes to stdout (an Airflow task log shows stderr
as ERROR, which made a green task look failed), and the holder's release lets the waiter in."""

from __future__ import annotations

import fcntl
import threading
import time
from pathlib import Path

import pytest

from jobs.errors import job_lock
from schemas.config import Paths


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
