"""The live runtime as a `make up` service (reconf/runtime_service.py through reconf/services.py):
started with its pid file and log, listed by `status` next to the Kafka broker, started once,
stopped by `down` with SIGTERM so its last period is whole. Real processes, no Airflow."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runtime.procs import alive, read_record, spawn, stop
from schemas.config import PROJECT_ROOT
from schemas.landing import SUCCESS_MARKER

CONFIG = """\
[jobs.tick]
spl = "2s"
start_date = 2026-01-01T00:00:00Z
source = { kind = "synthetic", operators = 2, keygroups_per_operator = 4, nodes = 3, seed = 7 }

[jobs.flights]
source = { kind = "replay", job = 2 }
"""


def _services(tmp: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "RECONF_LIVE_JOBS"}
    full = {**base, "RECONF_HOME": str(tmp / "home"), "RECONF_CONFIG": str(tmp / "jobs.toml"),
            **env}
    return subprocess.run([sys.executable, "-m", "reconf.services", *args], env=full,
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    (tmp_path / "jobs.toml").write_text(CONFIG)
    return tmp_path


def test_up_runs_the_jobs_runtime_status_lists_it_and_down_stops_it_cleanly(tmp: Path) -> None:
    home = tmp / "home"
    first = _services(tmp, "up", "--only", "runtime", "--runtime-jobs", "tick")
    assert first.returncode == 0, first.stdout + first.stderr
    record = read_record(home / "run" / "runtime-tick.pid")
    assert record is not None and alive(record)
    assert f"runtime-tick  ready (pid {record.pid})" in first.stdout
    try:
        landing = home / "landing" / "tick"
        deadline = time.monotonic() + 60
        while not any((p / SUCCESS_MARKER).is_file() for p in landing.glob("period_end=*")):
            assert time.monotonic() < deadline, "the runtime service landed nothing"
            time.sleep(0.1)
        again = _services(tmp, "up", "--only", "runtime", "--runtime-jobs", "tick")
        assert f"runtime-tick  already running (pid {record.pid})" in again.stdout
        status = _services(tmp, "status")
        assert f"runtime-tick  running, pid {record.pid}, last: " in status.stdout
        assert "kafka         stopped" in status.stdout
        assert status.returncode == 3  # Airflow and the rest do not run
    finally:
        down = _services(tmp, "down")
    assert f"runtime-tick  pid {record.pid}: stopped" in down.stdout, down.stdout
    assert not alive(record) and not (home / "run" / "runtime-tick.pid").exists()
    log = Path(record.log).read_text()
    assert "received SIGTERM" in log and "none half-landed" in log
    assert not [p for p in landing.iterdir() if p.name.startswith(".")]  # nothing partial
    assert all((p / SUCCESS_MARKER).is_file() for p in landing.glob("period_end=*"))


def test_status_lists_the_kafka_broker_by_its_own_pid_file(tmp: Path) -> None:
    """`make up` starts the broker after the services (runtime/kafka_streams/broker.py, its pid
    file under kafka/run): a process recorded there is what status reports."""
    run = tmp / "home" / "kafka" / "run"
    record = spawn("kafka", ["sleep", "120"], env=dict(os.environ), cwd=tmp, run_dir=run,
                   log=tmp / "broker.log", url="127.0.0.1:9")
    try:
        status = _services(tmp, "status")
        assert f"kafka         running, pid {record.pid}  127.0.0.1:9" in status.stdout
    finally:
        stop(record, grace_s=5)


def test_which_jobs_up_runs_a_runtime_for(tmp: Path) -> None:
    # the default (demo) is not in this config: noted, nothing started, not an error
    plain = _services(tmp, "up", "--only", "runtime")
    assert plain.returncode == 0, plain.stderr
    assert "runtime-demo  not started: unknown job id 'demo'" in plain.stdout
    assert not (tmp / "home" / "run" / "runtime-demo.pid").exists()
    # a job named on purpose that cannot run live is refused, with what/where/fix
    named = _services(tmp, "up", "--only", "runtime", RECONF_LIVE_JOBS="flights")
    assert named.returncode == 2
    assert "no live runtime for job 'flights'" in named.stderr and "fix:" in named.stderr
    # empty: none
    none = _services(tmp, "up", "--only", "runtime", "--runtime-jobs", "")
    assert none.returncode == 0 and "runtime-" not in none.stdout
    assert not list((tmp / "home" / "run").glob("runtime-*.pid"))
