"""What-if after a real cycle (Spark, Delta, GE, MLflow): the shadow plans change nothing that
was published (Delta tables and the published tree byte for byte), and a failing and a slow
shadow strategy are recorded as such while the step, like the cycle, succeeds; the cluster path
(one applyInPandas group per shadow on the executors) plans the same as the local one.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from mlflow import MlflowClient
from pipeline_kit import JOB_ID, P1, delta_versions, stamp, tree

from jobs.plan.stage import plan_period
from jobs.publish.stage import publish_period
from jobs.whatif.shadow import SHADOW_FAULT_ENV, ShadowTask
from jobs.whatif.shadow_spark import run_shadows_on_spark
from jobs.whatif.stage import load_input, read_comparison
from reconf.cli import main

pytestmark = pytest.mark.spark


def test_shadow_plans_change_nothing_published_and_failures_are_recorded(
        collected_home, spark, job, monkeypatch, capsys):
    paths = collected_home
    job = replace(job, shadow_strategies=("greedy", "flux", "random", "albic", "cola"),
                  shadow_time_budget_s=60.0)
    planned = plan_period(job, P1, paths=paths, spark=spark)
    assert publish_period(job, P1, paths=paths, spark=spark).version == 1
    run_id = planned.mlflow_run_id
    assert run_id is not None
    before = (delta_versions(paths), tree(paths.lake), tree(paths.published))

    monkeypatch.setenv(SHADOW_FAULT_ENV, "flux:raise,random:hang")
    capsys.readouterr()
    assert main(["whatif", "--job", JOB_ID, "--period-end", stamp(P1)]) == 0
    out = capsys.readouterr().out
    assert "5 shadow strategies (1 failed, 3 planned, 1 timed out)" in out

    assert (delta_versions(paths), tree(paths.lake), tree(paths.published)) == before
    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    rows = {r["strategy"]: r for r in read_comparison(client, run_id)}
    assert rows["milp"]["role"] == "in force" and rows["milp"]["status"] == "published"
    assert float(rows["milp"]["load_distance_after"]) == pytest.approx(
        planned.plan.after.load_distance, rel=1e-5)
    assert rows["flux"]["status"] == "failed" and "fault injected" in rows["flux"]["message"]
    assert rows["random"]["status"] == "timed_out" and rows["random"]["load_distance_after"] == ""
    for name in ("greedy", "albic", "cola"):
        assert rows[name]["status"] == "planned" and rows[name]["load_distance_after"] != ""
    children = client.search_runs(
        [client.get_run(run_id).info.experiment_id],
        filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'")
    status = {c.data.tags["reconf.shadow.strategy"]: c.info.status for c in children}
    assert status == {"greedy": "FINISHED", "albic": "FINISHED", "cola": "FINISHED",
                      "flux": "FAILED", "random": "FAILED"}

    # The cluster path, on the session's executors: the same plans as the local path's rows.
    monkeypatch.delenv(SHADOW_FAULT_ENV)
    data = load_input(client, run_id, paths)
    assert data is not None
    tasks = [ShadowTask(name, params, data.state, data.budget, data.time_limit_s)
             for name, params in data.shadows if name in ("greedy", "albic")]
    outcomes = run_shadows_on_spark(spark, tasks, data.time_budget_s)
    assert [o.strategy for o in outcomes] == ["greedy", "albic"]
    for outcome in outcomes:
        assert outcome.status == "planned" and outcome.plan is not None
        row = rows[outcome.strategy]
        assert outcome.plan.after.load_distance == pytest.approx(
            float(row["load_distance_after"]), rel=1e-5)
        assert outcome.plan.migrations == int(row["migrations"])
