"""A wide-area job's topology file through the plan stage's state building (no Spark needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.errors import StageError
from jobs.facets.network import attach_network
from jobs.plan.stage import build_state, job_budget
from placement.registry import get_strategy
from schemas.config import PROJECT_ROOT, ConfigError, read_jobs

DEMO = PROJECT_ROOT / "config" / "topologies" / "wan-demo.toml"


def _config(tmp_path: Path, topology: str) -> Path:
    path = tmp_path / "jobs.toml"
    path.write_text(f"""
[jobs.wan]
strategy = "sprawl"
max_migrations = 4
topology = "{topology}"
source = {{ kind = "synthetic", operators = 2, keygroups_per_operator = 3, nodes = 6 }}
""")
    return path


def _rows() -> tuple[list[dict], list[dict], list[dict]]:
    kgs = [{"keygroup": f"op{o}-kg{k:03d}", "operator": f"op{o}", "load_pct": 5.0 + k,
            "state_bytes": 1e6, "node": f"node-0{(3 * o + k) % 6}"}
           for o in range(2) for k in range(3)]
    nodes = [{"node": f"node-0{i}", "capacity": 1.0} for i in range(6)]
    edges = [{"src_keygroup": f"op0-kg{a:03d}", "dst_keygroup": f"op1-kg{b:03d}",
              "tuples_per_s": 10.0 + a + b} for a in range(3) for b in range(3)]
    return kgs, nodes, edges


def test_the_topology_reaches_the_state_and_sprawl_plans_across_zones(tmp_path: Path) -> None:
    job = read_jobs(_config(tmp_path, str(DEMO))).jobs["wan"]
    assert job.topology == str(DEMO)
    kgs, nodes, edges = _rows()
    state = build_state(job, kgs, nodes, edges, {})
    state, params = attach_network(job, state, "sprawl", {})
    assert state.network is not None and "network" in state.facets
    assert state.pinned == {"op0-kg000": "node-00", "op0-kg001": "node-02", "op0-kg002": "node-04"}
    plan = get_strategy("sprawl")(state, job_budget(job), **params)
    assert plan.assignment["op0-kg000"] == "node-00"
    assert plan.migrations <= 4
    assert plan.facet_metrics["cost_total"] <= plan.facet_before["cost_total"] + 1e-9
    assert plan.facet_metrics["wan_bytes"] <= plan.facet_before["wan_bytes"] + 1e-9
    assert plan.lower_bound is not None  # the shuffle is no tree: the MILP certifies a bound


def test_a_topology_that_misses_a_node_stops_the_stage(tmp_path: Path) -> None:
    text = DEMO.read_text().replace('"node-05"', '"node-99"')  # the site is renamed
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    job = read_jobs(_config(tmp_path, str(bad))).jobs["wan"]
    kgs, nodes, edges = _rows()
    state = build_state(job, kgs, nodes, edges, {})
    with pytest.raises(StageError, match="node-05"):
        attach_network(job, state, "sprawl", {})


def test_a_missing_topology_file_is_a_config_error(tmp_path: Path) -> None:
    jobs = read_jobs(_config(tmp_path, "config/topologies/nope.toml"))
    assert "wan" in jobs.errors
    assert "no topology file" in str(jobs.errors["wan"])
    with pytest.raises(ConfigError, match="no topology file"):
        raise jobs.errors["wan"]


BOUNDED = """
[[sites]]
node = "node-00"
zone = "us"
border = true
[[sites]]
node = "node-01"
zone = "us"
[[sites]]
node = "node-02"
zone = "us"
[[sites]]
node = "node-03"
zone = "eu"
border = true
[[sites]]
node = "node-04"
zone = "eu"
[[sites]]
node = "node-05"
zone = "eu"

[[links]]
a = "node-00"
b = "node-01"
latency_ms = 5.0
[[links]]
a = "node-00"
b = "node-02"
latency_ms = 6.0
[[links]]
a = "node-03"
b = "node-04"
latency_ms = 5.0
[[links]]
a = "node-03"
b = "node-05"
latency_ms = 7.0
[[links]]
a = "node-00"
b = "node-03"
latency_ms = 90.0
bandwidth = 400.0
cost = 3.0

[pinned]
"op0-kg000" = "node-01"
"op0-kg001" = "node-02"
"op0-kg002" = "node-04"

[[queries]]
id = "eu"
sink = "op1-kg000"
latency_bound_ms = 300.0
client = "node-05"
"""


def test_mlflow_gets_the_cost_split_wan_bytes_utilisations_latency_per_bound_and_gap(
        tmp_path: Path) -> None:
    """What the plan stage hands to MLflow (`plan_metrics`) for a SPRAWL plan: Formula 3.1's
    two terms, WAN bytes, node and link utilisation, each bounded query's latency / L_q, the
    certified gap, after and before."""
    from jobs.tracking.store import plan_metrics

    topo = tmp_path / "bounded.toml"
    topo.write_text(BOUNDED)
    job = read_jobs(_config(tmp_path, str(topo))).jobs["wan"]
    state = build_state(job, *_rows(), {})
    state, params = attach_network(job, state, "sprawl", {})
    plan = get_strategy("sprawl")(state, job_budget(job), **params)
    m = plan_metrics(plan)
    for name in ("cost_total", "cost_cpu", "cost_network", "wan_bytes", "max_node_util",
                 "max_link_util", "latency_violations", "max_latency_ratio",
                 "latency_ratio_eu"):
        assert f"{name}_after" in m and f"{name}_before" in m
    assert "gap_after" in m and 0.0 <= m["gap_after"] < 1.0
    assert m["cost_total_after"] == pytest.approx(m["cost_cpu_after"] + m["cost_network_after"])
    assert m["latency_ratio_eu_after"] <= 1.0 + 1e-9  # the bound is met
    assert 0.0 < m["max_link_util_after"] <= 1.0 + 1e-9  # the 400-wide WAN link carries data
    assert m["wan_bytes_after"] > 0.0 and 0.0 < m["max_node_util_after"] <= 1.0 + 1e-9
