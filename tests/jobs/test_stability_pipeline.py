"""Stable plans through the real stages (Spark, Delta, MLflow): the plan stage reads the
published moves from the lake, keeps a unit from moving back within the cooldown, holds still
inside the no-op band, logs the oscillation count to MLflow, and `reconf audit` shows it."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest
from mlflow import MlflowClient
from pipeline_kit import JOB_ID, P1, P2

from jobs.lake import open_lake
from jobs.plan.stage import plan_period
from jobs.publish.stage import publish_period
from reconf.cli import main
from schemas.config import Paths, StabilityConfig, resolve_job

pytestmark = pytest.mark.spark


def test_cooldown_band_and_oscillations_through_plan_publish_and_audit(
        collected_template, config_file, spark, tmp_path, monkeypatch, capsys) -> None:
    home = tmp_path / "home"
    shutil.copytree(collected_template, home)
    paths = Paths(home)
    job = replace(resolve_job(JOB_ID, config_file),
                  stability=StabilityConfig(cooldown_periods=2, window_periods=3))
    first = plan_period(job, P1, paths=paths, spark=spark)
    publish_period(job, P1, paths=paths, spark=spark)
    history = open_lake(paths, spark).published_moves(JOB_ID, P2, 2)
    assert history == [[(m.keygroup, m.src, m.dst) for m in first.plan.moves]]
    assert first.plan.moves  # the tiny job's first period is unbalanced
    left = {(k, src) for k, src, _ in history[0]}
    second = plan_period(job, P2, paths=paths, spark=spark)
    assert not [m for m in second.plan.moves if (m.keygroup, m.dst) in left]
    assert second.plan.facet_metrics["oscillations"] == 0.0
    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    assert second.mlflow_run_id is not None
    metrics = client.get_run(second.mlflow_run_id).data.metrics
    assert metrics["oscillations_after"] == 0.0 and metrics["oscillations_before"] == 0.0
    still = plan_period(replace(job, stability=StabilityConfig(band=1e9)), P2, paths=paths,
                        spark=spark, dry_run=True)
    assert still.plan.moves == () and "no-op band" in still.plan.message
    monkeypatch.setenv("RECONF_HOME", str(home))
    monkeypatch.setenv("RECONF_CONFIG", str(config_file))
    assert main(["audit", "--job", JOB_ID, "--period-end", P2.strftime("%Y-%m-%dT%H:%M:%SZ")]) == 0
    out = capsys.readouterr().out
    assert "oscillations (units moved back onto a node they left, in the window): 0 -> 0" in out
    # fleet planning applies the same policy (jobs/plan/fleet.py), read from the config file
    from jobs.plan.fleet import run_fleet
    steady_config = tmp_path / "jobs.toml"
    steady_config.write_text(config_file.read_text()
                             + f"\n[jobs.{JOB_ID}.stability]\ncooldown_periods = 2\n")
    monkeypatch.setenv("RECONF_CONFIG", str(steady_config))
    fleet = run_fleet(P2, job_ids=[JOB_ID], dry_run=True, paths=paths, spark=spark)
    (planned,) = fleet.planned
    assert not [m for m in planned.plan.moves if (m.keygroup, m.dst) in left]
    assert planned.plan.facet_metrics["oscillations"] == 0.0
