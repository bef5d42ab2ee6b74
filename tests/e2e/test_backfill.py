"""Backfills through the real scheduler: idempotent, historical, and LATEST never moves back.

The tiny job runs forward for P2 (in-process stages: version 1, LATEST = 1). Then
the local services come up as `make up` starts them (api-server, scheduler, dag-processor; with
the scheduler's own schedule off so that only the backfills run) and the operator's recipe of
docs/operations.md runs `airflow backfill create` twice for the earlier period P1: first
`--reprocess-behavior failed` (fill the range), then `completed` (redo every date of it). P1 is
older than every published version, so its plan is historical. After each backfill the Delta
tables, the MLflow runs, the published versions and LATEST are read back: the second backfill
recomputes (new Delta table versions) and adds no stats rows; its plan is a second attempt of the
period (its own plan row and MLflow run, also historical) and the first attempt's run is untouched.
(Redoing an already published period is `already_published`: tests/jobs/test_cycle.py.)

Each DAG run through the scheduler is five task processes (their lake reads and writes by
delta-rs: no JVM of their own), hence two runs; the publish rules themselves are unit-tested in
tests/jobs/test_publish_rules.py.
"""

from __future__ import annotations

import sqlite3
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pipeline_kit import CONFIG, JOB_ID, P1, P2, run_cycle, stamp, tree

from jobs.tracking.store import run_name
from reconf.services import Ports, down, up
from reconf.settings import airflow_bin, airflow_env, make_source
from schemas.config import Paths, resolve_job
from schemas.manifest import read_latest_version
from schemas.tables import TABLES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

