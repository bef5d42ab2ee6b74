"""The open-loop producer and the latency probe on the real broker, at a low rate: two instances
of the flights application (in one JVM, as the load benchmark runs them) with a known capacity
(a per-record cost waited out), fed routes' keys; every record produced gets a result the probe
reads, its latency and the lag recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.kafka_streams.broker import Broker
from runtime.kafka_streams.cluster import AppSpec, Cluster, wait_for
from runtime.kafka_streams.latency import merge, percentile, utilisation, window
from runtime.kafka_streams.load import KeySpec, LoadGenerator, Probe, ProbedApp

pytestmark = pytest.mark.kafka

COST_US = 2000.0  # 500 records/s per instance of capacity 1


def test_open_loop_load_latency_and_lag(broker: Broker, tmp_path: Path) -> None:
    spec = AppSpec("load", partitions=4, input_topic="load-in", output_topic="load-out",
                   default_assignor=True, cost_us=COST_US, commit_ms=200, linger_ms=5)
    cluster = Cluster(spec, broker.bootstrap, tmp_path / "app", tmp_path / "published")
    app = ProbedApp("default", spec.input_topic, spec.output_topic, spec.app_id)
    gen = LoadGenerator(broker.bootstrap, [spec.input_topic], tmp_path / "load",
                        KeySpec("routes"))
    probe = Probe(broker.bootstrap, [app], tmp_path / "probe")
    try:
        cluster.create_topics()
        cluster.start_shared({"node-00": 1.0, "node-01": 2.0})
        wait_for(cluster.reported_assignment, 120, "both instances running",
                 logs=cluster.home / "logs")
        probe.start()
        gen.start()
        before = cluster.stats()
        t0 = probe.now_ms()
        gen.set_rate(100.0)
        wait_for(lambda: gen.sent() >= 600 or None, 60, "600 records sent")
        sent = gen.pause()

        def all_out() -> bool:
            lines = probe.lines()
            return bool(lines) and lines[-1].out_total >= sent and lines[-1].backlog == 0
        wait_for(all_out, 90, f"results of all {sent} records read")
        after = cluster.stats()
        lines = probe.lines()
    finally:
        gen.close()
        probe.close()
        cluster.stop_all()
    assert sent >= 600
    assert lines[-1].out_total == sent  # one result per record, none lost or doubled
    assert lines[-1].end == sent and lines[-1].backlog == 0
    # per partition too (what the load benchmark's data bound is computed from)
    assert len(lines[-1].ends) == 4 and sum(lines[-1].ends) == sent
    hist = merge(ln.lat for ln in lines)
    assert sum(hist.values()) == sent
    p50, p99 = percentile(hist, 50), percentile(hist, 99)
    assert p50 is not None and p99 is not None and 0 <= p50 <= p99
    w = window(lines, "default", t0, probe.now_ms() + 1)
    assert w.results == sent and w.p99 == p99
    assert w.lag_max >= 0 and all(ln.committed <= ln.end for ln in lines if ln.end >= 0)
    # the service cost is charged: each record costs COST_US / capacity on its instance
    charged = 0.0
    for node, snap in after.items():
        records = sum(t["in"] - before[node]["tasks"].get(k, {}).get("in", 0)
                      for k, t in snap["tasks"].items())
        busy = sum(t["proc_ns"] - before[node]["tasks"].get(k, {}).get("proc_ns", 0)
                   for k, t in snap["tasks"].items())
        cost_ns = COST_US * 1000 / snap["capacity"]
        assert busy >= records * cost_ns
        assert snap["waited_ns"] > 0 or records * cost_ns < 1e6
        charged += records
    assert charged == sent
    util = utilisation(before, after)
    assert set(util) == {"node-00", "node-01"} and all(0 < u < 1 for u in util.values())
    assert {s["capacity"] for s in after.values()} == {1.0, 2.0}
    assert len({s["pid"] for s in after.values()}) == 1  # one JVM, two instances
    assert not cluster.nodes()
