"""SPRAWL through the pipeline: the tiny job on a three-zone topology, land → publish."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipeline_kit import CONFIG, JOB_ID, MAX_MIGRATIONS, P1, land, mlflow_runs, stamp

from jobs.stages import run_collect, run_plan, run_publish, run_validate
from schemas.config import resolve_job

pytestmark = pytest.mark.spark

TOPOLOGY = """
[[sites]]
node = "node-00"
zone = "us"
[[sites]]
node = "node-01"
zone = "eu"
cpu_cost = 1.5
[[sites]]
node = "node-02"
zone = "asia"
cpu_cost = 2.0
[[sites]]
node = "gw"
zone = "eu"
border = true

[[links]]
a = "node-00"
b = "gw"
latency_ms = 80.0
cost = 4.5
[[links]]
a = "node-01"
b = "gw"
latency_ms = 2.0
[[links]]
a = "node-02"
b = "gw"
latency_ms = 160.0
cost = 4.5

[pinned]
"op0-kg000" = "node-00"
"""


@pytest.fixture
def sprawl_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home) -> Path:
    topology = tmp_path / "topology.toml"
    topology.write_text(TOPOLOGY)
    path = tmp_path / "sprawl.toml"
    path.write_text(CONFIG.replace('strategy = "milp"', 'strategy = "sprawl"')
                    + f'topology = "{topology}"\n')
    monkeypatch.setenv("RECONF_CONFIG", str(path))
    return path


def test_a_wide_area_job_is_planned_and_published_with_sprawl(home, sprawl_config,
                                                              spark) -> None:
    job = resolve_job(JOB_ID)
    assert job.strategy == "sprawl" and job.topology is not None
    land(home, P1, job)
    run_collect(JOB_ID, P1)
    run_validate(JOB_ID, P1)
    planned = run_plan(JOB_ID, P1)
    plan = planned.plan
    assert plan.strategy == "sprawl" and plan.migrations <= MAX_MIGRATIONS
    assert plan.assignment["op0-kg000"] == "node-00"  # pinned
    assert plan.lower_bound is not None and plan.facet_metrics["gap"] >= 0.0
    published = run_publish(JOB_ID, P1)
    assert published.status == "published"
    manifest = json.loads((home.published / JOB_ID / f"v{published.version}.json").read_text())
    zones = {"node-00": "us", "node-01": "eu", "node-02": "asia"}
    assert len({zones[n] for n in manifest["assignment"].values()}) >= 2
    metrics = {r.data.tags["reconf.period_end"]: r.data.metrics
               for r in mlflow_runs(home)}[stamp(P1)]
    for name in ("cost_total", "cost_cpu", "cost_network", "wan_bytes", "max_node_util", "gap"):
        assert f"{name}_after" in metrics
    assert metrics["cost_total_after"] <= metrics["cost_total_before"] + 1e-9
