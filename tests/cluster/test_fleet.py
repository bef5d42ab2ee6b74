"""Fleet planning (`reconf fleet`) records exactly what the per-job path records.

Two homes hold the same collected stats of three tiny jobs (two MILP, one greedy); one is
planned job by job (`jobs.plan.stage.plan_period`), the other at once on Spark (`jobs.plan.fleet`,
applyInPandas on the session's local[2] executors). Their plans and plan_moves rows must be
equal, and each job must get one MLflow run for the period (a rerun is a new attempt beside it:
record_plan is the per-job path's own code; tests/jobs/test_published_record.py re-plans a
published period with `reconf fleet`).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pandas.testing import assert_frame_equal
from pipeline_kit import P1, snapshot

from cluster.fleet_kit import (
    JOB_IDS,
    land_all,
    plan_json_stable,
    runs_by_job,
    sorted_rows,
    write_config,
)
from jobs.tracking.store import run_name
from schemas.config import Paths, load_jobs
from schemas.landing import format_period_end

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.fixture
def two_homes(spark: SparkSession, home: Paths, tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch) -> tuple[Paths, Paths, Path]:
    """(per-job home, fleet home, config): both with P1 of the three jobs collected and validated."""
    from jobs.collect.stage import collect
    from jobs.validate.stage import validate_period

    config = write_config(tmp_path)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    land_all(home, P1, config)
    for job in load_jobs(config).values():
        collect(job, P1, paths=home, spark=spark)
        validate_period(job, P1, paths=home, spark=spark)
    fleet_home = Paths(tmp_path / "fleet-home")
    shutil.copytree(home.home, fleet_home.home)
    return home, fleet_home, config


def test_fleet_plans_equal_per_job_plans(spark: SparkSession,
                                         two_homes: tuple[Paths, Paths, Path]) -> None:
    from jobs.plan.fleet import run_fleet
    from jobs.plan.stage import plan_period

    per_job, fleet_home, config = two_homes
    for job in load_jobs(config).values():
        plan_period(job, P1, paths=per_job, spark=spark)
    result = run_fleet(P1, paths=fleet_home, spark=spark)

    assert sorted(r.job_id for r in result.planned) == sorted(JOB_IDS)
    assert not result.failed and not result.skipped
    assert sum(r.plan.migrations for r in result.planned) > 0  # the jobs do get moves
    for table in ("plans", "plan_moves"):
        expected, got = sorted_rows(spark, per_job, table), sorted_rows(spark, fleet_home, table)
        assert len(got) > 0
        assert_frame_equal(got, expected, check_exact=True, obj=table)
    assert plan_json_stable(spark, fleet_home) == plan_json_stable(spark, per_job)

    runs = runs_by_job(fleet_home, P1)
    assert {j: len(r) for j, r in runs.items()} == {j: 1 for j in JOB_IDS}
    for job_id, (run,) in runs.items():
        assert run.info.run_name == run_name(format_period_end(P1))  # the experiment is the job's
        assert run.data.tags["reconf.job_id"] == job_id
        assert run.data.tags["reconf.planned_by"] == "fleet"
        assert "moves.csv" in {a.path for a in _artifacts(fleet_home, run.info.run_id)}
    per_job_runs = runs_by_job(per_job, P1)
    for job_id in JOB_IDS:
        ours, theirs = runs[job_id][0].data.metrics, per_job_runs[job_id][0].data.metrics
        ours.pop("solve_time_s"), theirs.pop("solve_time_s")
        assert ours == theirs, job_id



def test_fleet_bad_input_writes_nothing(spark: SparkSession, home: Paths, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from reconf.cli import main

    monkeypatch.setenv("RECONF_CONFIG", str(write_config(tmp_path)))
    before = snapshot(home)
    stamp = format_period_end(P1)
    assert main(["fleet", "--jobs", "fa,nope", "--period-end", stamp]) == 2
    assert "nope" in capsys.readouterr().err
    # Nothing was collected: with --jobs every named job must have stats for the period...
    assert main(["fleet", "--jobs", "fa", "--period-end", stamp]) == 2
    err = capsys.readouterr().err
    assert "no statistics collected" in err and "reconf collect --job fa" in err
    # ...and without it, at least one job must.
    assert main(["fleet", "--period-end", stamp]) == 2
    assert "no statistics collected" in capsys.readouterr().err
    assert main(["fleet", "--strategy", "bogus", "--period-end", stamp]) == 2
    assert "unknown strategy" in capsys.readouterr().err
    assert snapshot(home) == before
    assert runs_by_job(home, P1) == {j: [] for j in JOB_IDS}


def _artifacts(paths: Paths, run_id: str) -> list[Any]:
    from mlflow import MlflowClient

    return list(MlflowClient(tracking_uri=paths.mlflow_uri).list_artifacts(run_id))
