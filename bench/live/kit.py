"""The machinery of `reconf bench live`: its own Airflow, the job it runs, the lander, and what
it reads back (the metadata DB, the task logs, the manifests).

The Airflow is the one `make up` starts (reconf.services `up`/`down`: api-server, scheduler,
dag-processor, triggerer, on free ports) with the settings `make up` gives it, in a temporary
RECONF_HOME on the default SQLite store, so what the bench measures is what an operator's
scheduled runs get. The job is the project's `demo` job (config/jobs.toml) on a short SPL; its
DAG is unpaused when parsed and its catch-up policy is 0, so its first run is the first period
that ends after Airflow is up.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from schemas.config import PROJECT_ROOT, Paths

__all__ = ["JOB", "Lander", "cpu_seconds", "job_config", "land_now", "read_records",
           "scheduled_runs", "started_airflow"]

JOB = "demo"
DAG_ID = f"reconfigure_{JOB}"


def _toml(value: Any) -> str:
    """One TOML value of the project's config (strings, numbers, booleans, dates, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))


def job_config(spl: timedelta, start: datetime, source: Path | None = None) -> str:
    """The `demo` job of config/jobs.toml (its defaults, strategy, budget, solver limit and
    source) on a grid of `spl` from `start`: no catch-up, a landing timeout of one SPL, and a
    what-if budget of a third of the SPL (at most half is allowed: it runs after publish)."""
    config = tomllib.loads((source or PROJECT_ROOT / "config" / "jobs.toml").read_text())
    merged = {**config.get("defaults", {}), **config["jobs"][JOB]}
    seconds = int(spl.total_seconds())
    merged.update({"spl": f"{seconds}s", "start_date": start, "catchup_periods": 0,
                   "landing_timeout": f"{seconds}s",
                   "shadow_time_budget_s": float(min(merged.get("shadow_time_budget_s", 60.0),
                                                     seconds // 3))})
    tables = {k: v for k, v in merged.items() if isinstance(v, dict) and k != "source"}
    lines = [f"[jobs.{JOB}]"] + [f"{k} = {_toml(v)}" for k, v in merged.items() if k not in tables]
    for name, table in tables.items():  # e.g. strategy_params.<strategy>
        for sub, values in table.items():
            lines += ["", f"[jobs.{JOB}.{name}.{sub}]",
                      *(f"{k} = {_toml(v)}" for k, v in values.items())]
    return "\n".join(lines) + "\n"


@contextmanager
def started_airflow(root: Path, config: str, extra_env: Mapping[str, str]
                    ) -> Iterator[Paths]:
    """Airflow as `make up` starts it, with `config` as its jobs.toml and its home under `root`;
    os.environ is that shell's while it runs (Paths.from_env and the lander read it)."""
    from reconf.services import Ports, down, up
    from runtime.procs import free_port

    path = root / "jobs.toml"
    path.write_text(config)
    ports = Ports(airflow=free_port(), mlflow=free_port(), spark_connect=free_port())
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW", "RECONF_SPARK", "RECONF_DB_URI", "PYTHONPATH"))}
    env.update({"RECONF_HOME": str(root / "home"), "RECONF_CONFIG": str(path),
                "RECONF_AIRFLOW_PORT": str(ports.airflow),
                "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False", **extra_env})
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    paths = Paths.from_env()
    try:
        up(paths, ports, names=["api-server", "scheduler", "dag-processor", "triggerer"],
           timeout_s=600)
        yield paths
    finally:
        down(paths, grace_s=30)
        os.environ.clear()
        os.environ.update(saved)


def land_now(source: Any, paths: Paths, period_end: datetime, job: str = JOB) -> float:
    """What a live runtime does at a period end: apply the newest published version, then land
    `job`'s period. Returns when it landed (the `_SUCCESS` marker's mtime, epoch seconds)."""
    from schemas.landing import SUCCESS_MARKER, period_dir

    source.apply_latest(paths.published)
    source.land_period(paths.landing, period_end)
    return (period_dir(paths.landing, job, period_end) / SUCCESS_MARKER).stat().st_mtime


class Lander(threading.Thread):
    """Lands each period of the grid at its end, in real time, with `land` (`land_now` by
    default; a live runtime can take its place). It starts with the period that ended last (late:
    a run the scheduler made for it while Airflow was starting would otherwise wait its whole
    landing timeout), then lands each next one at its end."""

    def __init__(self, paths: Paths, start: datetime, spl: timedelta,
                 land: Callable[[Any, Paths, datetime], float] = land_now) -> None:
        super().__init__(daemon=True, name="lander")
        self.paths, self.start_date, self.spl, self.land = paths, start, spl, land
        self.landed: dict[datetime, float] = {}
        self.loads: dict[datetime, tuple[float, ...]] = {}  # the load average at each landing
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        from reconf.settings import make_source
        from reconf.timetable import grid_ceil, grid_floor
        from schemas.config import resolve_job

        try:
            source = make_source(resolve_job(JOB), self.paths)
            now = datetime.now(UTC)
            end = grid_floor(self.start_date, self.spl, now) or grid_ceil(self.start_date, self.spl, now)
            while not self.stop.wait(max(0.0, end.timestamp() - time.time())):
                self.loads[end] = tuple(round(x, 2) for x in os.getloadavg())
                self.landed[end] = self.land(source, self.paths, end)
                end += self.spl
        except BaseException as exc:  # surfaced by the bench
            self.error = exc


def cpu_seconds(paths: Paths, service: str) -> float | None:
    """The CPU time (user + system) a service's own process has used so far, not its children's:
    what a setting such as a shorter scheduler sleep costs, apart from the tasks it runs."""
    from runtime.procs import read_record

    record = read_record(paths.home / "run" / f"{service}.pid")
    try:
        fields = Path(f"/proc/{record.pid}/stat").read_text().rsplit(")", 1)[1].split() \
            if record else []
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") if fields else None


def _epoch(stamp: str | None) -> float | None:
    """A metadata-DB timestamp (UTC, with or without its zone) as epoch seconds."""
    if not stamp:
        return None
    at = datetime.fromisoformat(str(stamp))
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


def query(paths: Paths, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{paths.airflow / 'airflow.db'}?mode=ro", uri=True, timeout=60)
    try:
        return list(conn.execute(sql, params).fetchall())
    except sqlite3.OperationalError:  # the tables are not there before `db migrate` ends
        return []
    finally:
        conn.close()


def scheduled_runs(paths: Paths) -> list[tuple[str, str, str]]:
    """(logical date, run id, state) of the job's scheduled runs, oldest first."""
    return [(str(d), r, str(s)) for d, r, s in query(
        paths, "SELECT logical_date, run_id, state FROM dag_run WHERE dag_id = ? AND "
        "run_type = 'scheduled' ORDER BY logical_date", DAG_ID)]


def _log_marks(path: Path) -> dict[str, float]:
    """From a task's log: when the task runner had parsed the DAG file (`parsed`) and when the
    stage's own code started and ended (`stage_start`, `stage_end`: the `reconf-stage` lines the
    DAG's tasks print)."""
    marks: dict[str, float] = {}
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        event, at = str(entry.get("event", "")), _epoch(entry.get("timestamp"))
        if at is None:
            continue
        if event == "Worker startup parse complete":
            marks["parsed"] = at
        elif event.startswith("reconf-stage ") and event.split()[2:3] == ["start"]:
            marks["stage_start"] = at
        elif event.startswith("reconf-stage ") and event.split()[2:3] in (["done"], ["failed"]):
            marks["stage_end"] = at
    return marks


def _manifests(paths: Paths) -> dict[str, dict[str, Any]]:
    """period end (ISO, UTC) -> version, created_at and the file's mtime (when it was written)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted((paths.published / JOB).glob("v*.json")):
        head = json.loads(path.read_text())
        end = datetime.fromisoformat(str(head["period_end"]).replace("Z", "+00:00"))
        found[end.astimezone(UTC).isoformat()] = {
            "version": head.get("version"), "published": path.stat().st_mtime,
            "created_at": _epoch(str(head.get("created_at", "")).replace("Z", "+00:00"))}
    return found


def read_records(paths: Paths, landed: Mapping[datetime, float],
                 loads: Mapping[datetime, tuple[float, ...]]) -> list[dict[str, Any]]:
    """One record per scheduled run, oldest first: its period end, when it landed, the run's
    and each task's moments (epoch seconds), the stages' own start and end, the manifest."""
    manifests = _manifests(paths)
    records = []
    for logical, run_id, state in scheduled_runs(paths):
        end = datetime.fromtimestamp(_epoch(logical) or 0.0, UTC)
        (run,) = query(paths, "SELECT queued_at, start_date, end_date FROM dag_run WHERE "
                       "dag_id = ? AND run_id = ?", DAG_ID, run_id) or [(None, None, None)]
        tasks: dict[str, dict[str, Any]] = {}
        for task_id, ti_state, scheduled, queued, started, ended, tries in query(
                paths, "SELECT task_id, state, scheduled_dttm, queued_dttm, start_date, end_date, "
                "try_number FROM task_instance WHERE dag_id = ? AND run_id = ?", DAG_ID, run_id):
            log = (paths.airflow / "logs" / f"dag_id={DAG_ID}" / f"run_id={run_id}" /
                   f"task_id={task_id}" / f"attempt={tries or 1}.log")
            tasks[task_id] = {"state": ti_state, "scheduled": _epoch(scheduled),
                              "queued": _epoch(queued), "start": _epoch(started),
                              "end": _epoch(ended), "tries": tries,
                              **(_log_marks(log) if log.is_file() else {})}
        manifest = manifests.get(end.isoformat(), {})
        records.append({
            "period_end": end.isoformat(), "period_end_epoch": end.timestamp(), "run_id": run_id,
            "state": state, "landed": landed.get(end), "load": list(loads.get(end, ())),
            "run": {"created": _epoch(run[0]), "start": _epoch(run[1]), "end": _epoch(run[2])},
            "tasks": tasks, **manifest})
    return records
