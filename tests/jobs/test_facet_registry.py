"""Facets registered once (jobs/facets/registry.py): the declarations agree with the landing
contract, collect's tables and the GE suites; the network facet's queries go by capability;
MLflow's names live only in schemas/tracking.py."""

from __future__ import annotations

import re
from pathlib import Path

from jobs.facets.network import attach_network
from jobs.facets.registry import FACETS
from jobs.facets.subscriptions import FACET_TABLES
from jobs.plan.assemble import build_state
from schemas.config import PROJECT_ROOT, read_jobs
from schemas.landing import FACET_SCHEMAS
from schemas.strategies import STRATEGIES
from schemas.tables import TABLES

DEMO = PROJECT_ROOT / "config" / "topologies" / "wan-demo.toml"


def test_each_facet_declares_what_the_contracts_hold() -> None:
    landed = {d: t for f in FACETS for d, t in zip(f.datasets, f.tables, strict=False)}
    assert landed == FACET_TABLES  # collect writes each landed dataset to the declared table
    assert set(landed) == set(FACET_SCHEMAS)  # every landing dataset belongs to one facet
    names = set(TABLES)
    for facet in FACETS:
        assert {t.name for t in facet.tables} <= names
        for suite in facet.suites:
            assert (PROJECT_ROOT / "schemas" / "expectations" / f"{suite}.json").is_file()
    assert len({f.name for f in FACETS}) == len(FACETS)
    # each facet named by a strategy is one the registry or the stats provide
    needed = {name for entry in STRATEGIES.values() for name in entry.facets}
    assert needed - {"communication"} <= {f.name for f in FACETS}


def test_the_topology_queries_go_to_strategies_planning_on_the_network(tmp_path: Path) -> None:
    topology = tmp_path / "bounded.toml"
    topology.write_text(DEMO.read_text() + """
[[queries]]
id = "eu"
sink = "op1-kg000"
latency_bound_ms = 300.0
client = "node-05"
""")
    config = tmp_path / "jobs.toml"
    config.write_text(f"""
[jobs.wan]
strategy = "sprawl"
topology = "{topology}"
source = {{ kind = "synthetic", operators = 2, keygroups_per_operator = 3, nodes = 6 }}
""")
    job = read_jobs(config).jobs["wan"]
    kgs = [{"keygroup": f"op{o}-kg{k:03d}", "operator": f"op{o}", "load_pct": 5.0 + k,
            "state_bytes": 1e6, "node": f"node-0{(3 * o + k) % 6}"}
           for o in range(2) for k in range(3)]
    state = build_state(job, kgs, [{"node": f"node-0{i}", "capacity": 1.0} for i in range(6)],
                        [], {})
    networked = [s for s, e in STRATEGIES.items() if "network" in e.facets]
    assert networked
    for strategy in STRATEGIES:
        _, params = attach_network(job, state, strategy, {})
        assert ("queries" in params) == (strategy in networked), strategy


def test_mlflow_names_are_written_once() -> None:
    """Tag names and artifact paths as literals only in schemas/tracking.py."""
    literal = re.compile(r"[\"'](reconf\.[a-z_]+|mlflow\.[a-zA-Z]+|(moves|nodes|keygroups|"
                         r"placements)\.csv|whatif/[a-z_]+\.\w+)")
    files = [*sorted((PROJECT_ROOT / "jobs").rglob("*.py")),
             PROJECT_ROOT / "reconf" / "audit.py", PROJECT_ROOT / "reconf" / "compare.py"]
    found = [f"{f.relative_to(PROJECT_ROOT)}:{n}: {line.strip()}"
             for f in files for n, line in enumerate(f.read_text().splitlines(), 1)
             if literal.search(line)]
    assert found == []
