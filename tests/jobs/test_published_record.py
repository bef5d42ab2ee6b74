"""A published period's record (plan row, moves, MLflow run, audit, manifest) never changes.

Planning a published period again (by `reconf plan`, by a cleared Airflow plan task, by
`reconf fleet`) records a separate attempt, marked not published, beside the published one;
publish publishes exactly the plan asked for and checks it against its MLflow run; `reconf audit`
shows the published version's moves and the other attempts only as attempts.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient
from pipeline_kit import JOB_ID, P1, delta_versions, of_period, rows, snapshot, stamp, tree

from jobs.lake.base import write_records
from jobs.lake.read import rows_where
from reconf.cli import main
from schemas.config import Paths
from schemas.manifest import assignment_checksum, read_manifest
from schemas.tables import PLAN_MOVES, PLANS

pytestmark = pytest.mark.spark

T = stamp(P1)
FIRST, SECOND = f"{JOB_ID}@{T}", f"{JOB_ID}@{T}#2"
AIRFLOW_CTX = {"AIRFLOW_CTX_DAG_ID": f"reconfigure_{JOB_ID}",
               "AIRFLOW_CTX_DAG_RUN_ID": "scheduled__2026-01-01T00:05:00+00:00",
               "AIRFLOW_CTX_TRY_NUMBER": "2", "AIRFLOW_CTX_TASK_ID": "plan"}


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([args[0], "--job", JOB_ID, "--period-end", T, *args[1:]])
    out, err = capsys.readouterr()
    return code, out, err


def _run_record(paths: Paths, run_id: str) -> dict[str, Any]:
    """Everything of an MLflow run: info, params, metrics, tags, every artifact's bytes."""
    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    run = client.get_run(run_id)
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(client.download_artifacts(run_id, "", tmp))
        artifacts = tree(local)
    return {"name": run.info.run_name, "status": run.info.status, "end": run.info.end_time,
            "params": run.data.params, "metrics": run.data.metrics, "tags": run.data.tags,
            "artifacts": artifacts}


def _record(spark: Any, paths: Paths, capsys: pytest.CaptureFixture[str], pid: str
            ) -> dict[str, Any]:
    """The published record of P1: plan row and moves of `pid`, its run, the audit, manifests."""
    plan = rows(spark, paths, PLANS.name, f"{of_period(P1)} AND plan_id = '{pid}'")
    moves = rows(spark, paths, PLAN_MOVES.name, f"{of_period(P1)} AND plan_id = '{pid}'")
    assert len(plan) == 1
    code, audit, _ = _cli(capsys, "audit")
    assert code == 0
    return {"plan": plan.to_json(orient="records", date_format="iso", double_precision=15),
            "moves": moves.sort_values("keygroup").to_json(orient="records", date_format="iso",
                                                           double_precision=15),
            "run": _run_record(paths, plan.iloc[0]["mlflow_run_id"]),
            "audit": audit.splitlines(), "published": tree(paths.published)}


def _check_audit_shows_the_manifest(capsys: pytest.CaptureFixture[str], paths: Paths,
                                    spark: Any) -> dict[str, Any]:
    """`reconf audit --json`'s moves are exactly v1's: the manifest holds every move's target,
    and every key group not moved sits where the runtime ran it (the plan's starting point)."""
    code, out, _ = _cli(capsys, "audit", "--json")
    assert code == 0
    report = json.loads(out)
    manifest = read_manifest(paths.published, JOB_ID, 1)
    assert report["plan_id"] == manifest.plan_id == FIRST
    assert report["published"]["assignment_version"] == 1
    initial = dict(rows(spark, paths, "keygroup_stats", of_period(P1))[["keygroup", "node"]]
                   .itertuples(index=False, name=None))
    moved = {m["keygroup"]: (m["from"], m["to"]) for m in report["moves"]}
    assert moved, "the published plan moves something (else the test shows nothing)"
    for kg, node in manifest.assignment.items():
        assert (initial[kg], node) == moved.get(kg, (node, node))
    return report


