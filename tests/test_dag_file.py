"""The DAG file: one DAG per configured job, the right shape, and no work at import time."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

# Airflow reads its home when first imported; never let a test touch ~/airflow.
os.environ.setdefault("AIRFLOW_HOME", str(Path(__file__).resolve().parents[1] / ".reconf" / "test-airflow"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

ROOT = Path(__file__).resolve().parents[1]
DAG_FILE = ROOT / "dags" / "reconfigure.py"

TWO_JOBS = """
[defaults]
spl = "10m"
[jobs.alpha]
source = { kind = "synthetic", nodes = 2, operators = 1, keygroups_per_operator = 4 }
[jobs.beta]
spl = "1h"
max_migrations = 2
source = { kind = "synthetic" }
"""


@pytest.fixture()
def two_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "jobs.toml"
    config.write_text(TWO_JOBS)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    return config


def test_one_dag_per_job_with_schedule_and_order(two_jobs: Path) -> None:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAG_FILE))
    assert bag.import_errors == {}
    assert sorted(bag.dag_ids) == ["reconfigure_alpha", "reconfigure_beta"]
    alpha, beta = bag.dags["reconfigure_alpha"], bag.dags["reconfigure_beta"]
    assert alpha.max_active_runs == 1 and beta.max_active_runs == 1
    assert alpha.schedule == timedelta(minutes=10)  # schedule = the job SPL
    assert beta.schedule == timedelta(hours=1)
    assert alpha.catchup is False
    order = {t.task_id: sorted(t.downstream_task_ids) for t in alpha.tasks}
    assert order == {"collect": ["validate"], "validate": ["plan"], "plan": ["publish"], "publish": []}
    assert alpha.default_args["execution_timeout"] >= timedelta(minutes=10)


def test_dag_file_imports_nothing_heavy(two_jobs: Path) -> None:
    heavy = ("pyspark", "mlflow", "great_expectations", "pulp", "pandas", "placement", "jobs")
    probe = (
        "import runpy, sys; runpy.run_path(sys.argv[1]); "
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(DAG_FILE)],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_bad_config_is_an_import_error_naming_file_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.dag_processing.dagbag import DagBag

    config = tmp_path / "jobs.toml"
    config.write_text('[jobs.bad]\nspl = "-5m"\n')
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    bag = DagBag(dag_folder=str(DAG_FILE))
    assert bag.dag_ids == []
    (message,) = bag.import_errors.values()
    assert str(config) in message and "jobs.bad.spl" in message
