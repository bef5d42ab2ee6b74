"""reconf.procs.stop with no grace: an immediate SIGKILL (an instance killed mid-run)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from reconf.procs import alive, spawn, stop


def test_stop_without_grace_kills_at_once(tmp_path: Path) -> None:
    record = spawn("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"],
                   env=dict(os.environ), cwd=tmp_path, run_dir=tmp_path / "run",
                   log=tmp_path / "sleeper.log", url=None)
    assert alive(record)
    assert stop(record, grace_s=0.0) == "killed after 0 s"
    assert not alive(record)
