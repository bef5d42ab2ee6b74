"""The ports `status` and `env` use: those the running services were started on (their pid
files' URLs), unless given on the command line; the environment's only for what does not run."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconf.ports import Ports, running_ports
from runtime.procs import PidRecord


def _record(name: str, url: str | None) -> PidRecord:
    return PidRecord(name=name, pid=1, start_ticks=1, url=url, log="x.log", argv=("x",),
                     started_at=0.0)


def test_a_running_services_recorded_port_counts_over_the_default() -> None:
    running = {"api-server": _record("api-server", "http://127.0.0.1:8081"),
               "mlflow": _record("mlflow", "http://127.0.0.1:5001"),
               "spark-connect": _record("spark-connect", "sc://127.0.0.1:15003"),
               "scheduler": _record("scheduler", None)}
    assert running_ports(Ports(), running) == Ports(8081, 5001, 15003)


def test_an_option_given_wins_and_what_does_not_run_keeps_the_environments_port() -> None:
    running = {"api-server": _record("api-server", "http://127.0.0.1:8081"),
               "mlflow": _record("mlflow", "not a url:x")}
    ports = running_ports(Ports(9000, 5002, 15004), running, frozenset({"airflow"}))
    assert ports == Ports(9000, 5002, 15004)
    assert running_ports(Ports(9000, 5002, 15004), {}) == Ports(9000, 5002, 15004)


def test_env_says_it_removed_a_stale_pid_file_on_stderr_never_in_what_is_evaled(
        tmp_path, capsys) -> None:
    """`eval "$(python -m reconf.services env)"` runs stdout: a "removing stale pid file" note
    there would run `removing` as a command."""
    import json
    import subprocess

    from reconf.services import print_env
    from schemas.config import Paths

    gone = subprocess.Popen(["sleep", "0"])
    gone.wait()
    run = tmp_path / "home" / "run"
    run.mkdir(parents=True)
    (run / "mlflow.pid").write_text(json.dumps({
        "name": "mlflow", "pid": gone.pid, "start_ticks": 1, "url": "http://127.0.0.1:5001",
        "log": str(tmp_path / "x.log"), "argv": ["x"], "started_at": 0.0}))
    assert print_env(Paths(tmp_path / "home"), Ports()) == 0
    out, err = capsys.readouterr()
    assert "removing stale pid file" in err
    assert all(line.startswith("export ") for line in out.splitlines()), out
    assert not (run / "mlflow.pid").exists()


def test_the_shells_airflow_dags_commands_do_not_warn_about_graphviz(tmp_path) -> None:
    """With the env line's environment, `airflow dags …` (unpause, backfill, list-runs in the
    README) prints no graphviz warning before its output; the filter is added once."""
    import subprocess

    from reconf.services import service_env
    from schemas.config import Paths

    env = service_env(Paths(tmp_path / "home"), Ports())
    assert env["PYTHONWARNINGS"].split(",").count("ignore:Could not import graphviz") == 1
    done = subprocess.run([env["PATH"].split(":")[0] + "/airflow", "dags", "next-execution",
                           "nope"], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    # it ran past the import that warns: the fresh home has no database yet
    assert "airflow db migrate" in done.stdout + done.stderr, done.stdout + done.stderr
    assert "graphviz" not in done.stdout + done.stderr, done.stdout + done.stderr


def _running_here(run: Path, service: str, url: str) -> None:
    """A pid file for `service` that names this live test process: it counts as running."""
    import json
    import os

    from runtime.procs import _stat

    stat = _stat(os.getpid())
    assert stat is not None
    run.mkdir(parents=True, exist_ok=True)
    (run / f"{service}.pid").write_text(json.dumps({
        "name": service, "pid": os.getpid(), "start_ticks": stat[3], "url": url,
        "log": str(run / "x.log"), "argv": ["x"], "started_at": 0.0}))


def test_the_env_line_exports_the_ports_the_services_run_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """After `make up AIRFLOW_PORT=8081 MLFLOW_PORT=5001`, a shell whose environment names other
    ports (or none) gets the running ones: the REST recipes' `$RECONF_AIRFLOW_PORT` is :8081."""
    from reconf.services import main

    home = tmp_path / "home"
    _running_here(home / "run", "api-server", "http://127.0.0.1:8081")
    _running_here(home / "run", "mlflow", "http://127.0.0.1:5001")
    monkeypatch.setenv("RECONF_HOME", str(home))
    monkeypatch.setenv("RECONF_AIRFLOW_PORT", "9999")  # a stale value in the shell
    monkeypatch.delenv("RECONF_MLFLOW_PORT", raising=False)
    monkeypatch.delenv("RECONF_MLFLOW_URL", raising=False)
    monkeypatch.delenv("RECONF_SPARK_CONNECT_PORT", raising=False)
    assert main(["env"]) == 0
    out = capsys.readouterr().out
    assert "export RECONF_AIRFLOW_PORT=8081\n" in out
    assert "export RECONF_MLFLOW_PORT=5001\n" in out
    assert "export RECONF_SPARK_CONNECT_PORT=15002\n" in out  # not running: the default
    assert "export AIRFLOW__API__BASE_URL=http://127.0.0.1:8081\n" in out
    assert "export RECONF_MLFLOW_URL=http://127.0.0.1:5001\n" in out
    assert f"export RECONF_HOME={home}\n" not in out  # already the shell's: printed only if not
    monkeypatch.delenv("RECONF_HOME")
    monkeypatch.chdir(tmp_path)  # the default home, `.reconf` of the project, is absolute
    assert main(["env"]) == 0
    assert "export RECONF_HOME=/" in capsys.readouterr().out


