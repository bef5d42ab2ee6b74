"""The commands docs/runtime.md shows for Kafka Streams, on real JVMs: `reconf bench
kafka-streams` (small: two arms, two periods) and `reconf demo --job kstreams` (one period through
the real DAG), each leaving no process behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.config import PROJECT_ROOT

pytestmark = pytest.mark.kafka


def _own_jvms(home: Path) -> set[int]:
    """This test's JVMs: a Kafka broker or Streams instance whose command line names a path
    under `home` (its properties file, its state directory). Other tests and other checkouts on
    the machine run their own brokers at the same time; those are not this test's to count."""
    found: set[int] = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if any("dev.reconf.kstreams" in a or a == "kafka.Kafka" for a in argv) and any(
                str(home) in a for a in argv):
            found.add(int(proc.name))
    return found


def _reconf(home: Path, *args: str, timeout: float = 540) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECONF_HOME": str(home), "PYTHONPATH": str(PROJECT_ROOT)}
    for name in ("RECONF_KAFKA_BOOTSTRAP", "RECONF_MLFLOW_URL", "RECONF_MLFLOW_PORT"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "reconf.cli", *args], env=env, cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=timeout)


def test_bench_kafka_streams_small(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    done = _reconf(tmp_path, "bench", "kafka-streams", "--periods", "2", "--arms", "default,greedy",
                   "--records", "3000", "--nodes", "2", "--partitions", "4", "--json", str(out))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = json.loads(out.read_text())
    assert [(r["arm"], r["period"]) for r in rows] == [
        ("default", 1), ("default", 2), ("greedy", 1), ("greedy", 2)]
    assert all(r["lag_at_land"] == 0 and r["records_per_s"] > 0 for r in rows)
    assert all(r["version"] is None for r in rows if r["arm"] == "default")
    assert "target greedy: spread <= half the default's:" in done.stdout
    # the end-to-end lag sampled over each period (records produced, not yet processed): the
    # instances report every 500 ms, so the slice's end finds records not yet counted processed
    assert all(r["lag_max"] >= r["lag_mean"] >= 0 for r in rows)
    assert any(r["lag_max"] > 0 for r in rows)
    assert "lag no worse: " in done.stdout
    assert not _own_jvms(tmp_path)  # the bench stopped its broker and instances


@pytest.mark.e2e
def test_demo_kstreams_one_period(tmp_path: Path) -> None:
    """With `make up`'s MLflow server on a port that is not :5000 (started as `make up
    MLFLOW_PORT=…` starts it), the demo ends with the link to that server."""
    from runtime.procs import free_port

    port = free_port()
    up = _reconf(tmp_path, "up", "--only", "mlflow", "--mlflow-port", str(port))
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        done = _reconf(tmp_path, "demo", "--job", "kstreams", "--periods", "1")
    finally:
        down = _reconf(tmp_path, "down")
    assert down.returncode == 0 and "mlflow" in down.stdout, down.stdout + down.stderr
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"browse http://127.0.0.1:{port}/#/experiments/" in done.stdout, done.stdout[-1000:]
    assert ":5000" not in done.stdout and " ui --backend-store-uri" not in done.stdout
    assert "kafka streams: load % per instance" in done.stdout
    assert "runs v1" in done.stdout and "applied" in done.stdout
    # under the open-loop load: the period's latency and lag beside the load spread
    assert "under load: 400 records/s in" in done.stdout and "p99" in done.stdout
    landed = list((tmp_path / "landing" / "kstreams").glob("period_end=*/_RUNTIME.json"))
    assert len(landed) == 1
    assert not _own_jvms(tmp_path)
    from mlflow import MlflowClient  # the applied migration reached the publishing run

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("kstreams")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id],
                              filter_string="tags.`reconf.assignment_version` = '1'")
    metrics = runs[0].data.metrics
    assert metrics["kstreams_tasks_moved"] == metrics["migrations"] > 0
    assert metrics["kstreams_restored_records"] > 0 and metrics["kstreams_moved_state_bytes"] > 0
    # the period the plan was made from, as the job lived it: on the same run
    assert metrics["kstreams_p99_ms"] >= metrics["kstreams_p50_ms"] >= 0
    assert metrics["kstreams_rate"] == 400 and metrics["kstreams_lag_max"] >= 0
    assert metrics["kstreams_ideal_rate"] == 600  # 3 instances of capacity 1, 5 ms a record
    # the period's latency and lag per second, drawn, on the same run
    assert "kstreams_latency_lag.png" in [a.path for a in client.list_artifacts(runs[0].info.run_id)]
    audit = _reconf(tmp_path, "audit", "--job", "kstreams", "--period-end",
                    runs[0].data.tags["reconf.period_end"])
    assert audit.returncode == 0, audit.stderr[-2000:]
    assert "kafka streams (measured): " in audit.stdout and "p99_ms " in audit.stdout
    assert "kafka streams latency and lag per second: artifact kstreams_latency_lag.png" \
        in audit.stdout