def test_replanning_a_published_period_adds_an_attempt_and_leaves_its_record(
        collected_home, spark, capsys, monkeypatch):
    paths = collected_home
    assert _cli(capsys, "plan")[0] == 0
    code, out, _ = _cli(capsys, "publish")
    assert code == 0 and "published, version 1" in out and FIRST in out
    before = _record(spark, paths, capsys, FIRST)

    # A cleared and re-run Airflow plan task (what the DAG's task calls), with another budget.
    from jobs.run import run_plan, run_publish

    with monkeypatch.context() as airflow:
        for key, value in AIRFLOW_CTX.items():
            airflow.setenv(key, value)
        again = run_plan(JOB_ID, P1, max_migrations=1, strategy="greedy",
                         tags={"reconf.airflow_run_id": AIRFLOW_CTX["AIRFLOW_CTX_DAG_RUN_ID"]})
        republished = run_publish(JOB_ID, P1)  # the DAG's publish task, cleared too
    # ... and by hand: `reconf plan` answers with a third attempt, saying it is not published
    code, planned, _ = _cli(capsys, "plan", "--max-migrations", "2")
    assert code == 0
    code, published, _ = _cli(capsys, "publish")
    assert code == 0

    after = _record(spark, paths, capsys, FIRST)
    for part in ("plan", "moves", "run", "published"):
        assert after[part] == before[part], part
    assert (again.plan_id, again.published_as) == (SECOND, (1, FIRST))
    assert (republished.status, republished.version, republished.plan_id) == (
        "already_published", 1, FIRST)
    assert f"plan {JOB_ID}@{T}#3 " in planned
    assert f"not published: the period was already published as v1 (plan {FIRST})" in planned
    assert "already_published, version 1" in published
    assert f"{SECOND}, {JOB_ID}@{T}#3 are kept as attempts, not published" in published
    # the audit: the same report, and the attempts listed as attempts (no moves of theirs)
    extra = [line for line in after["audit"] if line not in before["audit"]]
    assert [line for line in after["audit"] if line in before["audit"]] == before["audit"]
    assert len(extra) == 2 and all(line.startswith("  other attempt of this period: plan ")
                                   and "not published" in line for line in extra)
    assert SECOND in extra[0] and f"{JOB_ID}@{T}#3" in extra[1]
    report = _check_audit_shows_the_manifest(capsys, paths, spark)
    assert [a["plan_id"] for a in report["other_attempts"]] == [SECOND, f"{JOB_ID}@{T}#3"]

    statuses = rows(spark, paths, PLANS.name, of_period(P1)).set_index("plan_id")["status"]
    assert statuses.to_dict() == {FIRST: "published", SECOND: "not_published",
                                  f"{JOB_ID}@{T}#3": "not_published"}
    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    attempt = client.get_run(str(again.mlflow_run_id)).data.tags
    assert (attempt["reconf.publish_status"], attempt["reconf.published_plan_id"],
            attempt["reconf.airflow.run_id"]) == ("not_published", FIRST,
                                                   AIRFLOW_CTX["AIRFLOW_CTX_DAG_RUN_ID"])
    # the attempt is audited as what it is when asked for by its plan id
    code, out, _ = _cli(capsys, "audit", "--plan-id", SECOND)
    assert code == 0 and "published: no, an attempt made beside the period's published plan" in out


def test_fleet_never_rewrites_a_published_period(collected_home, spark, capsys):
    from jobs.plan.fleet import run_fleet

    paths = collected_home
    assert _cli(capsys, "plan")[0] == 0
    assert _cli(capsys, "publish")[0] == 0
    before = _record(spark, paths, capsys, FIRST)

    result = run_fleet(P1, job_ids=[JOB_ID], strategy="greedy", paths=paths, spark=spark)
    code, published, _ = _cli(capsys, "publish")

    after = _record(spark, paths, capsys, FIRST)
    for part in ("plan", "moves", "run", "published"):
        assert after[part] == before[part], part
    (planned,) = result.planned
    assert (planned.plan_id, planned.published_as) == (SECOND, (1, FIRST))
    assert "not published: the period was already published as v1" in result.summary()
    assert code == 0 and published.startswith(f"publish {JOB_ID}@{T}: already_published")
    assert after["audit"][: len(before["audit"])] == before["audit"]
    assert after["audit"][len(before["audit"]):] == [] or all(
        "other attempt" in line for line in after["audit"] if line not in before["audit"])
    report = _check_audit_shows_the_manifest(capsys, paths, spark)
    assert [(a["plan_id"], a["status"]) for a in report["other_attempts"]] == [
        (SECOND, "not_published")]


