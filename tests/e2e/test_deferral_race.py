"""A landing at the very moment `wait_for_landing` defers, through the real scheduler.

Airflow 3.3 fails a deferred task whose trigger fires before the scheduler has read the exit of
the process that deferred it, once the resumed attempt is queued or running ("finished with
state success, but the task instance's state attribute is queued"; apache/airflow issues 67287,
72716). A runtime lands whenever it lands, so the landing wait must be safe at any moment: its
trigger ends the task itself (reconf/landing_wait.py), no resumed attempt, nothing to race.

Its own Airflow (api-server, scheduler, dag-processor, triggerer; SQLite; free ports:
scheduler_kit.started_airflow; not the shared one, whose scheduler must not be slowed) and one
job, `race`, SPL 1 day with a landing timeout of days, on a grid with no period end within hours
of the Airflow's start (scheduler_kit.quiet_start: no scheduled run of its own between the
test's steps): the test triggers its last three ended periods one after another. Each period
is landed beforehand but for its `_SUCCESS` marker, which the test puts back the moment the
wait logs that it defers (after it looked for the marker, before the deferring process has even
exited), so the trigger fires on its first look; the scheduler sleeps up to 4 s between idle
loops (a busy scheduler's pace), so it reads the deferring process's exit only after the
trigger fired. Every run must succeed and publish, in order.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reconf.settings import make_source
from schemas.config import resolve_job
from schemas.landing import SUCCESS_MARKER, format_period_end
from schemas.manifest import atomic_write_bytes, read_latest_version, read_manifest

from .scheduler_kit import DAY, Airflow, Runtime, _stamp, quiet_start, started_airflow

pytestmark = [pytest.mark.e2e]

RACE, DAG_ID, ROUNDS = "race", "reconfigure_race", 3
CONFIG = """\
[defaults]
strategy = "greedy"
max_migrations = 3
shadow_strategies = []
shadow_time_budget_s = 0
source = {{ kind = "synthetic", operators = 2, keygroups_per_operator = 4, nodes = 3, seed = 7, varies = 30 }}

[jobs.race]
spl = "1d"
start_date = {start}
catchup_periods = 0
landing_timeout = "4d"
"""


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Airflow]:
    started = datetime.now(UTC)
    start = quiet_start(started)
    # a busy scheduler: seconds between its loops, as on two loaded cores, so the trigger fires
    # before it has read the deferring process's exit
    with started_airflow(tmp_path_factory.mktemp("race"), CONFIG.format(start=_stamp(start)),
                         {"AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "4"}) as (paths, env):
        handle = Airflow(paths, env, Runtime(paths, start), started)
        handle.wait_for_dags([DAG_ID])
        yield handle


def _stage(airflow: Airflow, at: datetime) -> tuple[Path, bytes]:
    """Land period `at` as the runtime would (after applying the newest version), all but its
    `_SUCCESS` marker: the marker and its bytes, to put back at the moment that matters."""
    source = make_source(resolve_job(RACE), airflow.paths)
    source.apply_latest(airflow.paths.published)
    marker = source.land_period(airflow.paths.landing, at) / SUCCESS_MARKER
    body = marker.read_bytes()
    marker.unlink()
    return marker, body


def _land_when_deferred(airflow: Airflow, run_id: str, marker: Path, body: bytes,
                        timeout_s: float = 300) -> None:
    """Put the marker back at the deferral: as soon as the task logs that it defers (its last
    line before asking Airflow to defer, after it looked for the marker), or the metadata DB
    shows it `deferred`, whichever the test sees first (both polled every 20 ms)."""
    db = f"file:{airflow.paths.airflow / 'airflow.db'}?mode=ro"
    logs = airflow.paths.airflow / "logs" / f"dag_id={DAG_ID}" / f"run_id={run_id}" / \
        "task_id=wait_for_landing"
    deadline = time.monotonic() + timeout_s
    while not any("deferred to the triggerer" in log.read_text(errors="replace")
                  for log in logs.glob("attempt=*.log")):
        conn = sqlite3.connect(db, uri=True, timeout=60)
        try:
            row = conn.execute("SELECT state FROM task_instance WHERE dag_id = ? AND run_id = ? "
                               "AND task_id = 'wait_for_landing'", (DAG_ID, run_id)).fetchone()
        except sqlite3.OperationalError:  # the scheduler holds a write lock: look again
            row = None
        finally:
            conn.close()
        if row is not None and row[0] == "deferred":
            break
        assert row is None or row[0] in ("None", None, "scheduled", "queued", "running"), \
            (row, airflow.log(DAG_ID, run_id, "wait_for_landing"))
        assert time.monotonic() < deadline, (row, airflow.runs(DAG_ID))
        time.sleep(0.02)
    atomic_write_bytes(marker, body)


def _lead(airflow: Airflow, run_id: str) -> float | None:
    """Seconds by which the trigger fired before the scheduler read the deferring process's
    exit (> 0: the moment the race is about), from the trigger's and the scheduler's logs."""
    logs = airflow.paths.airflow / "logs" / f"dag_id={DAG_ID}" / f"run_id={run_id}" / \
        "task_id=wait_for_landing"
    fired = [json.loads(line)["timestamp"] for log in logs.glob("*trigger*.log")
             for line in log.read_text(errors="replace").splitlines()
             if '"Trigger fired event"' in line]
    key = f"task_id='wait_for_landing', run_id='{run_id}'"
    read = [line.split()[0] for line in (airflow.paths.home / "logs" / "services" /
                                         "scheduler.log").read_text(errors="replace").splitlines()
            if "Received executor event with state success" in line and key in line]
    if not fired or not read:
        return None
    return (datetime.fromisoformat(read[0]) - datetime.fromisoformat(fired[0])).total_seconds()


def test_a_landing_at_the_moment_of_deferral_never_fails_the_wait(airflow: Airflow) -> None:
    last = 9  # quiet_start's newest ended period
    periods = [quiet_start(airflow.started) + k * DAY for k in range(last - ROUNDS + 1, last + 1)]
    airflow.shell(f"airflow dags unpause {DAG_ID}")
    leads: list[float | None] = []
    for version, at in enumerate(periods, start=1):
        marker, body = _stage(airflow, at)
        airflow.shell(f"airflow dags trigger {DAG_ID} --logical-date {at.isoformat()}")
        deadline = time.monotonic() + 120
        while (run := airflow.run_of(DAG_ID, at)) is None:
            assert time.monotonic() < deadline, airflow.runs(DAG_ID)
            time.sleep(0.2)
        _land_when_deferred(airflow, run[3], marker, body)
        done = airflow.wait_for_run(DAG_ID, at, ("success", "failed"))
        states = airflow.task_states(DAG_ID, done[3])
        assert done[2] == "success" and states["wait_for_landing"] == "success", (
            version, states, airflow.log_tails(DAG_ID, done[3]))
        assert read_manifest(airflow.paths.published, RACE, version).period_end == \
            format_period_end(at)
        leads.append(_lead(airflow, done[3]))
    print(f"trigger fired ahead of the scheduler reading the exit by (s): {leads}")
    assert read_latest_version(airflow.paths.published, RACE) == ROUNDS
    scheduler = (airflow.paths.home / "logs" / "services" / "scheduler.log").read_text(
        errors="replace")
    assert "but the task instance's state attribute is" not in scheduler
    airflow.assert_quiet(DAG_ID)