DAG_ID = f"reconfigure_{JOB_ID}"
ROWS_PER_PERIOD = {"keygroup_stats": 8}  # the tiny job: 2 operators x 4 key groups


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _airflow(paths: Paths, *args: str) -> str:
    done = subprocess.run([airflow_bin(), *args], env=airflow_env(paths), capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, f"airflow {' '.join(args)}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout


def _query(paths: Paths, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{paths.airflow / 'airflow.db'}?mode=ro", uri=True, timeout=30)
    try:
        return list(conn.execute(sql, params).fetchall())
    finally:
        conn.close()


def _task_log_tail(paths: Paths, run_id: str) -> str:
    logs = sorted((paths.airflow / "logs").glob(f"dag_id={DAG_ID}/run_id={run_id}/task_id=*/*.log"))
    return "\n".join(f"--- {p}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-15:])
                     for p in logs[-2:])


def _backfill(paths: Paths, start: datetime, end: datetime, reprocess: str,
              timeout_s: float = 1200) -> dict[str, str]:
    """Create a backfill of [start, end] (the recipe's command), wait until the scheduler has
    run it; {logical date: run_id} of its runs, every one of which succeeded.

    Run = each of its runs ended after the backfill was created (`backfill create` creates or
    clears them all at once). The backfill itself is marked completed later, by a 30 s timer of
    the scheduler, and Airflow refuses a new backfill of the DAG until then: so that wait comes
    before the next create, and overlaps the checks in between."""
    deadline = time.monotonic() + timeout_s
    while _query(paths, "SELECT id FROM backfill WHERE dag_id = ? AND completed_at IS NULL", DAG_ID):
        assert time.monotonic() < deadline, "the previous backfill was never marked completed"
        time.sleep(2)
    _airflow(paths, "backfill", "create", "--dag-id", DAG_ID, "--from-date", start.isoformat(),
             "--to-date", end.isoformat(), "--reprocess-behavior", reprocess,
             "--max-active-runs", "1")
    backfill_id, created = _query(
        paths, "SELECT id, created_at FROM backfill WHERE dag_id = ? ORDER BY id DESC LIMIT 1", DAG_ID)[0]
    dates = (end - start) // resolve_job(JOB_ID).spl + 1
    while True:
        runs = _query(paths, "SELECT logical_date, run_id, state, end_date FROM dag_run "
                             "WHERE backfill_id = ?", backfill_id)
        if len(runs) == dates and all(state in ("success", "failed") and ended and ended > created
                                      for _, _, state, ended in runs):
            break
        assert time.monotonic() < deadline, f"backfill {backfill_id} not done after {timeout_s} s: {runs}"
        time.sleep(2)
    for _, run_id, state, _ in runs:
        assert state == "success", f"{run_id} ended {state}:\n{_task_log_tail(paths, run_id)}"
    return {_key(logical): run_id for logical, run_id, _, _ in runs}


def _key(logical_date: object) -> str:
    """A logical date as `YYYY-MM-DD HH:MM:SS` (how SQLite returns it, and str(datetime))."""
    return str(logical_date)[:19].replace("T", " ")


def _counts(spark: SparkSession, paths: Paths) -> dict[str, int]:
    return {name: spark.read.format("delta").load(paths.table(name)).count() for name in TABLES}


def _versions(spark: SparkSession, paths: Paths) -> dict[str, int]:
    from delta.tables import DeltaTable

    versions = {}
    for name in TABLES:
        last = DeltaTable.forPath(spark, paths.table(name)).history(1).first()
        assert last is not None, name
        versions[name] = int(last["version"])
    return versions


def _plan_status(spark: SparkSession, paths: Paths) -> dict[str, str]:
    rows = spark.read.format("delta").load(paths.table("plans")).collect()
    return {r["period_end"].strftime("%Y-%m-%dT%H:%M:%SZ"): r["status"] for r in rows}


def _mlflow_runs(paths: Paths) -> dict[str, Any]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    experiment = client.get_experiment_by_name(JOB_ID)
    assert experiment is not None
    return {r.info.run_name: r for r in client.search_runs(  # cycle runs, not what-if children
        [experiment.experiment_id], filter_string=f"tags.`reconf.job_id` = '{JOB_ID}'")}


@pytest.fixture()
def forward(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spark: SparkSession) -> Iterator[Paths]:
    """P1 and P2 landed; P2 reconfigured forward (v1); the services up; down at the end."""
    config = tmp_path / "jobs.toml"
    config.write_text(CONFIG)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RECONF_DB_URI", raising=False)
    # The scheduler's own schedule off: the only runs are the backfill's (no run for "now").
    monkeypatch.setenv("AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE", "False")
    monkeypatch.setenv("AIRFLOW__CORE__PARALLELISM", "2")
    paths = Paths.from_env()
    paths.home.mkdir()
    source = make_source(resolve_job(JOB_ID), paths)
    for period_end in (P1, P2):
        source.land_period(paths.landing, period_end)
    run_cycle(JOB_ID, P2)
    assert read_latest_version(paths.published, JOB_ID) == 1
    up(paths, Ports(airflow=_free_port(), mlflow=_free_port()),
       names=("api-server", "scheduler", "dag-processor"), timeout_s=600)
    try:
        yield paths
    finally:
        down(paths, grace_s=30)


def test_backfill_twice_is_idempotent_historical_and_never_moves_latest(
    forward: Paths, spark: SparkSession
) -> None:
    paths = forward
    # The recipe: wait until the DAG is parsed, make sure it is not paused, then backfill.
    deadline = time.monotonic() + 300
    while not _query(paths, "SELECT 1 FROM dag WHERE dag_id = ?", DAG_ID):
        assert time.monotonic() < deadline, "the dag-processor never parsed the DAG"
        time.sleep(3)
    _airflow(paths, "dags", "unpause", DAG_ID)
    published = tree(paths.published)
    before = _counts(spark, paths)
    assert before["keygroup_stats"] == ROWS_PER_PERIOD["keygroup_stats"]

    # "failed" fills the range (new runs for missing dates, reruns of failed ones), "completed"
    # redoes every date of it.
    first = _backfill(paths, P1, P1, "failed")

    assert sorted(first) == [_key(P1)]
    after_first = _counts(spark, paths)
    assert after_first["keygroup_stats"] == 2 * ROWS_PER_PERIOD["keygroup_stats"]  # P1 added
    assert after_first["assignment_versions"] == before["assignment_versions"] == 1
    assert after_first["plans"] == 2
    assert _plan_status(spark, paths) == {stamp(P1): "historical", stamp(P2): "published"}
    assert read_latest_version(paths.published, JOB_ID) == 1
    assert tree(paths.published) == published  # no new manifest, LATEST untouched
    runs = _mlflow_runs(paths)
    assert sorted(runs) == [run_name(stamp(p)) for p in (P1, P2)]
    p1_run = runs[run_name(stamp(P1))]
    assert p1_run.data.tags["reconf.airflow_run_id"] == first[_key(P1)]
    assert "reconf.assignment_version" not in p1_run.data.tags  # historical: nothing published
    assert p1_run.data.tags["reconf.publish_status"] == "historical"
    assert runs[run_name(stamp(P2))].data.tags["reconf.publish_status"] == "published"
    versions_first = _versions(spark, paths)

    second = _backfill(paths, P1, P1, "completed")  # redo the range

    assert second == first  # the same Airflow run, cleared and run again
    counted = _counts(spark, paths)
    assert counted["plans"] == after_first["plans"] + 1  # a second attempt of P1 (jobs/plan/attempts.py)
    assert {t: n for t, n in counted.items() if t not in ("plans", "plan_moves")} == {
        t: n for t, n in after_first.items() if t not in ("plans", "plan_moves")}  # no stats added
    recomputed = _versions(spark, paths)
    assert recomputed["keygroup_stats"] == versions_first["keygroup_stats"] + 1  # recollected
    assert recomputed["plans"] > versions_first["plans"]  # replanned
    assert _plan_status(spark, paths) == {stamp(P1): "historical", stamp(P2): "published"}
    assert read_latest_version(paths.published, JOB_ID) == 1
    assert tree(paths.published) == published  # still v1; LATEST never moved
    again = _mlflow_runs(paths)
    redo = f"{run_name(stamp(P1))} #2"
    assert set(again) == {*runs, redo}  # the redo is a new attempt with its own run ...
    assert {name: (r.info.run_id, r.data.tags) for name, r in again.items() if name in runs} == {
        name: (r.info.run_id, r.data.tags) for name, r in runs.items()}  # ... the others untouched
    p1_tags = again[redo].data.tags
    assert p1_tags["reconf.delta.keygroup_stats.version"] != p1_run.data.tags[
        "reconf.delta.keygroup_stats.version"]  # the rerun read the recollected stats
    assert "reconf.assignment_version" not in p1_tags
    assert p1_tags["reconf.publish_status"] == "historical"
