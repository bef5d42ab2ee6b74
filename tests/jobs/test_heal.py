"""Healing between periods, in-process on the real lake and MLflow (jobs/heal/stage.py): a dead
node's units re-placed as a published version N+1 that terminates it; the same report heals once;
a second report inside min_gap is refused until the gap passed; a report beyond the cap alerts
(lake row, MLflow run) and changes nothing; a job with healing off is refused. The scheduler's
event-driven runs of the same stage: tests/e2e/test_scheduler.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from mlflow import MlflowClient
from pipeline_kit import CONFIG, JOB_ID, P1, latest

from jobs.errors import StageError
from jobs.heal.stage import heal
from jobs.lake import open_lake
from jobs.run import run_plan, run_publish
from reconf.cli import main
from schemas.config import JobConfig, Paths, resolve_job
from schemas.health import HealthReport, health_dir, write_report
from schemas.manifest import Manifest, read_manifest
from schemas.tables import HEALINGS, PLANS
from schemas.tracking import Tag

pytestmark = pytest.mark.spark

HEALING = f"""
[jobs.{JOB_ID}.healing]
enabled = true
budget = 8
min_gap = "10m"
max_nodes_at_once = 1
"""


def _healing_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> JobConfig:
    """The tiny job with healing on (HEALING), as the stages read it from RECONF_CONFIG."""
    config = tmp_path / "healing.toml"
    config.write_text(CONFIG + HEALING)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    return resolve_job(JOB_ID)


def _published_v1(paths: Paths) -> Manifest:
    """P1 planned and published: the v1 every healing starts from."""
    run_plan(JOB_ID, P1)
    run_publish(JOB_ID, P1)
    return read_manifest(paths.published, JOB_ID, 1)


def test_a_dead_node_heals_once_waits_for_the_gap_and_a_wide_failure_alerts(
        collected_home, spark, capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = collected_home
    job = _healing_on(tmp_path, monkeypatch)
    with pytest.raises(StageError, match="healing is off"):  # the session's job: healing off
        heal(_off(job), HealthReport(JOB_ID, "r0", datetime.now(UTC), ("node-02",)), paths=paths)
    run_plan(JOB_ID, P1)
    run_publish(JOB_ID, P1)
    v1 = read_manifest(paths.published, JOB_ID, 1)
    dead = max(sorted(set(v1.assignment.values())),
               key=lambda n: sum(1 for m in v1.assignment.values() if m == n))
    at = datetime.now(UTC)
    report = HealthReport(JOB_ID, "dead-1", at, (dead,))
    first = heal(job, report, paths=paths)
    assert first.status == "published" and first.version == 2, first.summary()
    v2 = read_manifest(paths.published, JOB_ID, 2)
    assert dead not in v2.assignment.values() and v2.scaling.nodes_to_terminate == (dead,)
    assert latest(paths) == "2\n"
    moved = {k for k, n in v1.assignment.items() if n == dead}
    assert {k for k in v1.assignment if v1.assignment[k] != v2.assignment[k]} >= moved
    tags = MlflowClient(paths.mlflow_uri).get_run(str(first.mlflow_run_id)).data.tags
    assert tags[Tag.HEALING_STATUS] == "published" and tags[Tag.PUBLISHED_VERSION] == "2"
    assert tags[Tag.HEALING_NODES] == dead and "healing v2 dead-1" in tags["mlflow.runName"]

    again = heal(job, report, paths=paths)  # the same finding: its recorded outcome, no v3
    assert again.again and again.version == 2 and again.heal_id == first.heal_id
    assert latest(paths) == "2\n"

    other = next(n for n in sorted(set(v2.assignment.values())))
    second = HealthReport(JOB_ID, "dead-2", at + timedelta(seconds=30), (other,))
    with pytest.raises(StageError, match="less than min_gap"):
        heal(job, second, paths=paths, now=at + timedelta(minutes=1))
    assert latest(paths) == "2\n"

    wide = HealthReport(JOB_ID, "wide", at, (), {"node-00": 2.0, "node-01": 1.9})
    alert = heal(job, wide, paths=paths, now=at + timedelta(minutes=11))
    assert alert.status == "alert" and "max_nodes_at_once = 1" in alert.message
    assert latest(paths) == "2\n"
    alert_tags = MlflowClient(paths.mlflow_uri).get_run(str(alert.mlflow_run_id)).data.tags
    assert alert_tags[Tag.HEALING_STATUS] == "alert" and "nothing was done" in alert_tags[Tag.NOTE]

    later = heal(job, second, paths=paths, now=at + timedelta(minutes=11))  # the gap passed
    assert later.status == "published" and later.version == 3
    v3 = read_manifest(paths.published, JOB_ID, 3)
    assert not {other, dead} & set(v3.assignment.values())  # the first dead node stays out
    assert set(v3.scaling.nodes_to_terminate) == {other, dead}
    rows = {r["report_id"]: r for r in open_lake(paths, spark).records(
        f"SELECT report_id, status, version FROM {{{HEALINGS.name}}} WHERE job_id = '{JOB_ID}'")}
    assert {k: (v["status"], v["version"]) for k, v in rows.items()} == {
        "dead-1": ("published", 2), "wide": ("alert", None), "dead-2": ("published", 3)}

    # by hand, as docs/operations.md shows: the report in the landing zone, healed once
    write_report(paths.landing, report)
    assert main(["heal", "--job", JOB_ID, "--report-id", "dead-1"]) == 0
    assert "published v2" in capsys.readouterr().out  # handled before: its outcome
    write_report(paths.landing, wide)
    assert main(["heal", "--job", JOB_ID, "--report-id", "wide"]) == 1  # an alert
    assert main(["heal", "--job", JOB_ID, "--report-id", "nope"]) == 2
    err = capsys.readouterr().err  # an unknown id: the reports there are named
    assert f"no health report 'nope' for job '{JOB_ID}'" in err and "dead-1" in err
    assert latest(paths) == "3\n"


def _off(job):  # the job with healing off, as a config without the table gives
    from dataclasses import replace

    from schemas.config import HealingConfig

    return replace(job, healing=HealingConfig())


def test_one_report_id_is_one_finding_and_a_report_of_unknown_nodes_is_refused(
        collected_home, spark, capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same id with the same content heals once; the same id rewritten with other content is
    refused (never a second healing); a report naming only nodes the job does not run is
    refused, nothing recorded and nothing published."""
    paths = collected_home
    job = _healing_on(tmp_path, monkeypatch)
    v1 = _published_v1(paths)
    nodes = sorted(set(v1.assignment.values()))
    at = datetime.now(UTC).replace(microsecond=0)
    write_report(paths.landing, HealthReport(JOB_ID, "finding", at, (nodes[0],)))
    assert main(["heal", "--job", JOB_ID, "--report-id", "finding"]) == 0
    assert "published v2" in capsys.readouterr().out
    assert main(["heal", "--job", JOB_ID, "--report-id", "finding"]) == 0  # same content
    assert "handled before, unchanged" in capsys.readouterr().out

    # the file rewritten under the same id, naming another node: not a new finding
    path = health_dir(paths.landing, JOB_ID) / "finding.json"
    path.write_text(HealthReport(JOB_ID, "finding", at, (nodes[1],)).to_json())
    assert main(["heal", "--job", JOB_ID, "--report-id", "finding"]) == 2
    err = capsys.readouterr().err
    assert "health report 'finding' was handled before with other content" in err, err
    assert "fix:" in err and "own report id" in err and "Traceback" not in err
    assert latest(paths) == "2\n"

    # nodes the job does not run, and only those
    ghost = HealthReport(JOB_ID, "ghosts", at, ("node-98",), {"node-99": 3.0})
    with pytest.raises(StageError, match="names no node job 'tiny' runs") as info:
        heal(job, ghost, paths=paths, now=at + timedelta(hours=1))
    assert "node-98" in str(info.value) and nodes[0] in str(info.value.fix)
    assert latest(paths) == "2\n"
    rows = open_lake(paths, spark).records(
        f"SELECT report_id FROM {{{HEALINGS.name}}} WHERE job_id = '{JOB_ID}'")
    assert sorted(r["report_id"] for r in rows) == ["finding"]


