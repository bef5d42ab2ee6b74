"""A local Airflow's DAG runs as an operator sees them: its metadata DB (SQLite, read-only) and
its task logs under AIRFLOW_HOME/logs.

Shared by the e2e tests that run a real Airflow (tests/e2e/scheduler_kit.py `Airflow`) and the
benchmarks that do (bench/soak/scheduled.py), so that both read a run's state and a task's log
the same way. Reading only: a run is made and changed by the scheduler, never from here.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from schemas.config import Paths

__all__ = ["ENDED", "AirflowRuns", "log_messages"]

Run = tuple[str, str, str, str]
#: the states in which a task instance has ended
ENDED = ("success", "failed", "skipped", "upstream_failed")


def log_messages(log: str) -> str:
    """A task log's JSON lines as an operator reads them: each line's event, and the failure's
    message (what / where / fix) unescaped from its `error_detail`."""
    out = []
    for line in log.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            out.append(line)
            continue
        if not isinstance(entry, dict):
            out.append(line)
            continue
        out.append(str(entry.get("event", "")))
        out += [str(e.get("exc_value", "")) for e in entry.get("error_detail") or []]
    return "\n".join(out)


class AirflowRuns:
    """The runs of the Airflow whose home is `paths`. `check()` is called on every poll of a
    wait: a subclass raises there when something its waits depend on has failed (a runtime
    stand-in's thread), so a wait never outlasts the cause of its timeout."""

    def __init__(self, paths: Paths) -> None:
        self.paths = paths

    def check(self) -> None:
        """Nothing by default; see the class."""

    def wait_for_dags(self, dag_ids: Sequence[str], timeout_s: float = 300) -> None:
        """Until the dag-processor has parsed every one of `dag_ids` (TimeoutError after
        `timeout_s`, naming those it has not)."""
        deadline = time.monotonic() + timeout_s
        wanted = set(dag_ids)
        while True:
            self.check()
            found = {d for (d,) in self.query("SELECT dag_id FROM dag")}
            if wanted <= found:
                return
            if time.monotonic() >= deadline:
                raise TimeoutError(f"the dag-processor never parsed {sorted(wanted - found)}")
            time.sleep(1)

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(f"file:{self.paths.airflow / 'airflow.db'}?mode=ro", uri=True,
                               timeout=60)
        try:
            return list(conn.execute(sql, params).fetchall())
        finally:
            conn.close()

    def runs(self, dag_id: str) -> list[Run]:
        """(logical date, run type, state, run id) of the DAG's runs, oldest period first."""
        return [(str(d)[:19], t, s, r) for d, t, s, r in self.query(
            "SELECT logical_date, run_type, state, run_id FROM dag_run WHERE dag_id = ? "
            "ORDER BY logical_date", dag_id)]

    def run_of(self, dag_id: str, at: datetime) -> Run | None:
        key = at.strftime("%Y-%m-%d %H:%M:%S")
        return next((r for r in self.runs(dag_id) if r[0] == key), None)

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str]:
        return {t: str(s) for t, s in self.query(
            "SELECT task_id, state FROM task_instance WHERE dag_id = ? AND run_id = ?", dag_id,
            run_id)}

    def wait_for_run(self, dag_id: str, at: datetime, states: tuple[str, ...],
                     timeout_s: float = 420) -> Run:
        """The run of `at` once it is in one of `states`; TimeoutError (with the runs and the
        task logs' last lines) after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.check()
            run = self.run_of(dag_id, at)
            if run is not None and run[2] in states:
                return run
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"{dag_id} run of {at}: {run} not in {states} after {timeout_s} s; runs: "
                    f"{self.runs(dag_id)}\n{self.log_tails(dag_id, run[3] if run else '')}")
            time.sleep(2)

    def next_run(self, dag_id: str, after: str | None, timeout_s: float = 420) -> Run:
        """The first scheduled run with a logical date after `after` (None: the first)."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.check()
            found = [r for r in self.runs(dag_id) if r[1] == "scheduled"
                     and (after is None or r[0] > after)]
            if found:
                return found[0]
            if time.monotonic() >= deadline:
                raise TimeoutError(f"no scheduled run of {dag_id} after {after} in {timeout_s} s")
            time.sleep(0.25)

    def active(self, dag_id: str, run_id: str) -> bool:
        """The run is queued or running."""
        return bool(self.query("SELECT 1 FROM dag_run WHERE dag_id = ? AND run_id = ? AND "
                               "state IN ('queued', 'running')", dag_id, run_id))

    def reached(self, dag_id: str, run_id: str, tasks: tuple[str, ...], state: str,
                timeout_s: float = 420) -> str | None:
        """The first of `tasks` seen in `state` (polled every 0.1 s), or None once they have
        all ended or the run has, or after `timeout_s`: the moment has passed."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.check()
            states = self.task_states(dag_id, run_id)
            found = next((t for t in tasks if states.get(t) == state), None)
            if found is not None:
                return found
            if all(states.get(t) in ENDED for t in tasks) or not self.active(dag_id, run_id):
                return None
            time.sleep(0.1)
        return None

    def log(self, dag_id: str, run_id: str, task_id: str) -> str:
        """Every attempt's log of the task, oldest first."""
        found = sorted((self.paths.airflow / "logs").glob(
            f"dag_id={dag_id}/run_id={run_id}/task_id={task_id}/*.log"))
        return "\n".join(p.read_text(errors="replace") for p in found)

    def errors(self, dag_id: str, run_id: str, task_id: str) -> list[tuple[str, str]]:
        """(type, message) of each exception the task's logs record (every attempt's), as the
        task runner logs a failure: the `error_detail` of a JSON line."""
        found = []
        for line in self.log(dag_id, run_id, task_id).splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                found += [(str(e.get("exc_type")), str(e.get("exc_value")))
                          for e in entry.get("error_detail") or [] if isinstance(e, dict)]
        return found

    def log_tails(self, dag_id: str, run_id: str) -> str:
        found = sorted((self.paths.airflow / "logs").glob(
            f"dag_id={dag_id}/run_id={run_id}/task_id=*/*.log"))
        return "\n".join(f"--- {p.parent.name}\n" + "\n".join(
            p.read_text(errors="replace").splitlines()[-12:]) for p in found)
