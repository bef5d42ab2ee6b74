"""The ports `status` and `env` use: those the running services were started on (their pid
files' URLs), unless given on the command line; the environment's only for what does not run."""

from __future__ import annotations

from reconf.ports import Ports, running_ports
from reconf.procs import PidRecord


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
