"""A manifest's move schedule applied by ReconfTaskAssignor on a real broker and three real Kafka
Streams instances, through the job's metrics source (KafkaStreamsJob) and the stop flag, in the
order a deployment lives through:

- v1 without a schedule is applied at once, as before schedules existed (no execution recorded);
- v2's three waves are handed out in order: the instances are observed running wave 1's
  assignment, then wave 2's, then the plan's; the period report shows each wave (tasks moved,
  state bytes, changelog records, seconds);
- a stop request (`reconf stop --job J`'s flag) while v3's first wave runs: the wave finishes, the schedule stops, wave
  1's assignment keeps running, `apply` says so and the period report carries it (the next plan
  starts from it);
- v4's waves start from that partial assignment, paced under a byte rate, and end on v4's;
- kill -9 of v5's destination instance mid-wave: the schedule fails, every task runs on the
  survivors, and once the instance is back the failed schedule's assignment runs and is reported.

One test, one application: Kafka tests are slow (each instance is a JVM).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from runtime.execution import Execution, request_stop
from runtime.kafka_streams.broker import Broker
from runtime.kafka_streams.cluster import Cluster, wait_for
from runtime.kafka_streams.source import KafkaStreamsJob
from runtime.kafka_streams.spec import KStreamsSpec
from schemas.landing import read_runtime_report
from schemas.manifest import Manifest, write_latest, write_manifest
from schemas.schedule import Schedule, ScheduledMove, Wave, WaveLimits
from tests.kafka.conftest import log_lines

pytestmark = pytest.mark.kafka

JOB = "kswaves"
NODES = ("node-00", "node-01", "node-02")
UNITS = tuple(f"0_{p}" for p in range(6))
P1 = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
STEP = timedelta(minutes=5)
# a wave stays handed out at least one poll: long enough to observe it in the stats snapshots
SPEC = KStreamsSpec(JOB, nodes=3, partitions=6, records_per_period=1500, followup_ms=3000,
                    wave_poll_ms=2000, apply_timeout_s=60.0)
def on(by: int) -> dict[str, str]:
    """Task 0_i on node (i + by) mod 3."""
    return {u: NODES[(i + by) % 3] for i, u in enumerate(UNITS)}


def publish(source: KafkaStreamsJob, version: int, target: dict[str, str],
            waves: list[list[str]] | None = None, start: dict[str, str] | None = None,
            rate: float | None = None) -> Manifest:
    """Publish `target`; with `waves` (tasks per wave) a schedule moving them from `start`, paced
    at `rate` state bytes per second."""
    schedule = None
    if waves is not None and start is not None:
        m = Manifest.create(job_id=JOB, version=version, period_end=P1, plan_id=f"p{version}",
                            assignment=target)
        seq = tuple(Wave(tuple(ScheduledMove(t, start[t], target[t], 1000.0 * (i + 1))
                               for t in wave), 50.0) for i, wave in enumerate(waves))
        limits = WaveLimits(max_moves_per_node=2, max_bytes_per_second=rate)
        schedule = Schedule.sealed(seq, limits, m.checksum)
    manifest = Manifest.create(job_id=JOB, version=version, period_end=P1, plan_id=f"p{version}",
                               assignment=target, schedule=schedule)
    write_manifest(source.published_root, manifest)
    write_latest(source.published_root, JOB, version)
    return manifest


def after(start: dict[str, str], target: dict[str, str], *waves: list[str]) -> dict[str, str]:
    """`start` with the tasks of `waves` on their target node."""
    return {**start, **{t: target[t] for wave in waves for t in wave}}


def observe(cluster: Cluster, version: int, timeout_s: float) -> list[tuple[int, dict[str, str]]]:
    """(wave handed out, settled assignment the instances report) each time the latter changes,
    until `version`'s schedule has ended."""
    seen: list[tuple[int, dict[str, str]]] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ex = cluster.execution()
        now = cluster.reported_assignment()
        if ex is not None and int(ex["version"]) == version and now is not None and (
                not seen or seen[-1][1] != now):
            seen.append((int(ex["current"]), now))
        if ex is not None and int(ex["version"]) == version and ex["status"] != "running" \
                and now is not None and now == dict(ex["assignment"]):
            return seen
        time.sleep(0.15)
    raise AssertionError(f"v{version}'s schedule did not end within {timeout_s} s: {seen}")