def test_an_alert_naming_many_nodes_fits_its_mlflow_run(tmp_path: Path) -> None:
    """An alert for a report naming thousands of nodes (within the report's bound) is logged:
    its run's tag and note list the first nodes and count the rest, within MLflow's limits."""
    from jobs.heal.record import _alert_run
    from schemas.config import Paths
    from schemas.health import MAX_REPORT_NODES

    paths = Paths(tmp_path / "home")
    nodes = tuple(f"node-{i:05d}" for i in range(MAX_REPORT_NODES))
    report = HealthReport(JOB_ID, "many", datetime.now(UTC), nodes)
    run_id = _alert_run(paths, report, "h1", nodes, "too many nodes at once")
    tags = MlflowClient(paths.mlflow_uri).get_run(run_id).data.tags
    assert tags[Tag.HEALING_NODES].startswith("node-00000,node-00001")
    assert f"+{MAX_REPORT_NODES - 50} more" in tags[Tag.HEALING_NODES]
    assert len(tags[Tag.HEALING_NODES]) < 8000 and len(tags[Tag.NOTE]) < 8000


def test_a_healing_killed_before_latest_is_finished_by_its_rerun_not_published_again(
        collected_home, spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kill -9 after the healing's version row, before LATEST (the `heal.version` fail point):
    the rerun finishes that version (LATEST, the plan's status, the finding's row) and never
    publishes the same finding as a second version."""
    import os
    import subprocess
    import sys

    from jobs.faults import FAILPOINT_ENV
    from schemas.config import PROJECT_ROOT

    paths = collected_home
    _healing_on(tmp_path, monkeypatch)
    v1 = _published_v1(paths)
    dead = sorted(set(v1.assignment.values()))[0]
    write_report(paths.landing, HealthReport(JOB_ID, "dead-k", datetime.now(UTC), (dead,)))
    argv = [sys.executable, "-m", "reconf.cli", "heal", "--job", JOB_ID, "--report-id", "dead-k"]
    killed = subprocess.run(argv, cwd=PROJECT_ROOT, capture_output=True, text=True, check=False,
                            env={**os.environ, FAILPOINT_ENV: "heal.version"}, timeout=600,
                            start_new_session=True)  # the kill takes its own process group
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert latest(paths) == "1\n"  # the version row written, LATEST not moved
    assert open_lake(paths, spark).newest_version(JOB_ID) == 2

    rerun = subprocess.run(argv, cwd=PROJECT_ROOT, capture_output=True, text=True, check=False,
                           env=dict(os.environ), timeout=600)
    assert rerun.returncode == 0, rerun.stdout[-2000:] + rerun.stderr[-2000:]
    assert "published v2" in rerun.stdout, rerun.stdout
    assert latest(paths) == "2\n"
    assert not (paths.published / JOB_ID / "v3.json").exists()
    assert read_manifest(paths.published, JOB_ID, 2).scaling.nodes_to_terminate == (dead,)
    rows = open_lake(paths, spark).records(
        f"SELECT report_id, status, version FROM {{{HEALINGS.name}}} WHERE job_id = '{JOB_ID}'")
    assert [(r["report_id"], r["status"], r["version"]) for r in rows] == [
        ("dead-k", "published", 2)]


def test_a_stopped_healing_leaves_no_unit_on_its_dead_node_in_the_next_version(
        collected_home, spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`reconf stop` before the healing's first wave: the runtime keeps v1's units on the dead
    node, the next period plans from that partial assignment, and its version moves them off
    the node the healing terminated (jobs/plan/terminated.py), so the runtime applies it
    instead of refusing it and every version after it for a node that is gone."""
    from pipeline_kit import apply_latest, land, period, run_cycle

    from runtime.execution import request_stop

    paths = collected_home
    job = _healing_on(tmp_path, monkeypatch)
    v1 = _published_v1(paths)
    assert apply_latest(paths, job).status == "applied"
    load = dict.fromkeys(set(v1.assignment.values()), 0)
    for node in v1.assignment.values():
        load[node] += 1
    dead = min(sorted(load), key=load.__getitem__)  # few units: a balancing plan keeps them
    healed = heal(job, HealthReport(JOB_ID, "dead-s", datetime.now(UTC), (dead,)), paths=paths)
    assert healed.status == "published" and healed.version == 2, healed.summary()
    request_stop(paths.runtime, JOB_ID, "hold the healing")
    stopped = apply_latest(paths, job)
    assert stopped.status == "partial" and stopped.version == 1, stopped
    for n in (3, 4):
        land(paths, period(n), job)
        result = run_cycle(JOB_ID, period(n))
        manifest = read_manifest(paths.published, JOB_ID, result.version)
        assert dead not in manifest.assignment.values(), (n, manifest.assignment)
        applied = apply_latest(paths, job)
        assert applied.status == "applied" and applied.version == result.version, applied
    plans = open_lake(paths, spark).records(
        f"SELECT plan_json FROM {{{PLANS.name}}} WHERE job_id = '{JOB_ID}' "
        "AND status = 'published' ORDER BY period_end")
    assert any(f"moved off {dead}" in r["plan_json"] for r in plans)
