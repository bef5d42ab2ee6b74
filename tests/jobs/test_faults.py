"""Fault injection: `reconf collect` and `reconf publish` killed (kill -9 of the process group:
the Python driver and its Spark JVM) at each of their commit points, then rerun; and two
publishers at once. A rerun must end in exactly the state of an uninterrupted run.

The crash is real: a fail point (jobs/faults.py) SIGKILLs the stage's own process group when
RECONF_FAILPOINT names it. Each killed run is a subprocess; the rerun that must mend it runs
in-process, on the suite's shared Spark session.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient
from pipeline_kit import JOB_ID, P1, P3, land, of_period, rows, stamp

from jobs.collect.stage import collect
from jobs.faults import FAILPOINT_ENV
from jobs.markers import read_collect_marker
from jobs.plan.stage import plan_period
from jobs.publish.stage import publish_period
from jobs.validate.stage import validate_period
from schemas.config import Paths, resolve_job
from schemas.tables import ASSIGNMENT_VERSIONS, ASSIGNMENTS, COMM_STATS, KEYGROUP_STATS, NODE_STATS

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
PUBLISH_POINTS = ("publish.manifest.chunk", "publish.manifest", "publish.assignments",
                  "publish.version", "publish.latest", "publish.status")
COLLECT_POINTS = ("collect.node_stats", "collect.keygroup_stats", "collect.marker")


@pytest.fixture(scope="module")
def planned(collected_template, config_file, spark, tmp_path_factory) -> Path:
    """P1 planned (not published) and P3 landed (not collected), from the collected template."""
    home = tmp_path_factory.mktemp("faults") / "home"
    shutil.copytree(collected_template, home)
    paths = Paths(home)
    job = resolve_job(JOB_ID, config_file)
    plan_period(job, P1, paths=paths, spark=spark)
    land(paths, P3, job)
    return home


def _copy(template: Path, target: Path) -> Paths:
    shutil.copytree(template, target)
    return Paths(target)


def _reconf(paths: Paths, config: Path, *argv: str, failpoint: str | None = None
            ) -> subprocess.Popen[str]:
    env = {**os.environ, "RECONF_HOME": str(paths.home), "RECONF_CONFIG": str(config),
           "PYTHONPATH": str(ROOT)}
    env.pop(FAILPOINT_ENV, None)
    if failpoint:
        env[FAILPOINT_ENV] = failpoint
    return subprocess.Popen(
        [sys.executable, "-m", "reconf.cli", *argv], cwd=ROOT, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _killed(process: subprocess.Popen[str]) -> None:
    out, err = process.communicate(timeout=600)
    assert process.returncode == -signal.SIGKILL, (process.returncode, out, err[-2000:])


def _published_state(spark: Any, paths: Paths, run_id: str) -> dict[str, Any]:
    """Everything publish writes, without its wall-clock fields (created_at, published_at)."""
    manifests = {}
    for file in sorted((paths.published / JOB_ID).glob("v*.json")):
        doc = json.loads(file.read_text())
        doc.pop("created_at")
        manifests[file.name] = doc
    versions = rows(spark, paths, ASSIGNMENT_VERSIONS.name).drop(
        columns=["published_at", "manifest_path"])
    tags = MlflowClient(tracking_uri=paths.mlflow_uri).get_run(run_id).data.tags
    return {
        "manifests": manifests,
        "latest": (paths.published / JOB_ID / "LATEST").read_text(),
        "orphans": sorted((paths.published / JOB_ID).glob(".orphaned/*")),
        "assignments": sorted(map(tuple, rows(spark, paths, ASSIGNMENTS.name).values.tolist())),
        "versions": versions.to_dict("records"),
        "plan_status": rows(spark, paths, "plans", of_period(P1))["status"].tolist(),
        "tags": {k: v for k, v in tags.items()
                 if k in ("reconf.publish_status", "reconf.assignment_version")},
    }


@pytest.mark.parametrize("point", PUBLISH_POINTS)
def test_publish_killed_at_a_commit_point_is_completed_by_a_rerun(
    point, planned, config_file, job, spark, tmp_path
):
    reference = _copy(planned, tmp_path / "reference")
    publish_period(job, P1, paths=reference, spark=spark)
    run_id = rows(spark, reference, "plans", of_period(P1))["mlflow_run_id"].iloc[0]
    expected = _published_state(spark, reference, run_id)

    paths = _copy(planned, tmp_path / "crashed")
    _killed(_reconf(paths, config_file, "publish", "--job", JOB_ID, "--period-end", stamp(P1),
                    failpoint=point))
    rerun = publish_period(job, P1, paths=paths, spark=spark)

    assert rerun.version == 1
    assert _published_state(spark, paths, run_id) == expected
    assert expected["latest"] == "1\n" and expected["tags"]["reconf.publish_status"] == "published"


def test_publish_killed_mid_manifest_leaves_no_manifest_and_no_latest(
    planned, config_file, job, spark, tmp_path
):
    """Killed inside the streamed write (the temp file holds part of the assignment): no
    `v1.json`, no LATEST; the rerun removes the dead temp file and publishes v1."""
    paths = _copy(planned, tmp_path / "crashed")
    _killed(_reconf(paths, config_file, "publish", "--job", JOB_ID, "--period-end", stamp(P1),
                    failpoint="publish.manifest.chunk"))
    folder = paths.published / JOB_ID
    assert not (folder / "v1.json").exists() and not (folder / "LATEST").exists()
    assert [f.name for f in folder.iterdir() if f.name.startswith(".v1.json.")]  # the dead temp
    assert publish_period(job, P1, paths=paths, spark=spark).version == 1
    assert sorted(f.name for f in folder.iterdir() if not f.name.startswith(".")) == [
        "LATEST", "v1.json"]
    assert not [f.name for f in folder.iterdir() if f.name.endswith(".tmp")]


def _collected_state(spark: Any, paths: Paths) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for table in (KEYGROUP_STATS, COMM_STATS, NODE_STATS):
        frame = rows(spark, paths, table.name, of_period(P3))
        out[table.name] = sorted(map(str, frame.sort_values(list(table.key)).values.tolist()))
    marker = read_collect_marker(paths, JOB_ID, P3)
    out["marker_rows"] = None if marker is None else dict(marker.rows)
    return out


@pytest.mark.parametrize("point", COLLECT_POINTS)
def test_collect_killed_at_a_commit_point_is_completed_by_a_rerun(
    point, planned, config_file, job, spark, tmp_path
):
    reference = _copy(planned, tmp_path / "reference")
    collect(job, P3, paths=reference, spark=spark)
    expected = _collected_state(spark, reference)

    paths = _copy(planned, tmp_path / "crashed")
    _killed(_reconf(paths, config_file, "collect", "--job", JOB_ID, "--period-end", stamp(P3),
                    failpoint=point))
    if point != "collect.marker":  # interrupted before its commit point: validate says so
        assert read_collect_marker(paths, JOB_ID, P3) is None
        with pytest.raises(Exception, match="its collect was interrupted"):
            validate_period(job, P3, paths=paths, spark=spark)
    collect(job, P3, paths=paths, spark=spark)

    assert _collected_state(spark, paths) == expected
    assert validate_period(job, P3, paths=paths, spark=spark).report.success


def test_two_concurrent_publishers_publish_one_version(planned, config_file, spark, tmp_path):
    paths = _copy(planned, tmp_path / "home")
    argv = ("publish", "--job", JOB_ID, "--period-end", stamp(P1))
    first, second = _reconf(paths, config_file, *argv), _reconf(paths, config_file, *argv)
    outcomes = [(*p.communicate(timeout=600), p.returncode) for p in (first, second)]

    assert [code for _, _, code in outcomes] == [0, 0], outcomes
    # each one's result line (the one that waited also said so on stdout, before it)
    results = [next(line for line in out.splitlines() if line.startswith(f"publish {JOB_ID}@"))
               for out, _, _ in outcomes]
    said = sorted(line.split(": ", 1)[1].split(",")[0] for line in results)
    assert said == ["already_published", "published"], outcomes
    assert sorted(rows(spark, paths, ASSIGNMENT_VERSIONS.name)["version"]) == [1]
    assert sorted(p.name for p in (paths.published / JOB_ID).iterdir()) == ["LATEST", "v1.json"]
