"""A Spark standalone cluster for `reconf bench cycle`'s `+cluster` modes (infra/spark-cluster.sh).

The `+cluster` modes run the stages as drivers of a standalone cluster (`RECONF_SPARK_MASTER`,
`RECONF_LAKE_IO=spark`): the lake read and written by Spark, collect's aggregation on the
executors (jobs/collect/by_spark.py), as a job that outgrew one machine would run. The bench
starts its own small cluster on free ports (2 workers x 1 core, `--cluster-memory` each) under
its work directory and stops exactly those processes at the end, unless `--master` names one.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Cluster", "start_cluster"]

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
    from reconf.procs import free_port

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
