"""An instance killed mid-period, through reconf's own stages: Kafka Streams recovers on the
survivors, the period's runtime report (`_RUNTIME.json`) and its tasks' nodes say what ran after
the kill, and the next plan (collect → validate → plan, real Spark/Delta) starts from exactly
that assignment — not from the published version the dead instance was part of — and places
every task on a live instance."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from runtime.kafka_streams.broker import Broker
from runtime.kafka_streams.source import KafkaStreamsJob
from schemas.config import Paths, resolve_job
from schemas.landing import RUNTIME_REPORT, read_runtime_report

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

JOB = "kskill"
P1 = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
P2 = P1 + timedelta(minutes=5)
CONFIG = f"""\
[defaults]
spl = "5m"
strategy = "greedy"
max_migrations = 2

[jobs.{JOB}]
source = {{ kind = "kafka-streams", nodes = 3, partitions = 6, records_per_period = 3000, followup_ms = 2000 }}
"""


def test_killed_instance_next_plan_starts_from_what_ran(
        broker: Broker, home: Paths, spark: object, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from jobs.collect.stage import collect
    from jobs.plan.stage import plan_period
    from jobs.publish.stage import publish_period
    from jobs.validate.stage import validate_period
    from reconf.settings import make_source

    config = tmp_path / "jobs.toml"
    config.write_text(CONFIG)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.setenv("RECONF_KAFKA_BOOTSTRAP", broker.bootstrap)
    job = resolve_job(JOB, config)
    source = make_source(job, home)
    assert isinstance(source, KafkaStreamsJob)

    def land_collect_validate(period_end: datetime) -> Path:
        landed = source.land_period(home.landing, period_end)
        collect(job, period_end, paths=home, spark=spark)  # type: ignore[arg-type]
        validate_period(job, period_end, paths=home, spark=spark)  # type: ignore[arg-type]
        return landed

    try:
        # P1 on three instances; its plan published as v1 and applied by Kafka Streams
        land_collect_validate(P1)
        plan_period(job, P1, paths=home, spark=spark)  # type: ignore[arg-type]
        published = publish_period(job, P1, paths=home, spark=spark)  # type: ignore[arg-type]
        assert published.version == 1
        applied = source.apply_latest(home.published)
        assert applied.status in {"applied", "unchanged"}, applied.reason
        cluster = source.cluster()
        v1 = dict((cluster.applied() or {})["assignment"])
        assert set(v1.values()) == {"node-00", "node-01", "node-02"}

        # P2: the instance holding the most tasks is killed (SIGKILL) once the period started
        victim = max(sorted(set(v1.values())), key=lambda n: sum(x == n for x in v1.values()))
        survivors = sorted({"node-00", "node-01", "node-02"} - {victim})
        produce = cluster.produce

        def killed_then_produce(count: int) -> int:
            assert cluster.stop(victim, kill=True) == "killed"
            return produce(count)

        monkeypatch.setattr(cluster, "produce", killed_then_produce)
        p2 = land_collect_validate(P2)
        monkeypatch.setattr(cluster, "produce", produce)

        # what ran after the kill: every task on a survivor, the report naming only them
        ran = {r["keygroup"]: r["node"] for r in pq.read_table(p2 / "keygroups").to_pylist()}
        assert sorted(ran) == [f"0_{p}" for p in range(6)]
        assert set(ran.values()) <= set(survivors)
        assert ran != v1  # the victim's tasks ran elsewhere
        report = read_runtime_report(p2)
        assert report is not None and sorted(report.nodes) == survivors
        raw = json.loads((p2 / RUNTIME_REPORT).read_text())
        assert raw["nodes"] == survivors
        # Kafka Streams did not run v1 (its victim is gone): the report must not claim it
        assert report.version != 1

        # the next plan starts from what ran, and places every task on a live instance
        planned = plan_period(job, P2, paths=home, spark=spark)  # type: ignore[arg-type]
        plan = planned.plan
        moved = {m.keygroup: m for m in plan.moves}
        assert all(m.src == ran[t] for t, m in moved.items())
        assert {t: n for t, n in plan.assignment.items() if t not in moved} == {
            t: n for t, n in ran.items() if t not in moved}
        assert set(plan.assignment.values()) <= set(survivors)
        assert len(plan.moves) <= 2  # max_migrations
    finally:
        source.close()
