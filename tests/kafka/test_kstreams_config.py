"""A wrong kafka-streams source table is one message naming the key, exit 2, before any JVM."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.kafka_streams.spec import KStreamsSpec
from schemas.config import PROJECT_ROOT

CONFIG = """
[defaults]
spl = "5m"
start_date = 2026-01-01T00:00:00Z

[jobs.kbad]
source = {{ kind = "kafka-streams", {fields} }}
"""


@pytest.mark.parametrize(("fields", "message"), [
    ("nodes = 0", "nodes must be 1..16"),
    ("nodes = 3, partitions = 2", "partitions must be between nodes (3) and 256"),
    ("nodes = 2, capacities = [1.0]", "capacities must list 2 positive numbers"),
    ("load_metric = \"cpu\"", 'load_metric must be "records" or "processing_time"'),
    ("replicas = 2", "unknown kafka-streams source key(s) ['replicas']"),
    ("rate = -1", "cost_us, rate and hot_spot_period must be >= 0"),
    ("rate = 100, period_wall_s = 1", "period_wall_s must be >= 5 under load"),
    ('keys = "uniform"', 'keys must be "routes" or "zipf"'),
    ("wave_poll_ms = 50", "wave_poll_ms must be >= 200"),
])
def test_bad_source_table(tmp_path: Path, fields: str, message: str) -> None:
    config = tmp_path / "jobs.toml"
    config.write_text(CONFIG.format(fields=fields))
    env = {**os.environ, "RECONF_CONFIG": str(config), "RECONF_HOME": str(tmp_path / "home"),
           "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run([sys.executable, "-m", "reconf.cli", "land", "--job", "kbad",
                           "--period-end", "2026-01-01T00:05:00Z"], env=env, cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "jobs.kbad.source" in done.stderr and message in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "home" / "kafka").exists()  # no broker was started


def test_defaults() -> None:
    spec = KStreamsSpec.from_mapping({"kind": "kafka-streams"}, job_id="k")
    assert spec.node_names == ("node-00", "node-01", "node-02")
    assert spec.capacities == (1.0, 1.0, 1.0) and spec.load_metric == "records"
