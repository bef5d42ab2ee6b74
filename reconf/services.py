"""Local services on localhost: a Spark Connect server, the Airflow components, an MLflow server,
and the live runtimes of the jobs `make up` runs one for (reconf/runtime_service.py).

`up` starts what is not already running (one pid file per service in `<RECONF_HOME>/run/`, logs
in `<RECONF_HOME>/logs/services/`), waits until each answers its health check and prints the
URLs; `down` stops exactly the processes those pid files name (runtime/procs.py); `status` says
what runs. Airflow runs as its four parts rather than `airflow standalone`, so that every part
has its own pid, log and health: the api-server (UI, REST API and the execution API the task
processes talk to), the scheduler (LocalExecutor; it runs scheduled runs and backfills), the
dag-processor, and the triggerer. All use `reconf.settings.airflow_env`, so they share the
project-local AIRFLOW_HOME and, with RECONF_DB_URI, PostgreSQL. `spark-connect` is the one
long-lived Spark driver with Delta (infra/spark-connect.sh); while it runs, the Airflow parts get
`RECONF_SPARK_REMOTE` pointing at it, so their tasks are thin clients and start no JVM.

    python -m reconf.services up|down|status|env [--help]   (also `reconf up|down|status`, `make up`)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from jobs.errors import StageError
from reconf import runtime_service
from reconf.mlflow_auth import ADMIN, ensure_mlflow_auth, password_path
from reconf.ports import Ports, port_exports, running_ports
from reconf.settings import airflow_bin, airflow_env, latency_settings, prepend_path
from runtime.procs import PidRecord, alive, read_record, spawn, stop
from schemas.config import PROJECT_ROOT, ConfigError, Paths

__all__ = ["SERVICES", "Ports", "Service", "down", "main", "print_env", "spark_connect_for", "status",
           "stop_service", "up"]

SERVICES = ("spark-connect", "mlflow", "api-server", "scheduler", "dag-processor", "triggerer")
# The api-server's health report names the other Airflow parts like this.
_HEALTH_KEYS = {"scheduler": "scheduler", "dag-processor": "dag_processor", "triggerer": "triggerer"}


@dataclass(frozen=True)
class Service:
    name: str
    argv: tuple[str, ...]
    env: dict[str, str]
    url: str | None  # what an operator opens
    health: str | None  # answers 200 when the service is ready


def run_dir(paths: Paths) -> Path:
    return paths.home / "run"


def log_dir(paths: Paths) -> Path:
    return paths.home / "logs" / "services"


_NO_GRAPHVIZ = "ignore:Could not import graphviz"


def _with_filter(filters: str, extra: str) -> str:
    """`filters` (a PYTHONWARNINGS value) with `extra` appended once (so `eval` of `env` twice
    changes nothing)."""
    parts = [f for f in filters.split(",") if f]
    return ",".join(parts if extra in parts else [*parts, extra])


def service_env(paths: Paths, ports: Ports, spark_connect: bool = False) -> dict[str, str]:
    """airflow_env plus the api-server's address, which the scheduler's task processes call, and
    (`spark_connect`: that server runs) RECONF_SPARK_REMOTE, unless the caller set one."""
    base = f"http://127.0.0.1:{ports.airflow}"
    remote = ({"RECONF_SPARK_REMOTE": os.environ.get("RECONF_SPARK_REMOTE") or ports.spark_remote}
              if spark_connect else {})
    env = airflow_env(paths)
    return {
        **env,
        **remote,
        # `airflow` and the venv's tools first on PATH, once (so `eval` of `env` is idempotent).
        "PATH": prepend_path(str(Path(airflow_bin()).parent), env.get("PATH", "")),
        # Airflow's dag commands warn on every run that graphviz (which we never render) is not
        # installed: three lines before the output of each `airflow dags …` the docs show.
        "PYTHONWARNINGS": _with_filter(os.environ.get("PYTHONWARNINGS", ""), _NO_GRAPHVIZ),
        # Task logs carry the stages' summaries (INFO); a CLI in the shell stays at WARNING.
        "AIRFLOW__LOGGING__LOGGING_LEVEL": os.environ.get("RECONF_TASK_LOG_LEVEL", "INFO"),
        # The MLflow server `up` starts: the tasks' links to their MLflow runs point at it.
        "RECONF_MLFLOW_URL": os.environ.get("RECONF_MLFLOW_URL") or f"http://127.0.0.1:{ports.mlflow}",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(ports.airflow),
        "AIRFLOW__API__BASE_URL": base,
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{base}/execution/",
        # A laptop or a 2-core VM, not a cluster: one API worker, a few task slots (default 32).
        "AIRFLOW__API__WORKERS": os.environ.get("AIRFLOW__API__WORKERS", "1"),
        "AIRFLOW__CORE__PARALLELISM": os.environ.get("AIRFLOW__CORE__PARALLELISM", "4"),
        **latency_settings(),
    }



def service_specs(paths: Paths, ports: Ports, spark_connect: bool = False) -> dict[str, Service]:
    env = service_env(paths, ports, spark_connect)
    airflow = airflow_bin()
    api = f"http://127.0.0.1:{ports.airflow}"
    mlflow = str(Path(sys.executable).with_name("mlflow"))
    specs = {
        "spark-connect": Service(
            "spark-connect",
            (str(PROJECT_ROOT / "infra" / "spark-connect.sh"), "--port", str(ports.spark_connect)),
            {**os.environ, "RECONF_PYTHON": sys.executable, "RECONF_HOME": str(paths.home)},
            ports.spark_remote, f"tcp://127.0.0.1:{ports.spark_connect}"),
        "mlflow": Service(
            "mlflow",
            (mlflow, "server", "--backend-store-uri", paths.mlflow_uri,
             "--default-artifact-root", (paths.mlflow / "artifacts").as_uri(),
             "--host", "127.0.0.1", "--port", str(ports.mlflow), "--workers", "1",
             "--app-name", "basic-auth"),  # a login for every request (reconf/mlflow_auth.py)
            # No GenAI job runner: it forks ten idle consumers we never use.
            {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
            f"http://127.0.0.1:{ports.mlflow}", f"http://127.0.0.1:{ports.mlflow}/health"),
        "api-server": Service("api-server", (airflow, "api-server"), env, api,
                              f"{api}/api/v2/monitor/health"),
    }
    # The scheduler (LocalExecutor) and the triggerer would each start Airflow's log server,
    # which binds every interface (0.0.0.0 / [::], ports 8793 and 8794: Airflow 3.3's serve_logs
    # has a port setting but no host setting). The api-server runs on this machine and reads the
    # task logs from AIRFLOW_HOME/logs itself, so they run without it: nothing listens beyond
    # 127.0.0.1.
    for name in ("scheduler", "dag-processor", "triggerer"):
        skip = () if name == "dag-processor" else ("--skip-serve-logs",)
        specs[name] = Service(name, (airflow, name, *skip), env, None, None)
    return specs


def keep_private(paths: Paths, airflow: bool = True) -> None:
    """AIRFLOW_HOME and the services' logs readable by their owner only: the api-server writes
    the generated admin password to its password file and prints it in api-server.log.
    AIRFLOW_HOME is made (0700, before Airflow writes into it) only when `airflow` parts start:
    `up --only spark-connect` leaves no Airflow home behind."""
    for directory in (paths.airflow, log_dir(paths)):
        if directory == paths.airflow and not airflow and not directory.exists():
            continue
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o700)
    secrets = [paths.airflow / "simple_auth_manager_passwords.json.generated",
               *log_dir(paths).glob("*.log")]
    for path in secrets:
        if path.is_file() and not path.is_symlink():
            path.chmod(0o600)


def _get(url: str, timeout: float = 3.0) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # loopback only
            return bytes(response.read()) if response.status == 200 else None
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _ready(name: str, spec: Service, api_health: str) -> bool:
    """The service answers: its own health URL (tcp://: the port accepts connections), or
    (Airflow parts) the api-server's report."""
    if spec.health is not None and spec.health.startswith("tcp://"):
        return _listening(int(spec.health.rsplit(":", 1)[1]))
    if spec.health is not None:
        return _get(spec.health) is not None
    body = _get(api_health)
    if body is None:
        return False
    try:
        report = json.loads(body).get(_HEALTH_KEYS[name]) or {}
    except (ValueError, AttributeError):  # not the api-server's JSON (another program on the port)
        return False
    return str(report.get("status")) == "healthy"


def _records(paths: Paths, notes: TextIO | None = None) -> dict[str, PidRecord]:
    """The live services, by name; stale pid files (process gone or pid reused) are removed,
    saying so on `notes` (stdout; `env` passes stderr: its stdout is `eval`ed)."""
    found: dict[str, PidRecord] = {}
    for path in sorted(run_dir(paths).glob("*.pid")):
        record = read_record(path)
        if record is None:
            continue
        if alive(record):
            found[record.name] = record
        else:
            # The leader is gone; its workers may not be (a kill -9 of the leader leaves them).
            leftovers = stop(record, grace_s=10)
            note = "" if leftovers == "was not running" else f"; its leftover processes: {leftovers}"
            print(f"removing stale pid file {path} ({record.name} pid {record.pid} is gone{note})",
                  file=notes or sys.stdout)
            path.unlink(missing_ok=True)
    return found


def _migrate(paths: Paths) -> None:
    from reconf.settings import ensure_airflow

    ensure_airflow(paths)  # SQLite: once; PostgreSQL: `airflow db migrate` (a no-op when current)


def _admin_login(paths: Paths) -> str | None:
    generated = paths.airflow / "simple_auth_manager_passwords.json.generated"
    try:
        users = json.loads(generated.read_text())
    except (OSError, ValueError):
        return None
    return ", ".join(f"{user} / {password}" for user, password in sorted(users.items())) or None


def up(paths: Paths, ports: Ports, names: Sequence[str] = SERVICES, timeout_s: float = 240.0,
       runtime_jobs: Sequence[str] = ()) -> int:
    """Start the named services that are not running, and the live runtimes of `runtime_jobs`
    (reconf/runtime_service.py; none unless asked); wait until all answer; print the URLs."""
    running = _records(paths)
    wanted = [n for n in SERVICES if n in names] + runtime_service.names(runtime_jobs)
    specs = service_specs(paths, ports, "spark-connect" in running or "spark-connect" in wanted)
    for job_id in runtime_jobs:
        specs[runtime_service.name(job_id)] = Service(
            runtime_service.name(job_id), runtime_service.argv(job_id),
            runtime_service.env(paths.home), None, None)
    for name in wanted:
        if name in running:
            print(f"{name:13} already running (pid {running[name].pid}); not starting another")
    todo = [n for n in wanted if n not in running]
    for name, port, knob in (("mlflow", ports.mlflow, "MLFLOW_PORT"),
                             ("api-server", ports.airflow, "AIRFLOW_PORT"),
                             ("spark-connect", ports.spark_connect, "SPARK_CONNECT_PORT")):
        if name in todo and _listening(port):  # else its health check would answer for us
            raise StageError(f"make up: port {port} (for {name}) is in use by another program",
                             where=f"127.0.0.1:{port}",
                             fix=f"stop that program, or choose another port: make up {knob}=<port>")
    airflow_parts = any(n in SERVICES and n not in ("mlflow", "spark-connect") for n in todo)
    keep_private(paths, airflow=airflow_parts)
    if airflow_parts:
        _migrate(paths)
    if any(n == "mlflow" for n in todo):
        paths.mlflow.mkdir(parents=True, exist_ok=True)
        mlflow_spec = specs["mlflow"]  # its login: the admin password, generated once, 0600
        specs["mlflow"] = replace(mlflow_spec, env={**mlflow_spec.env,
                                                     **ensure_mlflow_auth(paths)})
    started = [spawn(n, specs[n].argv, env=specs[n].env, cwd=PROJECT_ROOT, run_dir=run_dir(paths),
                     log=log_dir(paths) / f"{n}.log", url=specs[n].url) for n in todo]
    api_health = specs["api-server"].health or ""
    deadline = time.monotonic() + timeout_s
    waiting = {r.name: r for r in started}
    while waiting:
        for name, record in list(waiting.items()):
            if not alive(record):
                _abort(paths, started, f"{name} exited during start-up", record)
            if (runtime_service.ready(record) if runtime_service.is_runtime(name)
                    else _ready(name, specs[name], api_health)):
                print(f"{name:13} ready (pid {record.pid}){'  ' + record.url if record.url else ''}")
                del waiting[name]
        if waiting and time.monotonic() > deadline:
            _abort(paths, started, f"{', '.join(waiting)} not ready after {timeout_s:.0f} s",
                   next(iter(waiting.values())))
        time.sleep(1.0)
    keep_private(paths, airflow=airflow_parts)  # the generated password file, new logs
    _print_summary(paths, {**running, **{r.name: r for r in started}})
    return 0


def _abort(paths: Paths, started: list[PidRecord], what: str, culprit: PidRecord) -> None:
    """Stop what this call started (all or nothing), then say why with the log's last lines."""
    for record in started:
        stop(record, grace_s=10)
        (run_dir(paths) / f"{record.name}.pid").unlink(missing_ok=True)
    tail = "\n".join(Path(culprit.log).read_text(errors="replace").splitlines()[-20:])
    raise StageError(f"make up: {what}; stopped the services this call started. "
                     f"Last lines of {culprit.log}:\n{tail}",
                     where=culprit.log,
                     fix="fix what the log names (a port in use: set RECONF_AIRFLOW_PORT / "
                         "RECONF_MLFLOW_PORT), then run `make up` again")


def _print_summary(paths: Paths, records: dict[str, PidRecord]) -> None:
    if "api-server" in records:
        print(f"Airflow UI and API: {records['api-server'].url}")
        login = _admin_login(paths)
        print(f"  login: {login}" if login else "  login: see `[core] simple_auth_manager_users`")
    if "mlflow" in records:
        print(f"MLflow tracking server: {records['mlflow'].url}  (store {paths.mlflow_uri})")
        print(f"  login: {ADMIN}, password in {password_path(paths)} (readable by you only)")
    if "spark-connect" in records:
        print(f"Spark Connect server: {records['spark-connect'].url}  (stages: "
              f"RECONF_SPARK_REMOTE={records['spark-connect'].url})")
    for name, record in sorted(records.items()):
        if runtime_service.is_runtime(name):
            print(f"live runtime of job {runtime_service.job_of(name)}: pid {record.pid}, lands "
                  f"each period at its end, one line per event in {record.log}")
    print(f"pids in {run_dir(paths)}, logs in {log_dir(paths)}; stop with `make down`")


def spark_connect_for(paths: Paths, ports: Ports, timeout_s: float = 300.0) -> tuple[str, PidRecord | None]:
    """The Spark Connect URL a run should use: `$RECONF_SPARK_REMOTE`, else the server `make up`
    started, else one started now (returned, so the caller stops what it started)."""
    from jobs.spark.connect import remote_url, wait_until_serving

    if (url := remote_url()) is not None:
        return url, None
    running = _records(paths).get("spark-connect")
    if running is not None and running.url:
        return running.url, None
    if _listening(ports.spark_connect):
        raise StageError(f"port {ports.spark_connect} (for spark-connect) is in use by another program",
                         where=f"127.0.0.1:{ports.spark_connect}",
                         fix="set RECONF_SPARK_REMOTE to that server if it is one, or "
                             "RECONF_SPARK_CONNECT_PORT to a free port")
    spec = service_specs(paths, ports)["spark-connect"]
    record = spawn(spec.name, spec.argv, env=spec.env, cwd=PROJECT_ROOT, run_dir=run_dir(paths),
                   log=log_dir(paths) / f"{spec.name}.log", url=spec.url)
    if not wait_until_serving(ports.spark_remote, timeout_s, lambda: alive(record)):
        _abort(paths, [record], f"spark-connect not serving after {timeout_s:.0f} s", record)
    return ports.spark_remote, record


def stop_service(paths: Paths, record: PidRecord, grace_s: float = 20.0) -> str:
    """Stop one service this process started (and forget its pid file)."""
    outcome = stop(record, grace_s)
    (run_dir(paths) / f"{record.name}.pid").unlink(missing_ok=True)
    return outcome


def down(paths: Paths, grace_s: float = 20.0) -> int:
    """Stop exactly the processes our pid files name; harmless when nothing runs."""
    running = _records(paths)
    if not running:
        print("nothing was running (no live pid files in "
              f"{run_dir(paths)}); nothing to stop")
        return 0
    runtimes = sorted(n for n in running if runtime_service.is_runtime(n))
    for name in [*runtimes, *reversed(SERVICES)]:  # clients first, the api-server and MLflow last
        if (record := running.get(name)) is not None:
            print(f"{name:13} pid {record.pid}: {stop(record, grace_s)}")
            (run_dir(paths) / f"{name}.pid").unlink(missing_ok=True)
    return 0


def status(paths: Paths, ports: Ports) -> int:
    """One line per service: running (and healthy?) or stopped. Exit 0 if all run, 3 if not."""
    running = _records(paths)
    specs = service_specs(paths, ports, "spark-connect" in running)
    api_health = specs["api-server"].health or ""
    for name in SERVICES:
        record = running.get(name)
        if record is None:
            print(f"{name:13} stopped")
            continue
        health = "healthy" if "api-server" in running or specs[name].health else "up"
        if health == "healthy" and not _ready(name, specs[name], api_health):
            health = "not answering"
        print(f"{name:13} running, pid {record.pid}, {health}{'  ' + record.url if record.url else ''}")
    for name in sorted(n for n in running if runtime_service.is_runtime(n)):
        print(runtime_service.status_line(running[name]))
    print(runtime_service.broker_line(paths.home))
    return 0 if all(name in running for name in SERVICES) else 3


def print_env(paths: Paths, ports: Ports) -> int:
    """`export` lines that point a shell's `airflow` command at the project's Airflow, and the
    docs' other commands at the services that run: `ports` are those they were started on
    (`run`: reconf.ports.running_ports), exported as RECONF_AIRFLOW_PORT & co. (the REST
    recipes' address), with RECONF_HOME (where the recipes read the admin password)."""
    import shlex

    env = service_env(paths, ports, "spark-connect" in _records(paths, sys.stderr))
    # The shell's own `airflow` commands stay quiet (the services log their tasks at INFO).
    env["AIRFLOW__LOGGING__LOGGING_LEVEL"] = airflow_env(paths)["AIRFLOW__LOGGING__LOGGING_LEVEL"]
    env.update(port_exports(ports))
    for key, value in sorted(env.items()):
        if os.environ.get(key) != value:
            print(f"export {key}={shlex.quote(value)}")
    return 0


EPILOG = """examples:
  make up                                  # everything: Airflow on :8080, MLflow on :5000,
                                           # Spark Connect on :15002
  python -m reconf.services up --only mlflow --mlflow-port 5001
  RECONF_DB_URI=postgresql+psycopg2://reconf@127.0.0.1:5432 make up   # both stores on PostgreSQL
  make up LIVE_JOBS=demo,orders            # the live runtimes of these jobs (default: demo;
                                           # RECONF_LIVE_JOBS too; LIVE_JOBS= runs none)
  make status                              # what runs, and whether it answers
  make down                                # stop exactly what `up` started (by pid)
  eval "$(python -m reconf.services env)"  # then `airflow ...` uses the project's Airflow

Ports also come from RECONF_AIRFLOW_PORT / RECONF_MLFLOW_PORT / RECONF_SPARK_CONNECT_PORT; state lives in $RECONF_HOME
(default .reconf/): run/*.pid, logs/services/*.log. docs/operations.md, "Services", has more."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of up/down/status (shared by `python -m reconf.services` and `reconf`)."""
    parser.add_argument("--only", nargs="+", choices=(*SERVICES, "runtime"),
                        default=[*SERVICES, "runtime"], metavar="NAME",
                        help=f"up: start only these services (of: {', '.join(SERVICES)}, and "
                        "runtime: the live runtimes of --runtime-jobs)")
    parser.add_argument("--runtime-jobs", metavar="J1,J2",
                        help=f"up: the jobs to run a live runtime for (default: ${runtime_service.ENV}"
                        f", else {','.join(runtime_service.DEFAULT_JOBS)}; empty: none)")
    parser.add_argument("--airflow-port", type=int, default=None, help="Airflow UI/API port (8080)")
    parser.add_argument("--mlflow-port", type=int, default=None, help="MLflow server port (5000)")
    parser.add_argument("--spark-connect-port", type=int, default=None,
                        help="Spark Connect server port (15002)")
    parser.add_argument("--timeout", type=float, default=240.0, metavar="S",
                        help="up: seconds to wait for every service to answer (240)")
    parser.add_argument("--grace", type=float, default=20.0, metavar="S",
                        help="down: seconds between SIGTERM and SIGKILL (20)")


def run(args: argparse.Namespace) -> int:
    paths = Paths.from_env()
    env_ports = Ports.from_env()
    ports = Ports(args.airflow_port or env_ports.airflow, args.mlflow_port or env_ports.mlflow,
                  args.spark_connect_port or env_ports.spark_connect)
    if args.action in ("status", "env"):  # about what runs: the ports it was started on
        given = frozenset(field for field, option in (
            ("airflow", args.airflow_port), ("mlflow", args.mlflow_port),
            ("spark_connect", args.spark_connect_port)) if option)
        ports = running_ports(ports, _records(paths, sys.stderr if args.action == "env" else None),
                              given)
    if args.action == "up":
        jobs = runtime_service.live_jobs(args.runtime_jobs, os.environ) \
            if "runtime" in args.only else ()
        return up(paths, ports, args.only, args.timeout, jobs)
    if args.action == "down":
        return down(paths, args.grace)
    if args.action == "env":
        return print_env(paths, ports)
    return status(paths, ports)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reconf.services", description=__doc__.split("\n\n")[0],
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("up", "down", "status", "env"),
                        help="up, down, status; env prints the Airflow environment as exports")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (StageError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
