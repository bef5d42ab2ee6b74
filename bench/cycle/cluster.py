"""A Spark standalone cluster for `reconf bench cycle`'s `+cluster` modes (infra/spark-cluster.sh).

The `+cluster` modes run the stages as drivers of a standalone cluster (`RECONF_SPARK_MASTER`,
`RECONF_LAKE_IO=spark`): the lake read and written by Spark, collect's aggregation on the
executors (jobs/collect/by_spark.py), as a job that outgrew one machine would run. The bench
starts its own small cluster on free ports (2 workers x 1 core, `--cluster-memory` each) under
its work directory and stops exactly those processes at the end, unless `--master` names one.
The `+connect` modes' Spark Connect server likewise (`start_server`), unless `--remote` names one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Cluster", "start_cluster", "start_server"]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "infra" / "spark-cluster.sh"


@dataclass(frozen=True)
class Cluster:
    """A cluster this bench started: its master URL and the environment `down` needs."""

    url: str
    env: dict[str, str]

    def stop(self) -> None:
        subprocess.run([str(SCRIPT), "down"], env=self.env, cwd=ROOT, capture_output=True,
                       text=True, check=False, timeout=120)


def start_cluster(root: Path, memory: str = "1g", workers: int = 2) -> Cluster:
    """Master and workers on free ports, state under `root/cluster`; the URL `up` prints."""
    from runtime.procs import free_port

    env = {**os.environ, "RECONF_HOME": str(root / "cluster"),
           "RECONF_SPARK_PORT": str(free_port()), "RECONF_SPARK_UI_PORT": str(free_port()),
           "RECONF_SPARK_WORKERS": str(workers), "RECONF_SPARK_WORKER_CORES": "1",
           "RECONF_SPARK_WORKER_MEMORY": memory}
    cluster = Cluster(f"spark://127.0.0.1:{env['RECONF_SPARK_PORT']}", env)
    done = subprocess.run([str(SCRIPT), "up"], env=env, cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=600)
    if done.returncode != 0 or cluster.url not in done.stdout:
        cluster.stop()
        raise SystemExit(f"bench cycle: the Spark cluster did not come up:\n{done.stderr[-2000:]}")
    return cluster


def start_server(root: Path) -> tuple[str, Any]:
    """A Spark Connect server on a free port (infra/spark-connect.sh): (URL, its pid record)."""
    from jobs.spark.connect import wait_until_serving
    from runtime.procs import alive, free_port, spawn, stop

    port = free_port()
    url = f"sc://127.0.0.1:{port}"
    env = {**os.environ, "RECONF_PYTHON": sys.executable, "RECONF_HOME": str(root / "server")}
    record = spawn("spark-connect", [str(ROOT / "infra" / "spark-connect.sh"), "--port", str(port)],
                   env=env, cwd=ROOT, run_dir=root / "run", log=root / "spark-connect.log", url=url)
    if not wait_until_serving(url, 300.0, lambda: alive(record)):
        stop(record, grace_s=10)
        raise SystemExit(f"bench cycle: the Spark Connect server did not come up; see {record.log}")
    return url, record