def test_every_mlflow_link_follows_the_running_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reconf.demo import open_the_ui
    from reconf.ports import mlflow_ui_url, recorded_url
    from schemas.config import Paths

    home = tmp_path / "home"
    monkeypatch.setenv("RECONF_HOME", str(home))
    monkeypatch.delenv("RECONF_MLFLOW_URL", raising=False)
    monkeypatch.delenv("RECONF_MLFLOW_PORT", raising=False)
    assert mlflow_ui_url(home) == "http://127.0.0.1:5000"  # nothing runs: `make mlflow-ui`'s
    last = open_the_ui(Paths(home), "nope")
    assert "ui --backend-store-uri" in last and "--port 5000\n" in last
    assert "then browse http://127.0.0.1:5000 (experiment 'nope'" in last
    monkeypatch.setenv("RECONF_MLFLOW_PORT", "5003")
    assert mlflow_ui_url(home) == "http://127.0.0.1:5003"
    assert "--port 5003\n" in open_the_ui(Paths(home), "nope")

    _running_here(home / "run", "mlflow", "http://127.0.0.1:5001")  # `make up MLFLOW_PORT=5001`
    assert mlflow_ui_url(home) == "http://127.0.0.1:5001"
    last = open_the_ui(Paths(home), "nope")
    assert "browse http://127.0.0.1:5001 (experiment 'nope'" in last
    assert "ui --backend-store-uri" not in last  # no second server to start
    monkeypatch.setenv("RECONF_MLFLOW_URL", "http://mlflow.example:80/")
    assert mlflow_ui_url(home) == "http://mlflow.example:80"  # the env line's value wins

    monkeypatch.delenv("RECONF_MLFLOW_URL")
    stale = home / "run" / "mlflow.pid"
    stale.write_text(stale.read_text().replace('"start_ticks": ', '"start_ticks": 1'))
    assert recorded_url(home / "run", "mlflow") is None  # not the process it names
    assert mlflow_ui_url(home) == "http://127.0.0.1:5003"
    assert stale.exists()  # left for `make status` to remove, saying so
