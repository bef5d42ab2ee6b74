"""A wide-area job's topology file through the plan stage's state building (no Spark needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.errors import StageError
from jobs.network_facet import attach_network
from jobs.plan import build_state, job_budget
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
