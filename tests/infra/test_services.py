"""`make up` / `make down` bookkeeping: one set of services, stopped exactly, stale pid files gone.

Real processes throughout: an MLflow tracking server (the cheapest of the services) started and
stopped through the same code as `make up`; `make down` itself for the harmless case. The full
set (Airflow's four parts) is started by tests/e2e/test_backfill.py, which needs the scheduler.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from runtime.procs import PidRecord, alive, read_record
from schemas.config import PROJECT_ROOT

pytestmark = pytest.mark.e2e


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _services(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECONF_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "reconf.services", *args], env=env, cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=600, check=False)


def _pids_of(home: Path) -> set[int]:
    """Every live process whose command line names this RECONF_HOME (the services we started)."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(home) in (entry / "cmdline").read_text(errors="replace"):
                found.add(int(entry.name))
        except OSError:
            continue
    return found


def test_make_down_without_make_up_is_harmless(tmp_path: Path) -> None:
    env = {**os.environ, "RECONF_HOME": str(tmp_path / "home")}
    done = subprocess.run(["make", "-s", "down"], cwd=PROJECT_ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nothing was running" in done.stdout
    assert not (tmp_path / "home" / "run").exists() or not any((tmp_path / "home" / "run").iterdir())


def test_stale_pid_files_are_removed_and_never_signalled(tmp_path: Path) -> None:
    run = tmp_path / "home" / "run"
    run.mkdir(parents=True)
    gone = subprocess.Popen(["sleep", "0"])
    gone.wait()
    me = os.getpid()
    fake = {"url": None, "log": str(tmp_path / "x.log"), "argv": ["x"], "started_at": 0.0}
    # A process that exited, and a live pid (this test) whose start time is not the recorded one:
    # the kernel reused the pid, so it is not ours.
    (run / "mlflow.pid").write_text(json.dumps({"name": "mlflow", "pid": gone.pid, "start_ticks": 1, **fake}))
    (run / "scheduler.pid").write_text(json.dumps({"name": "scheduler", "pid": me, "start_ticks": 1, **fake}))
    (run / "triggerer.pid").write_text("not json")

    done = _services(tmp_path / "home", "down")

    assert done.returncode == 0, done.stderr
    assert "stale pid file" in done.stdout and "nothing was running" in done.stdout
    assert list(run.iterdir()) == []
    assert os.getpid() == me  # still here: a reused pid is never signalled


def test_up_twice_starts_one_set_and_down_stops_exactly_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = _free_port()
    first = _services(home, "up", "--only", "mlflow", "--mlflow-port", str(port), "--timeout", "300")
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"http://127.0.0.1:{port}" in first.stdout
    pid_file = home / "run" / "mlflow.pid"
    record = read_record(pid_file)
    assert isinstance(record, PidRecord) and alive(record)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as response:
        assert response.read() == b"OK"
    processes = _pids_of(home)
    assert record.pid in processes

    second = _services(home, "up", "--only", "mlflow", "--mlflow-port", str(port))
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"already running (pid {record.pid})" in second.stdout
    assert read_record(pid_file) == record  # the same process, no second server
    assert _pids_of(home) == processes

    status = _services(home, "status", "--mlflow-port", str(port))
    assert f"mlflow        running, pid {record.pid}, healthy" in status.stdout
    assert status.returncode == 3  # not everything runs (only MLflow was asked for)
    # without the port again (`make status` after `make up MLFLOW_PORT=…`): the port MLflow was
    # started on, from its pid file, not the default :5000, and so for the shell's environment
    plain = _services(home, "status")
    assert f"mlflow        running, pid {record.pid}, healthy  http://127.0.0.1:{port}" in plain.stdout
    exports = _services(home, "env")
    assert f"export RECONF_MLFLOW_URL=http://127.0.0.1:{port}\n" in exports.stdout, exports.stdout
    assert f"export RECONF_MLFLOW_PORT={port}\n" in exports.stdout, exports.stdout

    down = _services(home, "down", "--grace", "20")
    assert down.returncode == 0, down.stdout + down.stderr
    assert f"mlflow        pid {record.pid}: stopped" in down.stdout or "killed" in down.stdout
    assert not pid_file.exists()
    assert not alive(record)
    assert _pids_of(home) == set()  # the server and every process it forked
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
    again = _services(home, "down")
    assert again.returncode == 0 and "nothing was running" in again.stdout


def test_up_refuses_a_port_another_program_holds(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = _services(tmp_path / "home", "up", "--only", "mlflow", "--mlflow-port", str(port))
    assert done.returncode == 2
    assert f"port {port} (for mlflow) is in use by another program" in done.stderr
    assert "MLFLOW_PORT=" in done.stderr
    assert not (tmp_path / "home" / "run" / "mlflow.pid").exists()  # nothing started


def test_a_crashed_leader_s_leftover_processes_are_stopped_with_its_stale_pid_file(
    tmp_path: Path,
) -> None:
    import signal
    import time

    from runtime.procs import spawn

    home = tmp_path / "home"
    record = spawn("scheduler", ["bash", "-c", "sleep 300 & wait"], env=dict(os.environ),
                   cwd=tmp_path, run_dir=home / "run", log=tmp_path / "s.log", url=None)
    deadline = time.monotonic() + 30
    while not (children := [p for p in _group(record.pid) if p != record.pid]):
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.1)
    os.kill(record.pid, signal.SIGKILL)  # the leader crashes; its child lives on in its group
    os.waitpid(record.pid, 0)
    assert _group(record.pid) == set(children)

    done = _services(home, "down")

    assert done.returncode == 0, done.stderr
    assert "stale pid file" in done.stdout and "leftover processes: stopped" in done.stdout
    assert _group(record.pid) == set()
    assert not (home / "run" / "scheduler.pid").exists()


def _group(pgid: int) -> set[int]:
    """Live (non-zombie) processes of process group `pgid`."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                raw = (entry / "stat").read_text()
                fields = raw[raw.rfind(")") + 2:].split()
                if int(fields[2]) == pgid and fields[0] != "Z":
                    found.add(int(entry.name))
        except OSError:
            continue
    return found


def test_every_airflow_process_waits_a_minute_for_the_sqlite_lock(tmp_path: Path) -> None:
    """Scheduler, dag-processor and a CLI write one SQLite file: a 5 s busy timeout lost writes."""
    from reconf.settings import airflow_env
    from schemas.config import Paths

    env = {**airflow_env(Paths(tmp_path)), "PYTHONWARNINGS": "ignore"}
    probe = ("from airflow import settings; settings.configure_orm(); "
             "c = settings.engine.raw_connection(); "
             "print(c.driver_connection.execute('PRAGMA busy_timeout').fetchone()[0])")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) == 60_000  # milliseconds, Airflow's own engine


def test_the_env_line_puts_airflow_on_path_and_is_idempotent(tmp_path: Path) -> None:
    """README's `eval "$(.venv/bin/python -m reconf.services env)"`, twice, in a shell whose PATH
    has no `airflow`: `airflow` is the project's, and the second eval changes nothing."""
    script = "\n".join([
        'eval "$(.venv/bin/python -m reconf.services env)"',
        'echo "first PATH=$PATH"; echo "first PYTHONPATH=$PYTHONPATH"; command -v airflow',
        'eval "$(.venv/bin/python -m reconf.services env)"',
        'echo "second PATH=$PATH"; echo "second PYTHONPATH=$PYTHONPATH"',
        '.venv/bin/python -m reconf.services env | grep -c "^export " || true',
    ])
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "RECONF_HOME": str(tmp_path / "home"),
           "PYTHONPATH": "/opt/elsewhere"}
    done = subprocess.run(["bash", "-c", script], env=env, cwd=PROJECT_ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    values = {line.split("=", 1)[0]: line.split("=", 1)[1] for line in lines if "=" in line}
    assert Path(lines[2]) == Path(sys.executable).with_name("airflow")  # on PATH, the venv's
    assert values["second PATH"] == values["first PATH"]
    assert values["first PATH"].split(":").count(str(Path(sys.executable).parent)) == 1
    assert values["second PYTHONPATH"] == values["first PYTHONPATH"] == f"{PROJECT_ROOT}:/opt/elsewhere"
    assert lines[-1] == "0"  # after the eval, nothing left to export
