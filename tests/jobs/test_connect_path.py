"""The stages over Spark Connect write the same Delta tables as with an in-process session,
and as delta-rs does.

Home A runs two cycles of the tiny job in this process on the session's in-process Spark, its
reads and writes by Spark (`RECONF_LAKE_IO=spark`); home B runs the same two cycles in a
subprocess whose stages are thin clients of a real Spark Connect server (`connect_url`, started
by the test set-up), by Spark too; home C runs them in this process with the default, the lake's
small reads and writes by delta-rs (jobs/lake/write.py). Every contract table must then hold the
same rows, schema, partitioning and number of commits; only what names a run or a place differs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pipeline_kit import JOB_ID, P1, P2, land, run_cycle, stamp, untimed_plan

from jobs.lake.base import delta_path, read_table, table_version
from runtime.procs import free_port
from schemas.config import PROJECT_ROOT, Paths
from schemas.tables import (
    COMM_TOTALS,
    HEALINGS,
    LOAD_MODEL,
    NETWORK_LINKS,
    SOURCE_STATS,
    STREAM_STATS,
    SUBSCRIPTIONS,
    TABLES,
)

#: the tables neither path writes for this job: the facet tables (it declares no sources or
#: streams), comm_totals (its runtime lands every pair: nothing is cut to a top k) and healings
#: (healing is off)
FACETS = {t.name for t in (SOURCE_STATS, SUBSCRIPTIONS, STREAM_STATS, LOAD_MODEL, NETWORK_LINKS,
                           COMM_TOTALS, HEALINGS)}

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

# Columns (and plan JSON keys) that name a run, a collect or a place, or tell a wall time, not a
# result.
VOLATILE = {"mlflow_run_id", "collect_id", "solve_s", "manifest_path", "published_at", "message",
            "wall_s"}
CYCLES = """
import sys
from jobs.spark.session import get_spark
from jobs.run import run_collect, run_plan, run_publish, run_validate
for period in sys.argv[1:]:
    print(run_collect("tiny", period))
    print(run_validate("tiny", period))
    run_plan("tiny", period)
    print("STATUS", run_publish("tiny", period).status)
print("SESSION", type(get_spark()).__module__)
"""


def _frame(spark: SparkSession, paths: Paths, table: str) -> Any:
    frame: Any = read_table(spark, paths, table).toPandas()
    frame = frame.drop(columns=[c for c in frame.columns if c in VOLATILE])
    if "plan_json" in frame.columns:  # the plan minus its wall times (its phases' seconds too)
        frame["plan_json"] = [json.dumps(untimed_plan({k: v for k, v in json.loads(x).items()
                                                       if k not in VOLATILE}), sort_keys=True)
                              for x in frame["plan_json"]]
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)


def _partitioning(spark: SparkSession, paths: Paths, table: str) -> list[str]:
    detail = spark.sql(f"DESCRIBE DETAIL {delta_path(paths.table(table))}").first()
    assert detail is not None
    return list(detail["partitionColumns"])


def test_connect_and_in_process_paths_write_identical_tables(
    spark: SparkSession, connect_url: str, config_file: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RECONF_SPARK_REMOTE", raising=False)
    monkeypatch.setenv("RECONF_CONFIG", str(config_file))
    classic, remote = Paths(tmp_path / "classic"), Paths(tmp_path / "connect")

    native = Paths(tmp_path / "native")
    for period_end in (P1, P2):
        land(remote, period_end)
    script = tmp_path / "cycles.py"
    script.write_text(CYCLES)
    env = {**os.environ, "RECONF_HOME": str(remote.home), "RECONF_SPARK_REMOTE": connect_url,
           "RECONF_LAKE_IO": "spark"}
    # The homes share nothing: the Connect cycles run while this process runs the others (their
    # output to files: a full pipe would stall them while nobody reads it).
    out, err = tmp_path / "connect.out", tmp_path / "connect.err"
    with out.open("w") as o, err.open("w") as e, subprocess.Popen(
            [sys.executable, str(script), stamp(P1), stamp(P2)], env=env, cwd=PROJECT_ROOT,
            stdout=o, stderr=e) as connect:
        try:
            for home, io in ((native, "native"), (classic, "spark")):
                monkeypatch.setenv("RECONF_LAKE_IO", io)
                monkeypatch.setenv("RECONF_HOME", str(home.home))
                for period_end in (P1, P2):
                    land(home, period_end)
                    run_cycle(JOB_ID, period_end)
            connect.wait(timeout=900)
        finally:
            if connect.poll() is None:  # a side in this process failed, or the Connect side hangs
                connect.kill()
                connect.wait()
    stdout = out.read_text()
    assert connect.returncode == 0, err.read_text()[-4000:]
    assert "SESSION pyspark.sql.connect.session" in stdout  # really the Connect client
    assert stdout.count("STATUS published") == 2

    # The classic home's side of each comparison, read once for both others.
    ours = {name: _frame(spark, classic, name) for name in TABLES}
    shape = {name: (read_table(spark, classic, name).schema, _partitioning(spark, classic, name),
                    table_version(spark, classic, name)) for name in TABLES if name not in FACETS}
    for other in (remote, native):
        for name in TABLES:
            a, b = ours[name], _frame(spark, other, name)
            if name in FACETS:
                assert a.empty and b.empty, name
                continue
            assert not a.empty, name
            assert list(a.columns) == list(b.columns), name
            assert a.equals(b), (f"{name} differs in {other.home.name}:\n"
                                 f"{a.compare(b) if a.shape == b.shape else (a, b)}")
            schema, partitioning, version = shape[name]
            assert schema == read_table(spark, other, name).schema
            assert partitioning == _partitioning(spark, other, name) == ["job_id"]
            assert version == table_version(spark, other, name), name
        for version in (1, 2):  # the manifests agree on what the runtime applies
            ma = json.loads((classic.published / JOB_ID / f"v{version}.json").read_text())
            mb = json.loads((other.published / JOB_ID / f"v{version}.json").read_text())
            assert ma["assignment"] == mb["assignment"] and ma["checksum"] == mb["checksum"]


def _collect_with(remote: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    # collect through Spark (by default it reads and writes with delta-rs and asks for none)
    env = {**os.environ, "RECONF_HOME": str(tmp_path), "RECONF_SPARK_REMOTE": remote,
           "RECONF_LAKE_IO": "spark"}
    land_args = ["--job", "demo", "--period-end", "2026-01-01T00:05:00Z"]
    subprocess.run([sys.executable, "-m", "reconf.cli", "land", *land_args], env=env,
                   cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300, check=True)
    return subprocess.run([sys.executable, "-m", "reconf.cli", "collect", *land_args], env=env,
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.parametrize("remote, message", [
    ("sc://127.0.0.1:{port}", "no Spark Connect server answers at sc://127.0.0.1:"),
    ("http://127.0.0.1:{port}", "is not a Spark Connect URL"),
])
def test_a_connect_url_that_does_not_answer_is_one_clear_error(
    remote: str, message: str, tmp_path: Path
) -> None:
    done = _collect_with(remote.format(port=free_port()), tmp_path)
    assert done.returncode == 2
    assert message in done.stderr and "fix:" in done.stderr and "RECONF_SPARK_REMOTE" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "lake").exists()  # nothing was written
