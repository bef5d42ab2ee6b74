"""The whole cycle in-process (collect -> validate -> plan -> publish -> apply), and dry runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mlflow import MlflowClient
from pipeline_kit import (
    JOB_ID,
    MAX_MIGRATIONS,
    P1,
    P2,
    all_keygroups,
    apply_latest,
    delta_versions,
    land,
    latest,
    mlflow_runs,
    of_period,
    rows,
    stamp,
    tree,
)

from jobs.run import run_collect, run_plan, run_publish, run_validate
from jobs.tracking.store import run_name
from reconf.cli import main
from schemas.manifest import assignment_checksum, read_latest_version, read_manifest
from schemas.tables import ASSIGNMENT_VERSIONS, ASSIGNMENTS, PLAN_MOVES, PLANS

pytestmark = pytest.mark.spark

ARTIFACTS = {"plan.json", "moves.csv", "node_loads.png", "validation.json"}


def _cycle(period_end):
    run_collect(JOB_ID, period_end)
    assert "passed" in run_validate(JOB_ID, period_end)
    planned = run_plan(JOB_ID, period_end)
    published = run_publish(JOB_ID, period_end)
    return planned, published


def test_two_periods_publish_versions_1_and_2_and_reruns_add_nothing(home, spark):
    paths = home
    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    results = {}
    running = None  # the assignment the runtime runs
    for number, period_end in enumerate((P1, P2), start=1):
        land(paths, period_end)
        planned, published = _cycle(period_end)
        results[period_end] = planned
        assert (published.version, published.status) == (number, "published")
        assert latest(paths) == f"{number}\n"
        assert read_latest_version(paths.published, JOB_ID) == number

        # The manifest: verifies, names its plan and period, is the plan's assignment.
        manifest = read_manifest(paths.published, JOB_ID, number)
        assert manifest.checksum == manifest.actual_checksum  # covers the schedule too
        assert manifest.assignment_digest == assignment_checksum(manifest.assignment)
        assert (manifest.plan_id, manifest.period_end) == (planned.plan_id, stamp(period_end))
        assert dict(manifest.assignment) == dict(planned.plan.assignment)
        assert set(manifest.assignment) == all_keygroups()

        # assignments: one row per key group of this version, equal to the manifest
        assigned = rows(spark, paths, ASSIGNMENTS.name, f"job_id = '{JOB_ID}' AND version = {number}")
        assert len(assigned) == len(all_keygroups())
        assert dict(zip(assigned["keygroup"], assigned["node"], strict=True)) == dict(manifest.assignment)

        version_row = rows(spark, paths, ASSIGNMENT_VERSIONS.name, f"version = {number}").iloc[0]
        assert version_row["checksum"] == manifest.assignment_digest
        assert version_row["plan_id"] == planned.plan_id
        assert version_row["status"] == "published"

        # plan_moves: exactly the plan's moves, within the budget, from the assignment that ran
        moves = rows(spark, paths, PLAN_MOVES.name, of_period(period_end)).sort_values("keygroup")
        expected = sorted((m.keygroup, m.src, m.dst, m.cost) for m in planned.plan.moves)
        got = list(zip(moves["keygroup"], moves["src_node"], moves["dst_node"], moves["cost"], strict=True))
        assert [g[:3] for g in got] == [e[:3] for e in expected]
        assert [g[3] for g in got] == pytest.approx([e[3] for e in expected])
        assert len(got) == planned.plan.migrations <= MAX_MIGRATIONS
        base = dict(running) if running else None
        if base is not None:  # period 2 plans from v1, which the runtime applied
            assert planned.base_version == 1
            for kg, src, dst, _ in got:
                assert base[kg] == src
                base[kg] = dst
            assert base == dict(manifest.assignment)
        plan_row = rows(spark, paths, PLANS.name, of_period(period_end)).iloc[0]
        assert plan_row["status"] == "published"
        assert plan_row["migrations"] == len(got)

        # MLflow: the run of this cycle, its metrics, tags and artifacts
        run = client.get_run(planned.mlflow_run_id)
        assert run.info.run_name == run_name(stamp(period_end))  # the period, short
        assert run.data.metrics["load_distance_before"] == pytest.approx(plan_row["load_distance_before"])
        assert run.data.metrics["load_distance_after"] == pytest.approx(plan_row["load_distance_after"])
        assert run.data.tags["reconf.assignment_version"] == str(number)
        assert run.data.params["max_migrations"] == str(MAX_MIGRATIONS)
        assert {a.path for a in client.list_artifacts(run.info.run_id)} >= ARTIFACTS
        logged = json.loads(Path(client.download_artifacts(run.info.run_id, "plan.json")).read_text())
        assert logged["assignment"] == dict(sorted(manifest.assignment.items()))
        validation = json.loads(
            Path(client.download_artifacts(run.info.run_id, "validation.json")).read_text()
        )
        assert validation["success"] is True and validation["period_end"] == stamp(period_end)

        applied = apply_latest(paths)
        assert (applied.status, applied.version) == ("applied", number)
        running = manifest.assignment

    runs = mlflow_runs(paths)
    assert sorted(r.info.run_name for r in runs) == [run_name(stamp(P1)), run_name(stamp(P2))]

    # Rerun plan + publish of period 2: a separate attempt (its own plan id and MLflow run,
    # marked not published), no new version, LATEST stays, the published plan row untouched.
    before_versions = delta_versions(paths)[ASSIGNMENT_VERSIONS.name]
    published_before = tree(paths.published)
    replanned = run_plan(JOB_ID, P2)
    republished = run_publish(JOB_ID, P2)
    assert replanned.plan_id == f"{results[P2].plan_id}#2"
    assert replanned.mlflow_run_id != results[P2].mlflow_run_id
    assert replanned.published_as == (2, results[P2].plan_id)
    assert (republished.version, republished.status, republished.plan_id) == (
        2, "already_published", results[P2].plan_id)
    assert len(mlflow_runs(paths)) == 3
    assert delta_versions(paths)[ASSIGNMENT_VERSIONS.name] == before_versions
    assert tree(paths.published) == published_before
    versions = rows(spark, paths, ASSIGNMENT_VERSIONS.name)
    assert sorted(versions["version"]) == [1, 2]
    statuses = rows(spark, paths, PLANS.name, of_period(P2)).set_index("plan_id")["status"]
    assert statuses.to_dict() == {results[P2].plan_id: "published",
                                  replanned.plan_id: "not_published"}
    assert apply_latest(paths).status == "unchanged"


def test_dry_run_prints_the_plan_and_writes_nothing(collected_home, spark, capsys):
    paths = collected_home
    before = delta_versions(paths)

    code = main(["plan", "--job", JOB_ID, "--period-end", stamp(P1), "--dry-run"])

    out = capsys.readouterr().out
    assert code == 0
    assert f"plan {JOB_ID}@{stamp(P1)}#dry-1 (milp" in out  # a dry run's own plan id
    assert "current assignment: initial allocation" in out
    assert re.search(r"load distance [\d.]+ -> [\d.]+", out)
    assert re.search(r"^  phases: warm start [\d.]+ s", out, re.M), out  # the MILP's steps
    found = re.search(r"migrations (\d+)", out)
    assert found, out
    migrations = int(found.group(1))
    assert 0 < migrations <= MAX_MIGRATIONS  # round-robin 8 on 3 nodes is unbalanced
    assert len(re.findall(r"^  move op\d-kg\d{3}: node-\d\d -> node-\d\d", out, re.M)) == migrations
    assert "dry run: nothing written" in out

    after = delta_versions(paths)
    assert after[PLANS.name] == before[PLANS.name] and after[PLAN_MOVES.name] == before[PLAN_MOVES.name]
    for table in (PLANS, PLAN_MOVES, ASSIGNMENTS, ASSIGNMENT_VERSIONS):
        assert rows(spark, paths, table.name).empty, table.name
    assert after == before
    assert tree(paths.published) == {}
    assert mlflow_runs(paths) == []  # no cycle run; the dry run is flagged as such
    assert [r.info.run_name for r in mlflow_runs(paths, dry_run=True)] == [
        f"{run_name(stamp(P1))} (dry run)"
    ]


def test_a_zero_budget_plan_is_written_with_no_moves(collected_home, spark, capsys):
    """A plan without moves (budget 0) still writes its plan row; its empty cost is a DOUBLE."""
    paths = collected_home

    code = main(["plan", "--job", JOB_ID, "--period-end", stamp(P1), "--max-migrations", "0"])

    assert code == 0, capsys.readouterr().err
    assert "migrations 0, migration cost 0" in capsys.readouterr().out
    plan_row = rows(spark, paths, PLANS.name, of_period(P1))
    assert len(plan_row) == 1
    assert plan_row.iloc[0][["status", "max_migrations", "migrations", "migration_cost"]].tolist() == [
        "planned", 0, 0, 0.0
    ]
    assert rows(spark, paths, PLAN_MOVES.name, of_period(P1)).empty
    logged = json.loads(plan_row.iloc[0]["plan_json"])
    landed = rows(spark, paths, "keygroup_stats", of_period(P1))
    assert logged["assignment"] == dict(sorted(zip(landed["keygroup"], landed["node"], strict=True)))


def test_a_dry_run_is_a_binding_preview_of_what_is_published(collected_home, spark):
    """Dry run, then plan and publish on unchanged inputs: exactly the previewed moves are
    published, and the plan records what made it reproducible (placement/determinism.py)."""
    paths = collected_home
    assert "passed" in run_validate(JOB_ID, P1)
    preview = run_plan(JOB_ID, P1, dry_run=True)
    planned = run_plan(JOB_ID, P1)
    published = run_publish(JOB_ID, P1)

    assert preview.plan.moves and preview.plan.moves == planned.plan.moves
    assert (published.status, published.plan_id) == ("published", planned.plan_id)
    assert published.version is not None and planned.mlflow_run_id is not None
    manifest = read_manifest(paths.published, JOB_ID, published.version)
    assert dict(manifest.assignment) == dict(preview.plan.assignment)
    assert planned.plan.determinism.startswith("deterministic: seed 0"), planned.plan.determinism
    assert planned.plan_json["determinism"] == planned.plan.determinism
    run = MlflowClient(tracking_uri=paths.mlflow_uri).get_run(planned.mlflow_run_id)
    assert run.data.tags["reconf.determinism"] == planned.plan.determinism
