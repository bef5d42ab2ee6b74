"""A wide-area job's measured links without Spark: the runtime's feed, the landing check, the GE
suite, the overlay on the topology file, and a SPRAWL plan that follows a risen latency."""

from __future__ import annotations

import math
from pathlib import Path

import networkx as nx
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.errors import StageError
from jobs.facets.network import attach_network
from jobs.facets.subscriptions import check_facet_landing
from jobs.plan.stage import build_state, job_budget
from jobs.validate.suites import validate_links
from placement.registry import get_strategy
from placement.sprawl.measured import MeasuredLink, overlay_links
from placement.sprawl.topology import TopologyError, load_topology, routing_of
from reconf.settings import make_source
from runtime.source import write_period
from runtime.synthetic import SyntheticSpec, build_tables, initial_assignment
from schemas.config import PROJECT_ROOT, ConfigError, JobConfig, Paths, read_jobs
from schemas.landing import LINKS

DEMO = PROJECT_ROOT / "config" / "topologies" / "wan-demo.toml"
RISE = '{ period = 3, a = "gw-us", b = "gw-eu", latency_ms = 400.0 }'


def _job(tmp_path: Path, links: str | None = f"{{ changes = [{RISE}] }}",
         topology: Path | None = DEMO) -> JobConfig:
    path = tmp_path / "jobs.toml"
    extra = "" if links is None else f", links = {links}"
    path.write_text(f"""
[jobs.wan]
strategy = "sprawl"
max_migrations = 4
{'' if topology is None else f'topology = "{topology}"'}
source = {{ kind = "synthetic", operators = 2, keygroups_per_operator = 3, nodes = 6{extra} }}
""")
    return read_jobs(path).jobs["wan"]


def _rows(job: JobConfig, period: int, tmp_path: Path) -> list[dict]:
    feed = make_source(job, Paths(tmp_path)).links  # type: ignore[attr-defined]
    return [{"a": a, "b": b, "latency_ms": lat, "bandwidth": bw}
            for a, b, lat, bw in feed.measured(job.start_date + period * job.spl)]


def test_the_runtime_measures_every_configured_link_and_the_change_from_its_period(
        tmp_path: Path) -> None:
    job = _job(tmp_path, f"{{ jitter = 0.05, changes = [{RISE}] }}")
    configured = {frozenset((lk.a, lk.b)): lk for lk in load_topology(DEMO).network.links}
    for period in (1, 2, 3, 4):
        rows = _rows(job, period, tmp_path)
        assert {frozenset((r["a"], r["b"])) for r in rows} == set(configured)
        for r in rows:
            base = configured[frozenset((r["a"], r["b"]))].latency_ms
            if {r["a"], r["b"]} == {"gw-us", "gw-eu"} and period >= 3:
                base = 400.0
            assert base * 0.95 <= r["latency_ms"] <= base * 1.05
            assert r["bandwidth"] == math.inf  # the file limits no link
    assert _rows(job, 2, tmp_path) == _rows(job, 2, tmp_path)  # a re-landed period is identical
    land = make_source(job, Paths(tmp_path)).land_period(Paths(tmp_path).landing,
                                                          job.start_date + job.spl)
    assert (land / LINKS / "part-0.parquet").is_file()


