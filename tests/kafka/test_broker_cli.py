"""`python -m runtime.kafka_streams.broker up|status|down` (what `make up` / `make down` run):
a broker of its own under $RECONF_HOME/kafka, up twice = one broker, down stops exactly it and
the jobs' instances."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.procs import alive, read_record
from schemas.config import PROJECT_ROOT

pytestmark = pytest.mark.kafka


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECONF_HOME": str(home), "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.run([sys.executable, "-m", "runtime.kafka_streams.broker", *args],
                          env=env, capture_output=True, text=True, timeout=180, cwd=PROJECT_ROOT)


def test_up_status_down(tmp_path: Path) -> None:
    assert _cli(tmp_path, "status").returncode == 3
    up = _cli(tmp_path, "up")
    assert up.returncode == 0, up.stderr
    assert "kafka: running at 127.0.0.1:" in up.stdout
    record = read_record(tmp_path / "kafka" / "run" / "kafka.pid")
    assert record is not None and alive(record)
    again = _cli(tmp_path, "up")
    assert "already running" in again.stdout
    assert _cli(tmp_path, "status").returncode == 0
    down = _cli(tmp_path, "down")
    # SIGTERM, then SIGKILL after the grace (a broker's shutdown on a loaded machine may take it)
    assert down.returncode == 0 and ("kafka: stopped" in down.stdout
                                     or "kafka: killed after" in down.stdout), down.stdout
    assert not alive(record)
    assert "was not running" in _cli(tmp_path, "down").stdout
