"""SPRAWL through the pipeline: the tiny job on a three-zone topology, land → publish; the
runtime measures the links, a risen latency moves the plan, bad measurements stop validate."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from pipeline_kit import (
    CONFIG,
    JOB_ID,
    MAX_MIGRATIONS,
    P1,
    P2,
    P3,
    WAN_TOPOLOGY,
    apply_latest,
    land,
    mlflow_runs,
    of_period,
    rows,
    stamp,
)

from jobs.errors import StageError
from jobs.run import run_collect, run_plan, run_publish, run_validate
from runtime.source import write_period
from runtime.synthetic import SyntheticSpec, build_tables, initial_assignment
from schemas.config import resolve_job

pytestmark = pytest.mark.spark

# the runtime measures the links; from period 2 on the us–eu link takes 400 ms
LINKS = 'links = { changes = [{ period = 2, a = "node-00", b = "node-01", latency_ms = 400.0 }] }'


@pytest.fixture
def sprawl_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home) -> Path:
    topology = tmp_path / "topology.toml"
    topology.write_text(WAN_TOPOLOGY)
    path = tmp_path / "sprawl.toml"
    path.write_text(CONFIG.replace('strategy = "milp"', 'strategy = "sprawl"')
                    .replace("varies = 30 }", f"varies = 30, {LINKS} }}")
                    + f'topology = "{topology}"\n')
    monkeypatch.setenv("RECONF_CONFIG", str(path))
    return path


def test_a_wide_area_job_is_planned_and_published_with_sprawl_following_its_links(
        home, sprawl_config, spark) -> None:
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

    # period 2: the runtime measured us–eu at 400 ms; collect twice (one copy), plan on it
    assert apply_latest(home, job).applied
    land(home, P2, job)
    run_collect(JOB_ID, P2)
    run_collect(JOB_ID, P2)
    links = rows(spark, home, "network_links", of_period(P2))
    assert len(links) == 3
    assert links.set_index(["a", "b"]).loc[("node-00", "node-01"), "latency_ms"] == 400.0
    run_validate(JOB_ID, P2)
    later = run_plan(JOB_ID, P2).plan
    on_asia = [sum(a[f"op1-kg{k:03d}"] == "node-02" for k in range(4))
               for a in (plan.assignment, later.assignment)]
    assert on_asia[1] > on_asia[0] and later.migrations > 0  # the joins leave the slow link

    # period 3: a link measured twice and a negative latency stop the cycle at validate
    spec = SyntheticSpec(JOB_ID, operators=2, keygroups_per_operator=4, nodes=3)
    bad = pa.table({"ts": pa.array([P3 - timedelta(minutes=5)] * 3, pa.timestamp("us", "UTC")),
                    "a": ["node-00", "node-01", "node-01"], "b": ["node-01", "node-00", "node-02"],
                    "latency_ms": [80.0, 81.0, -1.0], "bandwidth": [1.0, 1.0, 1.0]})
    write_period(home.landing, JOB_ID, P3, build_tables(spec, P3, initial_assignment(spec),
                                                        spec.node_names), facets={"links": bad})
    run_collect(JOB_ID, P3)
    with pytest.raises(StageError) as err:
        run_validate(JOB_ID, P3)
    text = str(err.value)
    assert "network_links.link: each link must be measured at most once" in text
    assert "a=node-01 b=node-02" in text and "latency_ms=-1.0" in text


def test_a_zone_cut_off_by_links_measured_down_is_refused_at_validate_naming_it(
        home, sprawl_config, spark) -> None:
    """Every link of zone asia measured with bandwidth 0: validate names the zone and its links
    (before, validate passed and plan failed with "network is not connected", every cycle)."""
    spec = SyntheticSpec(JOB_ID, operators=2, keygroups_per_operator=4, nodes=3)
    down = pa.table({"ts": pa.array([P1 - timedelta(minutes=4)] * 3, pa.timestamp("us", "UTC")),
                     "a": ["node-00", "node-01", "node-00"], "b": ["node-01", "node-02", "node-02"],
                     "latency_ms": [80.0, 160.0, 180.0], "bandwidth": [5.0, 0.0, 0.0]})
    write_period(home.landing, JOB_ID, P1, build_tables(spec, P1, initial_assignment(spec),
                                                        spec.node_names), facets={"links": down})
    run_collect(JOB_ID, P1)
    with pytest.raises(StageError) as err:
        run_validate(JOB_ID, P1)
    text = str(err.value)
    assert "zone 'asia' (sites node-02) cut off" in text
    assert "a=node-01 b=node-02 bandwidth=0.0" in text and "a=node-00 b=node-02" in text
    assert err.value.where and "bring a link to zone 'asia'" in text
    with pytest.raises(StageError, match="failed validation"):
        run_plan(JOB_ID, P1)
