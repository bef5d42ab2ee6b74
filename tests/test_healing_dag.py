"""dags/healing.py: one event-driven healing DAG per job whose healing is on, scheduled on the
job's health asset (an AssetWatcher running HealthReportTrigger), one run at a time, the gap wait
before the heal; a thin file; the trigger fires once per pending report."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

os.environ.setdefault("AIRFLOW_HOME", str(Path(__file__).resolve().parents[1] / ".reconf" / "test-airflow"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

ROOT = Path(__file__).resolve().parents[1]
HEAL_FILE = ROOT / "dags" / "healing.py"
JOBS = """
[defaults]
spl = "10m"
[jobs.calm]
[jobs.mend]
[jobs.mend.healing]
enabled = true
min_gap = "3m"
"""


@pytest.fixture()
def jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "jobs.toml"
    config.write_text(JOBS)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    return config


def test_a_healing_dag_for_each_job_with_healing_on(jobs: Path) -> None:
    from airflow.dag_processing.dagbag import DagBag

    from reconf.health_watch import HealthReportTrigger

    bag = DagBag(dag_folder=str(HEAL_FILE))
    assert bag.import_errors == {} and sorted(bag.dag_ids) == ["heal_mend"]  # calm: off
    dag = bag.dags["heal_mend"]
    assert dag.max_active_runs == 1
    (asset,) = dag.timetable.asset_condition.objects  # type: ignore[union-attr]
    assert asset.uri == "reconf://mend/health"
    (watcher,) = asset.watchers
    assert isinstance(watcher.trigger, HealthReportTrigger) and watcher.trigger.job_id == "mend"
    assert {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks} == {
        "wait_for_gap": ["heal"], "heal": []}
    (out,) = dag.get_task("heal").outlets
    assert out.uri == "reconf://mend/assignment"  # a deployer sees the healing version too


def test_the_trigger_fires_once_per_pending_report(jobs: Path, tmp_path: Path) -> None:
    from reconf.health_watch import HealthReportTrigger, done_marker
    from schemas.config import Paths
    from schemas.health import HealthReport, write_report

    landing = Paths.from_env().landing
    first = write_report(landing, HealthReport("mend", "a", datetime.now(UTC), ("n1",)))
    done = write_report(landing, HealthReport("mend", "b", datetime.now(UTC), ("n2",)))
    done_marker(done).touch()  # handled before a triggerer restart: not fired again

    async def two() -> list[dict[str, str]]:
        events, run = [], HealthReportTrigger("mend", poll_s=0.05).run()
        events.append((await run.__anext__()).payload)
        write_report(landing, HealthReport("mend", "c", datetime.now(UTC), ("n3",)))
        events.append((await asyncio.wait_for(run.__anext__(), 5)).payload)
        await run.aclose()  # type: ignore[attr-defined]
        return events

    assert asyncio.run(two()) == [{"job_id": "mend", "report_id": "a"},
                                  {"job_id": "mend", "report_id": "c"}]
    assert first.is_file()


def test_the_healing_dag_file_imports_nothing_heavy(jobs: Path) -> None:
    heavy = ("pyspark", "mlflow", "great_expectations", "pulp", "highspy", "numpy", "pandas",
             "jobs", "placement")
    probe = ("import runpy, sys\nrunpy.run_path(sys.argv[1])\n"
             f"heavy = {heavy!r}\n"
             "print(','.join(m for m in sys.modules if m.split('.')[0] in heavy))")
    done = subprocess.run([sys.executable, "-c", probe, str(HEAL_FILE)], capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == ""
