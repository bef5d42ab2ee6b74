"""A rollback or a healing is a version of its own, never an attempt of the period whose
statistics it was planned on: its plan id and MLflow run name it by its version, its run says
published (never "not published"), the period's audit stays on the period's own plan and lists
them as versions of their own (`reconf audit --version N` audits each), and the period's own
published version stays the one its reruns and re-plans are measured against."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from mlflow import MlflowClient
from pipeline_kit import CONFIG, JOB_ID, P1, P2, land, latest, of_period, rows, stamp

from jobs.heal.stage import heal
from jobs.lake import open_lake
from jobs.run import run_collect, run_plan, run_publish, run_validate
from reconf.cli import main
from schemas.config import resolve_job
from schemas.health import HealthReport
from schemas.manifest import read_manifest
from schemas.tables import PLANS
from schemas.tracking import Tag

pytestmark = pytest.mark.spark

HEALING = f"""
[jobs.{JOB_ID}.healing]
enabled = true
budget = 8
min_gap = "1s"
max_nodes_at_once = 1
"""


def test_rollbacks_and_healings_are_versions_of_their_own(
        home, spark, capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = home
    config = tmp_path / "healing.toml"
    config.write_text(CONFIG + HEALING)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    for period_end in (P1, P2):
        land(paths, period_end)
        run_collect(JOB_ID, period_end)
        run_validate(JOB_ID, period_end)
        run_plan(JOB_ID, period_end)
        run_publish(JOB_ID, period_end)
    own = read_manifest(paths.published, JOB_ID, 2).plan_id
    assert main(["rollback", "--job", JOB_ID, "--to-version", "1", "--reason", "r1",
                 "--override-budget", "test"]) == 0
    assert main(["rollback", "--job", JOB_ID, "--to-version", "2", "--reason", "r2",
                 "--override-budget", "test"]) == 0
    v4 = read_manifest(paths.published, JOB_ID, 4)
    dead = sorted(set(v4.assignment.values()))[0]
    healed = heal(resolve_job(JOB_ID), HealthReport(JOB_ID, "dead-x", datetime.now(UTC),
                                                    (dead,)), paths=paths)
    assert healed.status == "published" and healed.version == 5, healed.summary()
    assert latest(paths) == "5\n"
    capsys.readouterr()

    # each version's plan and run name it by its version, and say published, never "not"
    client = MlflowClient(paths.mlflow_uri)
    experiment = client.get_experiment_by_name(JOB_ID)
    assert experiment is not None
    for version, kind in ((3, "rollback"), (4, "rollback"), (5, "healing")):
        manifest = read_manifest(paths.published, JOB_ID, version)
        assert manifest.plan_id.endswith(f"#{kind}-v{version}"), manifest.plan_id
        run = next(r for r in client.search_runs([experiment.experiment_id])
                   if r.data.tags.get(Tag.PLAN_ID) == manifest.plan_id)
        assert run.data.tags[Tag.PUBLISH_STATUS] == "published"
        assert run.data.tags[Tag.ASSIGNMENT_VERSION] == str(version)
        assert "not published" not in run.info.run_name, run.info.run_name
        assert f"v{version}" in run.info.run_name or kind == "healing"
    # the period's plans: its own published plan, and the versions of their own
    period_rows = rows(spark, paths, PLANS.name, of_period(P2))
    published = sorted(period_rows[period_rows["status"] == "published"]["plan_id"])
    assert [p for p in published if "#" not in p] == [own]
    assert sorted(p.rsplit("#", 1)[1] for p in published if "#" in p) == [
        "healing-v5", "rollback-v3", "rollback-v4"]
    mine = open_lake(paths, spark).period_version(JOB_ID, P2)
    assert mine is not None and mine["version"] == 2

    # the period's audit: its own plan, first and published; the others as versions
    assert main(["audit", "--job", JOB_ID, "--period-end", stamp(P2)]) == 0
    shown = capsys.readouterr().out
    first = shown.splitlines()[0]
    assert f"plan {own}," in first and "not published" not in first, first
    assert "published: assignment v2" in shown and "assignment v3" not in shown.split(
        "version of its own")[0]
    assert "version of its own: v3 (rollback" in shown and "`--version 3`" in shown
    assert "version of its own: v5 (healing" in shown
    # a version of its own, audited by its number
    assert main(["audit", "--job", JOB_ID, "--version", "3"]) == 0
    shown = capsys.readouterr().out
    assert "rollback to v1: r1" in shown and "published: assignment v3" in shown
    assert "not published" not in shown.splitlines()[0]

    # the period's reruns are measured against its own version, never a rollback's
    assert run_publish(JOB_ID, P2).version == 2
    again = run_plan(JOB_ID, P2)
    assert again.published_as == (2, own)
