"""The PostgreSQL option: with RECONF_DB_URI both metadata stores live on a real PostgreSQL.

One real cycle of the tiny job through the DAG (`airflow dags test` after `airflow db migrate`,
both on PostgreSQL), then the MLflow run and the Airflow dag run are read back from the server's
`mlflow` and `airflow` databases, and no SQLite store was created under RECONF_HOME.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg2
import pytest
from pg_kit import PostgresServer, start_postgres
from pipeline_kit import CONFIG, JOB_ID, P1, stamp

from jobs.tracking.store import run_name
from reconf.demo import run_dag
from reconf.settings import airflow_env, ensure_airflow, make_source
from schemas.config import ConfigError, Paths, resolve_job
from schemas.manifest import read_latest_version

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """A fresh PostgreSQL cluster on a free loopback port with databases `airflow` and `mlflow`."""
    server = start_postgres()
    yield server
    server.stop()


def _rows(server: PostgresServer, database: str, sql: str) -> list[tuple[object, ...]]:
    conn = psycopg2.connect(server.dsn(database))
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())
    finally:
        conn.close()


def test_db_uri_must_name_a_postgresql_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for bad in ("sqlite:///x.db", "postgresql://u@h:5432/airflow", "127.0.0.1:5432"):
        monkeypatch.setenv("RECONF_DB_URI", bad)
        with pytest.raises(ConfigError, match="RECONF_DB_URI"):
            _ = Paths(tmp_path).mlflow_uri
    monkeypatch.setenv("RECONF_DB_URI", "postgresql+psycopg2://u@127.0.0.1:5432/")
    assert Paths(tmp_path).mlflow_uri == "postgresql+psycopg2://u@127.0.0.1:5432/mlflow"
    assert airflow_env(Paths(tmp_path))["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].endswith(":5432/airflow")
    monkeypatch.delenv("RECONF_DB_URI")
    assert Paths(tmp_path).mlflow_uri.startswith("sqlite:///")


def test_a_dag_run_on_postgresql(postgres: PostgresServer, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "jobs.toml"
    config.write_text(CONFIG)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RECONF_DB_URI", postgres.server_uri)
    paths = Paths.from_env()
    paths.home.mkdir()
    job = resolve_job(JOB_ID)
    make_source(job, paths).land_period(paths.landing, P1)

    ensure_airflow(paths)  # `airflow db migrate` against PostgreSQL
    run_dag(paths, JOB_ID, P1, tmp_path / "dag.log")

    assert read_latest_version(paths.published, JOB_ID) == 1
    # Airflow's metadata lives in database `airflow`: the run and its tasks succeeded.
    runs = _rows(postgres, "airflow", "SELECT run_id, state FROM dag_run "
                 f"WHERE dag_id = 'reconfigure_{JOB_ID}'")
    assert len(runs) == 1 and runs[0][1] == "success"
    tasks = _rows(postgres, "airflow", "SELECT task_id, state FROM task_instance "
                  f"WHERE dag_id = 'reconfigure_{JOB_ID}' ORDER BY task_id")
    # (missed_period runs only when the landing wait timed out: skipped on a landed period)
    assert tasks == [("collect", "success"), ("missed_period", "skipped"), ("plan", "success"),
                     ("publish", "success"), ("validate", "success"),
                     ("wait_for_landing", "success"), ("whatif", "success")]
    # MLflow's store is database `mlflow`: the cycle's run, tagged with that Airflow run.
    mlflow_runs = _rows(postgres, "mlflow", "SELECT run_uuid, name FROM runs WHERE run_uuid NOT IN "
                        "(SELECT run_uuid FROM tags WHERE key = 'mlflow.parentRunId')")
    assert [name for _, name in mlflow_runs] == [run_name(stamp(P1))]
    tags = {str(k): str(v) for k, v in _rows(postgres, "mlflow", "SELECT key, value FROM tags "
                                              f"WHERE run_uuid = '{mlflow_runs[0][0]}'")}
    assert tags["reconf.airflow_run_id"] == runs[0][0]
    assert tags["reconf.assignment_version"] == "1"
    # The same run through MLflow's client, and no SQLite store appeared beside the stores.
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    experiment = client.get_experiment_by_name(JOB_ID)
    assert experiment is not None
    cycles = [r.info.run_id for r in client.search_runs([experiment.experiment_id])
              if "mlflow.parentRunId" not in r.data.tags]  # not the what-if's child runs
    assert cycles == [mlflow_runs[0][0]]
    assert {a.path for a in client.list_artifacts(str(mlflow_runs[0][0]))} >= {"plan.json", "moves.csv"}
    assert not (paths.airflow / "airflow.db").exists()
    assert not (paths.mlflow / "mlflow.db").exists()
