"""Consistent Grouping through the pipeline: the heterogeneous replay job of config/jobs.toml
(`flights2-cg`: 3 of 10 nodes 5x stronger) with strategy `cg`, two periods of collect ->
validate -> plan -> publish -> the runtime applies; MLflow holds the imbalance, each node's
utilisation and its VWs against α*."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient
from pipeline_kit import P1, P2, apply_latest, land, rows, stamp

from jobs.run import run_collect, run_plan, run_publish, run_validate
from schemas.config import PROJECT_ROOT, Paths, resolve_job
from schemas.manifest import read_manifest
from schemas.tables import NODE_STATS

pytestmark = pytest.mark.spark

JOB = "flights2-cg"


def test_heterogeneous_replay_job_balances_utilisation_with_cg(
        home: Paths, spark, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONF_CONFIG", str(PROJECT_ROOT / "config" / "jobs.toml"))
    job = resolve_job(JOB)
    assert job.strategy == "cg" and job.source["capacities"][:3] == [5, 5, 5]
    imbalance = []
    for number, period_end in enumerate((P1, P2), start=1):
        land(home, period_end, job)
        run_collect(JOB, period_end)
        run_validate(JOB, period_end)
        planned = run_plan(JOB, period_end)
        plan = planned.plan
        assert plan.strategy == "cg"
        assert 0 < plan.migrations <= 25 == job.max_migrations  # weak nodes start overloaded
        imbalance.append(plan.facet_before["utilisation_imbalance"])
        assert plan.facet_metrics["utilisation_imbalance"] < imbalance[-1]
        published = run_publish(JOB, period_end)
        assert (published.version, published.status) == (number, "published")
        applied = apply_latest(home, job)
        assert applied.version == number
        manifest = read_manifest(home.published, JOB, number)
        assert set(applied.moved) == {m.keygroup for m in plan.moves}
        assert dict(manifest.assignment) == dict(plan.assignment)
    # the measured imbalance falls as the runtime applies the plan
    assert imbalance[0] > imbalance[1]

    caps = rows(spark, home, NODE_STATS.name, f"job_id = '{JOB}'")
    assert sorted(caps[caps["node"] == "node-00"]["capacity"]) == [5.0] * 2

    client = MlflowClient(tracking_uri=home.mlflow_uri)
    experiment = client.get_experiment_by_name(JOB)
    assert experiment is not None
    runs = {r.data.tags["reconf.period_end"]: r.data
            for r in client.search_runs([experiment.experiment_id])}
    assert set(runs) == {stamp(p) for p in (P1, P2)}
    m = runs[stamp(P2)].metrics
    assert m["utilisation_imbalance_before"] == pytest.approx(imbalance[1])
    assert m["utilisation_imbalance_after"] < m["utilisation_imbalance_before"]
    assert 0 < m["normalized_imbalance_after"] < m["normalized_imbalance_before"]
    assert m["vws_optimal/node-00_after"] == pytest.approx(200 * 5 / 22)
    assert m["vws/node-00_after"] > m["vws/node-00_before"] >= 20  # VWs flow to the strong
    assert m["vws/node-03_after"] < 20
    assert m["vw_gap_after"] < m["vw_gap_before"]
    assert {f"utilisation_pct/node-{i:02d}_after" for i in range(10)} <= set(m)
    assert runs[stamp(P2)].params["cg.probe"] == "True"
