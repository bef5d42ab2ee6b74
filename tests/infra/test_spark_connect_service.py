"""`make up` starts the Spark Connect server with the other services and `make down` stops it.

A real server (infra/spark-connect.sh) on a free port in a throw-away RECONF_HOME, through the
same code as `make up --only spark-connect`; a Connect client in a subprocess checks it serves
Delta SQL, and after `down` nothing of it is left (no JVM, port closed).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.procs import PidRecord, alive, free_port, read_record
from schemas.config import PROJECT_ROOT

pytestmark = pytest.mark.e2e

CLIENT = """
import sys
from jobs.spark.session import get_spark
spark = get_spark()
path = sys.argv[1]
spark.sql(f"CREATE TABLE IF NOT EXISTS delta.`{path}` (job_id STRING, n INT) USING DELTA PARTITIONED BY (job_id)").collect()
spark.sql(f"INSERT INTO delta.`{path}` VALUES ('a', 1), ('a', 2)").collect()
print("ROWS", spark.sql(f"SELECT SUM(n) FROM delta.`{path}`").first()[0], type(spark).__module__)
"""


def _services(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECONF_HOME": str(home)}
    env.pop("RECONF_SPARK_REMOTE", None)
    return subprocess.run([sys.executable, "-m", "reconf.services", *args], env=env,
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600, check=False)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_up_starts_a_delta_enabled_connect_server_and_down_stops_it(tmp_path: Path) -> None:
    home, port = tmp_path / "home", free_port()
    up = _services(home, "up", "--only", "spark-connect", "--spark-connect-port", str(port),
                   "--timeout", "300")
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"RECONF_SPARK_REMOTE=sc://127.0.0.1:{port}" in up.stdout
    assert not (home / "airflow").exists()  # no Airflow migration for Spark alone
    record = read_record(home / "run" / "spark-connect.pid")
    assert isinstance(record, PidRecord) and alive(record)
    assert "java" in Path(f"/proc/{record.pid}/cmdline").read_text(errors="replace")

    env = {**os.environ, "RECONF_HOME": str(home), "RECONF_SPARK_REMOTE": f"sc://127.0.0.1:{port}"}
    client = subprocess.run([sys.executable, "-c", CLIENT, str(tmp_path / "t")], env=env,
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
                            check=False)
    assert client.returncode == 0, client.stderr[-3000:]
    assert "ROWS 3 pyspark.sql.connect.session" in client.stdout
    assert (tmp_path / "t" / "_delta_log").is_dir()

    status = _services(home, "status", "--spark-connect-port", str(port))
    assert f"spark-connect running, pid {record.pid}, healthy" in status.stdout

    down = _services(home, "down", "--grace", "20")
    assert down.returncode == 0, down.stdout + down.stderr
    assert f"spark-connect pid {record.pid}: " in down.stdout
    assert not alive(record) and not _listening(port)
    assert not (home / "run" / "spark-connect.pid").exists()