def test_schedule_waves_in_order_then_stop_between_waves(
        broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONF_KAFKA_BOOTSTRAP", broker.bootstrap)
    home = tmp_path / "home"
    source = KafkaStreamsJob(SPEC, home, home / "published")
    landing = home / "landing"
    try:
        source.land_period(landing, P1)
        cluster = source.cluster()

        # v1 without a schedule: applied at once, as before; no execution recorded
        base = on(0)
        publish(source, 1, base)
        applied = source.apply_latest(source.published_root)
        assert applied.status == "applied" and applied.version == 1, applied.reason
        assert cluster.execution() is None

        # v2: three waves of two tasks each, handed out in order
        v2 = on(1)
        waves = [["0_0", "0_1"], ["0_2", "0_3"], ["0_4", "0_5"]]
        publish(source, 2, v2, waves, base)
        seen = observe(cluster, 2, 120)
        w1, w2 = after(base, v2, waves[0]), after(base, v2, *waves[:2])
        states = [a for _, a in seen]
        assert w1 in states and w2 in states and states[-1] == v2, seen
        assert states.index(w1) < states.index(w2) < len(states) - 1
        assert (1, w1) in seen and (2, w2) in seen  # observed while the assignor was on that wave
        ex = cluster.execution()
        assert ex is not None and ex["status"] == "done" and ex["waves"] == 3
        assert [sorted(r["moved"]) for r in ex["runs"]] == waves
        assert [r["state_bytes"] for r in ex["runs"]] == [2000.0, 4000.0, 6000.0]
        assert all(r["seconds"] > 0 and not r["failed"] for r in ex["runs"])
        assert sum(r["changelog_records"] for r in ex["runs"]) > 0  # the stores were restored
        assert (cluster.applied() or {})["version"] == 2
        applied = source.apply_latest(source.published_root)
        assert applied.status == "applied" and applied.version == 2, applied.reason
        assert "moved in 3 wave(s)" in applied.reason
        record = json.loads((source.app_dir / "periods" / "apply-v2.json").read_text())
        assert [sorted(r["moved"]) for r in record["waves"]] == waves
        assert record["restored_records"] > 0  # restores of every wave, not only after the last
        report = read_runtime_report(source.land_period(landing, P1 + STEP))
        assert report is not None and report.version == 2 and report.assignment is None
        execution: Any = report.execution
        assert execution["status"] == "done" and len(execution["runs"]) == 3
        assert "wave 3 of 3, 6 unit(s) moved, 12000 state bytes" in execution["summary"]
        assert "plan" not in execution  # the assignor's bookkeeping stays out of the report

        # v3: two waves; `reconf stop` while the first runs: it finishes, the second never starts
        v3 = on(2)
        waves3 = [["0_0", "0_1", "0_2"], ["0_3", "0_4", "0_5"]]
        publish(source, 3, v3, waves3, v2)
        wait_for(lambda: (cluster.execution() or {}).get("version") == 3
                 and cluster.execution()["current"] == 1, 60,  # type: ignore[index]
                 "v3's first wave handed out", every_s=0.1)
        # what `reconf stop --job J` does (its own process would start too slowly to land
        # within one wave on a loaded machine; tests/runtime/test_stop_command.py runs the command)
        request_stop(home / "runtime", JOB, "test")
        partial = after(v2, v3, waves3[0])
        seen3 = observe(cluster, 3, 90)
        ex = cluster.execution()
        assert ex is not None and ex["status"] == "stopped" and len(ex["runs"]) == 1, ex
        assert sorted(ex["runs"][0]["moved"]) == waves3[0]
        assert seen3[-1][1] == partial
        assert not (home / "runtime" / JOB / "STOP").exists()  # the flag was consumed
        time.sleep(2 * SPEC.followup_ms / 1000)  # more follow-up rebalances: still wave 1's
        assert wait_for(cluster.reported_assignment, 30, "a settled assignment") == partial
        assert cluster.execution() == ex and (cluster.applied() or {})["version"] == 2
        assert log_lines(cluster.home, "keeps the partial assignment of v3")
        kept = source.apply_latest(source.published_root)
        assert kept.status == "unchanged" and "stopped between waves" in kept.reason, kept.reason
        report = read_runtime_report(source.land_period(landing, P1 + 2 * STEP))
        assert report is not None and report.version == 2
        assert report.assignment is not None and dict(report.assignment) == partial
        execution = report.execution
        assert execution["status"] == "stopped" and len(execution["runs"]) == 1
        assert "v3: wave 1 of 2, 3 unit(s) moved" in execution["summary"]

        # v4 (back to v1's assignment): its waves start from the partial assignment, paced at
        # 2000 state bytes/s (wave 2 carries 6000 bytes: it lasts at least 3 s)
        publish(source, 4, base, [["0_0", "0_1", "0_2"], ["0_3", "0_4", "0_5"]], v3, rate=2000.0)
        observe(cluster, 4, 120)
        ex = cluster.execution()
        assert ex is not None and ex["status"] == "done"
        assert [r["state_bytes"] for r in ex["runs"]] == [3000.0, 6000.0]
        assert all(r["seconds"] >= r["state_bytes"] / 2000.0 and r["bytes_per_s"] <= 2000.0
                   and 0 < r["transfer_s"] <= r["seconds"] for r in ex["runs"])
        assert "paced at most 2000 B/s" in Execution.from_dict(ex).summary()
        assert {m["keygroup"]: m["src"] for w in ex["plan"] for m in w} == {
            t: partial[t] for t in UNITS if partial[t] != base[t]}
        assert wait_for(cluster.reported_assignment, 30, "a settled assignment") == base
        assert (cluster.applied() or {})["version"] == 4

        # v5: kill -9 of the instance wave 1 moves a task to, while the wave runs: the group
        # drops it at the session timeout, the schedule fails, no task is lost (all run on the
        # survivors); once it is back, the failed schedule's assignment runs and is reported
        v5 = {**base, "0_0": "node-02", "0_3": "node-01"}
        publish(source, 5, v5, [["0_0"], ["0_3"]], base)
        wait_for(lambda: (cluster.execution() or {}).get("version") == 5, 60,
                 "v5's first wave handed out", every_s=0.05)
        assert cluster.stop("node-02", kill=True) == "killed"
        ex = wait_for(lambda: (cluster.execution() or {}).get("status") == "failed"
                      and cluster.execution(), 90, "v5's waves failed")
        assert len(ex["runs"]) == 1 and ex["runs"][0]["failed"] == ["0_0"]
        survivors = wait_for(cluster.reported_assignment, 90, "every task on the survivors")
        assert sorted(survivors) == list(UNITS) and set(survivors.values()) <= set(NODES[:2])
        report = read_runtime_report(source.land_period(landing, P1 + 3 * STEP))  # restarts it
        partial5 = dict(ex["assignment"])
        assert partial5 == after(base, v5, ["0_0"])
        assert wait_for(lambda: cluster.reported_assignment() == partial5 or None, 60,
                        "the failed schedule's assignment running again")
        assert report is not None and report.execution is not None
        assert report.execution["status"] == "failed" and report.assignment is not None
        assert sorted(report.assignment) == list(UNITS)  # every task somewhere: none lost
    finally:
        source.close()


def test_a_wave_whose_tasks_do_not_run_in_time_fails_and_the_report_says_what_runs(
        broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`wave_timeout_ms` = 1: a moved task cannot be RUNNING on its new instance by the first
    rebalance after its wave is handed out, so the wave fails there. The schedule ends `failed`,
    its tasks go back to their source, the assignor keeps that assignment, and the period report
    carries it (the next plan starts from it)."""
    monkeypatch.setenv("RECONF_KAFKA_BOOTSTRAP", broker.bootstrap)
    spec = KStreamsSpec("kswavefail", nodes=2, partitions=4, records_per_period=800,
                        followup_ms=2000, wave_timeout_ms=1, apply_timeout_s=60.0)
    home = tmp_path / "home"
    source = KafkaStreamsJob(spec, home, home / "published")
    units = [f"0_{p}" for p in range(4)]
    base = {u: ("node-00", "node-01")[i % 2] for i, u in enumerate(units)}
    target = {u: ("node-01", "node-00")[i % 2] for i, u in enumerate(units)}
    try:
        source.land_period(home / "landing", P1)
        cluster = source.cluster()
        for version, assignment, schedule in ((1, base, None), (2, target, "waves")):
            m = Manifest.create(job_id=spec.job_id, version=version, period_end=P1,
                                plan_id=f"p{version}", assignment=assignment)
            if schedule:
                seq = (Wave(tuple(ScheduledMove(u, base[u], target[u], 500.0) for u in units[:2]),
                            40.0),
                       Wave(tuple(ScheduledMove(u, base[u], target[u], 500.0) for u in units[2:]),
                            40.0))
                m = Manifest.create(job_id=spec.job_id, version=version, period_end=P1,
                                    plan_id=f"p{version}", assignment=assignment,
                                    schedule=Schedule.sealed(seq, WaveLimits(), m.checksum))
            write_manifest(source.published_root, m)
            write_latest(source.published_root, spec.job_id, version)
            result = source.apply_latest(source.published_root)
        assert result.status == "partial" and result.version == 1, result.reason
        assert "failed (2 unit(s) could not move: 0_0, 0_1)" in result.reason
        ex = cluster.execution()
        assert ex is not None and ex["status"] == "failed" and len(ex["runs"]) == 1
        assert ex["runs"][0]["moved"] == [] and sorted(ex["runs"][0]["failed"]) == units[:2]
        assert dict(ex["assignment"]) == base  # back on their source; wave 2 never started
        assert log_lines(cluster.home, "not RUNNING on their new instance within 1 ms")
        assert wait_for(lambda: cluster.reported_assignment() == base or None, 60,
                        "the failed wave's tasks back on their source")
        report = read_runtime_report(source.land_period(home / "landing", P1 + STEP))
        assert report is not None and report.version == 1
        assert report.assignment is not None and dict(report.assignment) == base
        execution: Any = report.execution
        assert execution["status"] == "failed" and "wave 1 of 2" in execution["summary"]
        again = source.apply_latest(source.published_root)
        assert again.status == "unchanged" and "keeps the partial assignment" in again.reason
    finally:
        source.close()
