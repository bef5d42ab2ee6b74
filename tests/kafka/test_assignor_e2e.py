"""ReconfTaskAssignor on a real broker with three real Kafka Streams instances (JVMs), in the
order a deployment lives through: the default assignor while nothing is published; a published
version applied within the follow-up delay; a tampered and an older manifest refused with the
applied assignment kept; an instance killed mid-run, Kafka Streams recovering without it (the
assignor falls back, saying why), and the applied version running again once it is back.

The tests share one application (module fixture) and run in file order, each starting from the
state the previous one left, as the deployment would.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from runtime.kafka_streams.broker import Broker
from runtime.kafka_streams.cluster import AppSpec, Cluster, wait_for
from schemas.manifest import (
    Manifest,
    assignment_checksum,
    latest_path,
    manifest_path,
    write_latest,
    write_manifest,
)
from tests.kafka.conftest import log_lines

pytestmark = pytest.mark.kafka

FOLLOWUP_S = 3.0
NODES = ("node-00", "node-01", "node-02")
SPEC = AppSpec("kse2e", partitions=6, followup_ms=int(FOLLOWUP_S * 1000))
# a follow-up rebalance fires FOLLOWUP_S after the previous one; the moved tasks' restore and
# the instances' next stats snapshot come on top (a loaded 2-core machine: generous)
APPLY_WITHIN_S = FOLLOWUP_S + 12.0


@pytest.fixture(scope="module")
def app(broker: Broker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("kstreams-app")
    cluster = Cluster(SPEC, broker.bootstrap, home / "app", home / "published")
    cluster.create_topics()
    try:
        for node in NODES:
            cluster.start(node)
        cluster.produce(6000)
        yield cluster
    finally:
        cluster.stop_all()


def publish(cluster: Cluster, version: int, assignment: dict[str, str]) -> Manifest:
    manifest = Manifest.create(job_id=SPEC.job, version=version, period_end="2026-01-01T00:05:00Z",
                               plan_id=f"p{version}", assignment=assignment)
    write_manifest(cluster.published_root, manifest)
    write_latest(cluster.published_root, SPEC.job, version)
    return manifest


def rotated(current: dict[str, str], by: int) -> dict[str, str]:
    """Every task on another node than now: node i -> node i+by (mod 3)."""
    return {t: NODES[(NODES.index(n) + by) % len(NODES)] for t, n in current.items()}


def test_default_assignor_until_something_is_published(app: Cluster) -> None:
    running = wait_for(app.reported_assignment, 90, "all tasks running on the three instances")
    assert set(running.values()) == set(NODES)
    assert app.applied() is None
    assert log_lines(app.home, "falls back to Kafka's StickyTaskAssignor: nothing published yet")


def test_published_version_is_what_kafka_streams_runs_within_the_followup_delay(
        app: Cluster) -> None:
    before = wait_for(app.reported_assignment, 60, "a stable assignment")
    target = rotated(before, 1)
    publish(app, 1, target)
    t0 = time.monotonic()
    wait_for(lambda: app.reported_assignment() == target, APPLY_WITHIN_S,
             f"v1 applied within {APPLY_WITHIN_S:.0f} s")
    took = time.monotonic() - t0
    applied = app.applied()
    assert applied is not None and applied["version"] == 1 and applied["assignment"] == target
    assert took <= APPLY_WITHIN_S
    # every task moved, so each was restored from its changelog on its new instance
    restored = {r["task"] for snap in app.stats().values() for r in snap["restores"]
                if r["end_ms"] >= applied["applied_at_ms"]}
    assert restored == set(target)


def test_tampered_manifest_is_refused_and_the_applied_version_kept(app: Cluster) -> None:
    # (a follow-up rebalance may be under way: None until every task runs again)
    v1 = wait_for(app.reported_assignment, 30, "a settled assignment")
    assert app.applied()["version"] == 1  # type: ignore[index]
    honest = Manifest.create(job_id=SPEC.job, version=2, period_end="2026-01-01T00:10:00Z",
                             plan_id="p2", assignment=rotated(v1, 1))
    body = json.loads(honest.to_json())
    body["assignment"]["0_0"] = v1["0_0"]  # altered after the checksum was computed
    assert assignment_checksum(body["assignment"]) != body["checksum"]
    manifest_path(app.published_root, SPEC.job, 2).write_text(json.dumps(body), encoding="utf-8")
    latest_path(app.published_root, SPEC.job).write_text("2\n", encoding="ascii")
    wait_for(lambda: log_lines(app.home, "keeps v1: refused") or None, APPLY_WITHIN_S,
             "the refusal logged")
    assert any("does not match the assignment" in line
               for line in log_lines(app.home, "keeps v1: refused"))
    time.sleep(FOLLOWUP_S)  # one more follow-up rebalance: still v1
    assert wait_for(app.reported_assignment, 30, "a settled assignment") == v1
    assert app.applied()["version"] == 1  # type: ignore[index]


def test_older_manifest_is_refused_and_the_newer_kept(app: Cluster) -> None:
    v1 = wait_for(app.reported_assignment, 30, "a settled assignment")
    target = rotated(v1, 2)
    publish(app, 3, target)
    wait_for(lambda: app.reported_assignment() == target, APPLY_WITHIN_S, "v3 applied")
    latest_path(app.published_root, SPEC.job).write_text("1\n", encoding="ascii")  # backwards
    wait_for(lambda: log_lines(app.home, "keeps v3: refused") or None, APPLY_WITHIN_S,
             "the stale version refused")
    assert any("older than v3" in line for line in log_lines(app.home, "keeps v3: refused"))
    assert wait_for(app.reported_assignment, 30, "a settled assignment") == target
    assert app.applied()["version"] == 3  # type: ignore[index]
    write_latest(app.published_root, SPEC.job, 3)  # repaired for the next test


def test_killed_instance_kafka_streams_recovers_on_the_others(app: Cluster) -> None:
    assert app.stop("node-02", kill=True) == "killed"
    survivors = {"node-00", "node-01"}
    # the group notices at the session timeout (10 s); v3 names node-02, so the assignor falls
    # back to Kafka's sticky assignor over the two survivors and says why
    def on_survivors() -> dict[str, str] | None:
        now = app.reported_assignment()
        return now if now is not None and set(now.values()) <= survivors else None

    after = wait_for(on_survivors, 60, "all tasks on the survivors")
    assert sorted(after) == SPEC.units()
    assert log_lines(app.home, "names node(s) not in the group now: [node-02]")
    assert app.nodes() == sorted(survivors)
    assert app.applied()["version"] == 3  # type: ignore[index]  # the fallback applied nothing


def test_restarted_instance_gets_the_applied_version_back(app: Cluster) -> None:
    kept_before = len(log_lines(app.home, "keeps v3: v3 is already running"))
    app.start("node-02")
    applied = app.applied()
    assert applied is not None and applied["version"] == 3
    wait_for(lambda: app.reported_assignment() == applied["assignment"], 60 + APPLY_WITHIN_S,
             "v3 running again on all three instances")
    assert len(log_lines(app.home, "keeps v3: v3 is already running")) > kept_before
