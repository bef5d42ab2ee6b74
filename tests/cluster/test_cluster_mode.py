"""Cluster mode: `infra/spark-cluster.sh` starts a standalone master and two workers on loopback,
and a stage submitted to it (`spark-submit jobs/submit.py …`) writes exactly the Delta rows the
in-process (local[2]) run writes from the same landed input. (Fleet planning on the cluster's
executors runs in `reconf bench fleet`; its equivalence with the per-job path is
tests/cluster/test_fleet.py, on local[2] executors: one more cluster submission costs ~1 min.)

One cluster per module (starting it costs ~15-30 s), on free ports and its own RECONF_HOME, so
it never meets an operator's cluster on 7077.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pandas.testing import assert_frame_equal
from pipeline_kit import P1

from cluster.fleet_kit import (
    CLUSTER_SCRIPT,
    free_port,
    land_all,
    sorted_rows,
    subprocess_env,
    write_config,
)
from schemas.config import Paths, resolve_job
from schemas.landing import format_period_end

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@dataclass(frozen=True)
class Cluster:
    url: str
    ui_port: int
    env: dict[str, str]  # RECONF_HOME and ports the script was started with

    def script(self, command: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(CLUSTER_SCRIPT), command], env={**self.env, **extra},
                              capture_output=True, text=True, timeout=300, check=False)

    def apps(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=10) as r:
            status = json.load(r)
        return list(status["completedapps"]) + list(status["activeapps"])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("cluster") / "home"
    port, ui_port = free_port(), free_port()
    env = {**subprocess_env(Paths(home), home / "unused.toml"),
           "RECONF_SPARK_PORT": str(port), "RECONF_SPARK_UI_PORT": str(ui_port)}
    c = Cluster(f"spark://127.0.0.1:{port}", ui_port, env)
    up = c.script("up")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert up.stdout.strip().splitlines()[-1] == c.url
        yield c
    finally:
        down = c.script("down")
        assert down.returncode == 0, down.stderr
        assert not list((home / "run" / "spark").glob("*.pid"))
        assert c.script("status").returncode == 3


def test_cluster_script_up_twice_and_down_without_up(cluster: Cluster, tmp_path: Path) -> None:
    pids = sorted(p.read_text() for p in
                  (Path(cluster.env["RECONF_HOME"]) / "run" / "spark").glob("*.pid"))
    assert len(pids) == 3  # master + 2 workers
    again = cluster.script("up")
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("already running") == 3 and "started" not in again.stdout
    assert sorted(p.read_text() for p in
                  (Path(cluster.env["RECONF_HOME"]) / "run" / "spark").glob("*.pid")) == pids
    status = cluster.script("status")
    assert status.returncode == 0 and "registered workers: 2/2" in status.stdout
    elsewhere = cluster.script("down", RECONF_HOME=str(tmp_path / "never-started"))
    assert elsewhere.returncode == 0 and "not running" in elsewhere.stdout
    assert cluster.script("status").returncode == 0  # the real cluster is untouched


def _submit(cluster: Cluster, paths: Paths, config: Path, *args: str) -> str:
    from jobs.submit import submit_command

    done = subprocess.run(submit_command(cluster.url, *args), env=subprocess_env(paths, config),
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done.stdout


def test_cluster_collect_matches_local(spark: SparkSession, home: Paths, tmp_path: Path,
                                               cluster: Cluster,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from jobs.collect.stage import collect

    config = write_config(tmp_path)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    job = resolve_job("fb", config)
    land_all(home, P1, config)
    on_cluster = Paths(tmp_path / "cluster-home")
    shutil.copytree(home.home, on_cluster.home)  # the same landed input, the same empty tables
    stamp = format_period_end(P1)
    apps_before = len(cluster.apps())

    collect(job, P1, paths=home, spark=spark)
    out = _submit(cluster, on_cluster, config, "collect", "--job", "fb", "--period-end", stamp)
    assert f"collect fb@{stamp}" in out
    for table in ("keygroup_stats", "comm_stats", "node_stats"):
        local, remote = sorted_rows(spark, home, table), sorted_rows(spark, on_cluster, table)
        assert len(local) > 0
        assert_frame_equal(remote, local, check_exact=True, obj=table)

    apps = cluster.apps()  # the submission ran as an application of this master, on executors
    assert len(apps) == apps_before + 1
    assert apps[-1]["state"] == "FINISHED" and apps[-1]["cores"] >= 1, apps[-1]