@pytest.mark.parametrize(("links", "topology", "message"), [
    ('{ changes = [{ period = 2, a = "node-00", b = "node-05", latency_ms = 9.0 }] }', DEMO,
     "node-00-node-05 is not a link of the job's topology"),
    ('{ changes = [{ period = 2, a = "gw-us", b = "gw-eu" }] }', DEMO, "changes nothing"),
    ('{ changes = [{ period = 2, a = "gw-us", b = "gw-eu", latency_ms = -1.0 }] }', DEMO,
     r"latency_ms must be > 0 and finite"),
    ("{ jitter = 1.5 }", DEMO, r"jitter must be a number in \[0, 1\)"),
    ("{ noise = 0.1 }", DEMO, "unknown field"),
    ("{ jitter = 0.01 }", None, "no topology file to measure"),
])
def test_a_bad_links_table_is_a_config_error(tmp_path: Path, links: str, topology: Path | None,
                                             message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        make_source(_job(tmp_path, links, topology), Paths(tmp_path))
    assert "jobs.wan.source" in str(err.value)


def test_links_landed_for_a_job_without_topology_stop_collect(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    spec = SyntheticSpec("wan", operators=2, keygroups_per_operator=3, nodes=6)
    end = _job(tmp_path).start_date + _job(tmp_path).spl
    feed = make_source(_job(tmp_path), paths).links  # type: ignore[attr-defined]
    write_period(paths.landing, "wan", end,
                 build_tables(spec, end, initial_assignment(spec), spec.node_names),
                 facets=feed.table(end))
    assert LINKS in check_facet_landing(paths, _job(tmp_path), end)
    with pytest.raises(StageError, match=r"links dataset .* no topology file"):
        check_facet_landing(paths, _job(tmp_path, None, None), end)


def _frame(rows: list[tuple[str, str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"job_id": "wan", "period_end": pd.Timestamp("2026-01-01T00:05Z"),
                          "a": a, "b": b, "latency_ms": lat, "bandwidth": bw}
                         for a, b, lat, bw in rows])


def test_ge_refuses_bad_measurements_naming_the_rows() -> None:
    network = load_topology(DEMO).network
    configured = [(lk.a, lk.b) for lk in network.links]
    good = _frame([("gw-eu", "gw-us", 400.0, math.inf), ("node-00", "gw-us", 2.1, 0.0)])
    report = validate_links(good, sites=network.site_ids, configured=configured)
    assert report.success, report.summary()
    bad = _frame([
        ("gw-us", "gw-eu", 80.0, 100.0), ("gw-eu", "gw-us", 82.0, 100.0),  # twice, reversed
        ("node-00", "node-99", 5.0, 1.0),  # an unknown site
        ("node-00", "node-01", 5.0, 1.0),  # known sites, not a configured link
        ("gw-eu", "gw-asia", 0.0, 1.0), ("node-02", "gw-eu", math.inf, 1.0),
        ("node-03", "gw-eu", math.nan, 1.0), ("node-04", "gw-asia", 3.0, -2.0)])
    report = validate_links(bad, sites=network.site_ids, configured=configured)
    assert not report.success
    text = report.summary()
    assert "network_links.link: each link must be measured at most once" in text
    assert "a=gw-eu b=gw-us" in text  # the repeated link, named
    assert "network_links.b: a link's end b must be a site" in text and "b=node-99" in text
    assert "must be a link of the job's topology file" in text and "b=node-01" in text
    assert "latency_ms=0.0" in text and "latency_ms=inf" in text
    assert "network_links.latency_ms: latency_ms must not be null" in text
    assert "bandwidth=-2.0" in text and "How to fix" in text


def test_the_overlay_replaces_measured_links_and_drops_links_that_are_down() -> None:
    topology = load_topology(DEMO)
    over = overlay_links(topology, [MeasuredLink("gw-eu", "gw-us", 400.0, 50.0),
                                    MeasuredLink("gw-eu", "gw-asia", 170.0, 0.0)])
    links = {frozenset((lk.a, lk.b)): lk for lk in over.network.links}
    assert len(links) == len(topology.network.links) - 1  # eu–asia is down
    us_eu = links[frozenset(("gw-us", "gw-eu"))]
    assert (us_eu.latency_ms, us_eu.bandwidth, us_eu.cost) == (400.0, 50.0, 4.5)
    assert links[frozenset(("node-00", "gw-us"))] in topology.network.links  # not measured
    assert over.pinned == topology.pinned and over.network.sites == topology.network.sites
    r = routing_of(over.network)
    assert r.latency[r.index["gw-eu"], r.index["gw-asia"]] == pytest.approx(580.0)  # via us
    with pytest.raises(TopologyError, match="not a link of the topology file"):
        overlay_links(topology, [MeasuredLink("node-00", "node-01", 1.0, 1.0)])
    with pytest.raises(TopologyError, match="measured more than once"):
        overlay_links(topology, [MeasuredLink("gw-us", "gw-eu", 1.0, 1.0),
                                 MeasuredLink("gw-eu", "gw-us", 2.0, 1.0)])
    with pytest.raises(TopologyError, match=r"node-00-gw-us\) the network is not connected"):
        overlay_links(topology, [MeasuredLink("node-00", "gw-us", 2.0, 0.0)])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.floats(0.5, 1000.0)), max_size=9))
def test_routes_on_the_overlay_are_routes_on_the_measured_latencies(
        changes: list[tuple[int, float]]) -> None:
    topology = load_topology(DEMO)
    latency = {i: lk.latency_ms for i, lk in enumerate(topology.network.links)}
    latency.update(dict(changes))
    links = topology.network.links
    measured = [MeasuredLink(links[i].a, links[i].b, latency[i], math.inf) for i in dict(changes)]
    r = routing_of(overlay_links(topology, measured).network)
    # the reference: Dijkstra on the measured latencies
    graph = nx.Graph()
    graph.add_weighted_edges_from((lk.a, lk.b, latency[i]) for i, lk in enumerate(links))
    for a, dist in nx.all_pairs_dijkstra_path_length(graph):
        for b, d in dist.items():
            assert r.latency[r.index[a], r.index[b]] == pytest.approx(d)


def test_the_plan_follows_the_measured_latency(tmp_path: Path) -> None:
    """wan-demo's sources sit one per zone: the joins go to eu (us–eu 80 ms) until us–eu
    rises to 400 ms, then to asia (module docstring of placement/sprawl/measured.py)."""
    job = _job(tmp_path)
    current = initial_assignment(SyntheticSpec("wan", operators=2, keygroups_per_operator=3,
                                               nodes=6))
    zone = {s.node: s.zone for s in load_topology(DEMO).network.sites}
    kgs = [{"keygroup": kg, "operator": kg[:3], "load_pct": 20.0, "state_bytes": 1e6,
            "node": node} for kg, node in current.items()]
    nodes = [{"node": f"node-0{i}", "capacity": 1.0} for i in range(6)]
    edges = [{"src_keygroup": f"op0-kg{a:03d}", "dst_keygroup": f"op1-kg{b:03d}",
              "tuples_per_s": 133.0} for a in range(3) for b in range(3)]
    zones = {}
    for period in (2, 3):
        state = build_state(job, kgs, nodes, edges, current)
        state, params = attach_network(job, state, "sprawl", {}, _rows(job, period, tmp_path))
        plan = get_strategy("sprawl")(state, job_budget(job), **params)
        zones[period] = {zone[plan.assignment[f"op1-kg{k:03d}"]] for k in range(3)}
    assert zones == {2: {"eu"}, 3: {"asia"}}
    # a measurement the file does not have stops the stage, naming the table
    with pytest.raises(StageError, match=r"lake/network_links .* node-00-node-01 is not a link"):
        attach_network(job, build_state(job, kgs, nodes, edges, current), "sprawl", {},
                       [{"a": "node-00", "b": "node-01", "latency_ms": 1.0, "bandwidth": 1.0}])