def test_publish_publishes_exactly_the_plan_asked_for(collected_home, spark, capsys,
                                                       monkeypatch):
    paths = collected_home
    from jobs.run import run_plan

    with monkeypatch.context() as airflow:  # attempt 1: the Airflow run's plan task
        for key, value in AIRFLOW_CTX.items():
            airflow.setenv(key, value)
        first = run_plan(JOB_ID, P1)
    second = run_plan(JOB_ID, P1, strategy="greedy", max_migrations=1)  # then one by hand
    assert (first.plan_id, second.plan_id) == (FIRST, SECOND)
    assert first.plan.assignment != second.plan.assignment

    # an unknown plan id: refused, nothing written
    untouched = snapshot(paths)
    code, _, err = _cli(capsys, "publish", "--plan-id", f"{JOB_ID}@{T}#9")
    assert code == 2 and f"has no plan '{JOB_ID}@{T}#9'" in err and SECOND in err
    assert snapshot(paths) == untouched

    # the Airflow run's publish task publishes its own run's plan, not the newer manual one
    from jobs.run import run_publish

    with monkeypatch.context() as airflow:
        for key, value in AIRFLOW_CTX.items():
            airflow.setenv(key, value)
        published = run_publish(JOB_ID, P1)
    assert (published.status, published.version, published.plan_id) == ("published", 1, FIRST)
    manifest = read_manifest(paths.published, JOB_ID, 1)
    assert (manifest.plan_id, dict(manifest.assignment)) == (FIRST, dict(first.plan.assignment))
    statuses = rows(spark, paths, PLANS.name, of_period(P1)).set_index("plan_id")["status"]
    assert statuses.to_dict() == {FIRST: "published", SECOND: "not_published"}
    tags = MlflowClient(tracking_uri=paths.mlflow_uri).get_run(str(second.mlflow_run_id)).data.tags
    assert (tags["reconf.publish_status"], tags["reconf.published_version"]) == (
        "not_published", "1")

    # asking for the other attempt now: refused (exit 2), nothing written
    untouched = snapshot(paths)
    code, _, err = _cli(capsys, "publish", "--plan-id", SECOND)
    assert code == 2 and f"plan {SECOND} is not published and never will be" in err
    assert "where: assignment_versions" in err and "fix:" in err
    assert snapshot(paths) == untouched


def test_publish_refuses_a_plan_row_that_does_not_match_its_run(collected_home, spark, capsys):
    paths = collected_home
    assert _cli(capsys, "plan")[0] == 0
    (row,) = rows_where(spark, paths, PLANS.name, of_period(P1))
    plan_json = json.loads(row["plan_json"])
    moved = sorted(plan_json["assignment"])[0]
    nodes = sorted(set(plan_json["assignment"].values()))
    plan_json["assignment"][moved] = next(n for n in nodes if n != plan_json["assignment"][moved])
    # a row consistent in itself: only its MLflow run (what the audit shows) tells
    plan_json["checksum"] = assignment_checksum(plan_json["assignment"])
    row["plan_json"] = json.dumps(plan_json, sort_keys=True)
    write_records(spark, [row], paths, PLANS, f"{of_period(P1)} AND plan_id = '{FIRST}'")

    untouched = snapshot(paths)
    code, _, err = _cli(capsys, "publish")
    assert code == 2
    assert f"plan {FIRST} does not match what was planned: its MLflow run" in err
    assert "records checksum" in err and "it is not published" in err
    assert snapshot(paths) == untouched
    assert tree(paths.published) == {}


@pytest.mark.parametrize("engine", ["delta-rs", "spark"])
def test_statuses_settle_in_one_commit_on_both_lake_engines(home, spark, monkeypatch, engine):
    """Publish's status update (a CASE per attempt) as delta-rs and as Spark SQL run it."""
    from jobs.plan.attempts import settle_statuses

    paths = home
    if engine == "spark":
        monkeypatch.setenv("RECONF_LAKE_IO", "spark")
    base = {"job_id": JOB_ID, "period_end": P1, "strategy": "milp", "solver_status": "optimal",
            "migrations": 0, "plan_json": "{}"}
    attempts = {FIRST: "stale", SECOND: "planned", f"{JOB_ID}@{T}#3": "planned"}
    other = {**base, "period_end": P1 + (P1 - P1.replace(minute=0)), "plan_id": "other"}
    write_records(spark, [*({**base, "plan_id": pid, "status": status}
                            for pid, status in attempts.items()), {**other, "status": "planned"}],
                  paths, PLANS, f"job_id = '{JOB_ID}'")
    commits = delta_versions(paths)[PLANS.name]
    settle_statuses(spark, paths, JOB_ID, P1, SECOND)
    assert delta_versions(paths)[PLANS.name] == commits + 1
    found = {r["plan_id"]: r["status"] for r in rows_where(spark, paths, PLANS.name,
                                                           f"job_id = '{JOB_ID}'")}
    assert found == {FIRST: "stale", SECOND: "published", f"{JOB_ID}@{T}#3": "not_published",
                     "other": "planned"}
