"""The scheduler tests' helpers (tests/e2e/test_scheduler.py): the `tick` job's runtime stand-in
and the handle through which the tests and the docs' commands reach the module's Airflow."""

from __future__ import annotations

import sqlite3
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from reconf.settings import make_source
from schemas.config import PROJECT_ROOT, Paths, resolve_job

SPL = timedelta(seconds=30)
TICK, LATE, FILL, BACK = "tick", "late", "fill", "demo"
MISSED = 4  # tick's period (k of start + k*SPL) that never lands


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


class Runtime(threading.Thread):
    """The runtime stand-in of `tick`: lands each period once wall-clock time passes its end."""

    def __init__(self, paths: Paths, start: datetime) -> None:
        super().__init__(daemon=True)
        self.paths, self.origin = paths, start
        self.landed: dict[int, float] = {}  # k -> wall time it landed
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def period(self, k: int) -> datetime:
        return self.origin + k * SPL

    def run(self) -> None:
        try:
            source = make_source(resolve_job(TICK), self.paths)
            k = 1
            while not self.stop.is_set():
                if datetime.now(UTC) < self.period(k):
                    time.sleep(0.5)
                    continue
                if k != MISSED:
                    source.apply_latest(self.paths.published)
                    source.land_period(self.paths.landing, self.period(k))
                    self.landed[k] = time.time()
                k += 1
        except BaseException as exc:  # surfaced by the tests
            self.error = exc


class Airflow:
    """The module's Airflow: its home, and how the tests and the docs' commands reach it."""

    def __init__(self, paths: Paths, env: dict[str, str], runtime: Runtime) -> None:
        self.paths, self.env, self.runtime = paths, env, runtime

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(f"file:{self.paths.airflow / 'airflow.db'}?mode=ro", uri=True, timeout=60)
        try:
            return list(conn.execute(sql, params).fetchall())
        finally:
            conn.close()

    def shell(self, commands: str, timeout: float = 300) -> str:
        """`commands` in bash after the docs' env line, with no `airflow` on PATH before it."""
        script = f'set -e\neval "$(.venv/bin/python -m reconf.services env)"\n{commands}\n'
        done = subprocess.run(["bash", "-c", script], env=self.env, cwd=PROJECT_ROOT,
                              capture_output=True, text=True, timeout=timeout, check=False)
        assert done.returncode == 0, f"{commands}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    def runs(self, dag_id: str) -> list[tuple[str, str, str, str]]:
        """(logical date, run type, state, run id) of the DAG's runs, oldest period first."""
        return [(str(d)[:19], t, s, r) for d, t, s, r in self.query(
            "SELECT logical_date, run_type, state, run_id FROM dag_run WHERE dag_id = ? "
            "ORDER BY logical_date", dag_id)]

    def run_of(self, dag_id: str, at: datetime) -> tuple[str, str, str, str] | None:
        key = at.strftime("%Y-%m-%d %H:%M:%S")
        return next((r for r in self.runs(dag_id) if r[0] == key), None)

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str]:
        return {t: str(s) for t, s in self.query(
            "SELECT task_id, state FROM task_instance WHERE dag_id = ? AND run_id = ?", dag_id, run_id)}

    def wait_for_run(self, dag_id: str, at: datetime, states: tuple[str, ...],
                     timeout_s: float = 420) -> tuple[str, str, str, str]:
        deadline = time.monotonic() + timeout_s
        while True:
            assert self.runtime.error is None, self.runtime.error
            run = self.run_of(dag_id, at)
            if run is not None and run[2] in states:
                return run
            assert time.monotonic() < deadline, (
                f"{dag_id} run of {at}: {run} not in {states} after {timeout_s} s; runs: "
                f"{self.runs(dag_id)}\n{self.log_tails(dag_id, run[3] if run else '')}")
            time.sleep(2)

    def parked(self, dag_id: str, task_id: str, run_id: str) -> bool:
        """The scheduler has read the exit of the process that deferred (or parked) the task.

        Airflow 3.3 races otherwise: an answer given in the seconds before the scheduler reads
        that exit makes it find the resumed task queued ("finished with state success, but the
        task instance's state attribute is queued") and fail it. The approval's answer resumes
        the task, so the approval tests wait for the scheduler's log line; the landing and
        healing waits end in their triggers and need no such care (reconf/landing_wait.py)."""
        log = (self.paths.home / "logs" / "services" / "scheduler.log").read_text(
            errors="replace")
        return (f"Received executor event with state success for task instance TaskInstanceKey("
                f"dag_id='{dag_id}', task_id='{task_id}', run_id='{run_id}'") in log

    def log(self, dag_id: str, run_id: str, task_id: str) -> str:
        found = sorted((self.paths.airflow / "logs").glob(
            f"dag_id={dag_id}/run_id={run_id}/task_id={task_id}/*.log"))
        return "\n".join(p.read_text(errors="replace") for p in found)

    def log_tails(self, dag_id: str, run_id: str) -> str:
        found = sorted((self.paths.airflow / "logs").glob(f"dag_id={dag_id}/run_id={run_id}/task_id=*/*.log"))
        return "\n".join(f"--- {p.parent.name}\n" + "\n".join(
            p.read_text(errors="replace").splitlines()[-12:]) for p in found)
