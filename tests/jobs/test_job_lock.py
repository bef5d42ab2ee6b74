"""The job lock says who holds it: a stage that waits names the holder's stage, pid and start."""

from __future__ import annotations

import os
import threading
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
    err = capsys.readouterr().err
    assert f"held by plan pid {os.getpid()} since 20" in err and "publish j: waiting" in err
    with job_lock(paths, "j", "collect", wait_s=1):  # released: the next stage proceeds
        pass
