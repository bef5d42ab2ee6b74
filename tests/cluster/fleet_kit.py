"""Three tiny jobs for the fleet and cluster-mode tests, and how to compare what two homes wrote.

Tiny instances solve to optimality well within the time limit, so the MILP's plan does not
depend on how fast the machine is: the fleet and the per-job path must produce the same rows.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline_kit import untimed_plan

from schemas.config import Paths, load_jobs
from schemas.landing import format_period_end

if TYPE_CHECKING:
    from datetime import datetime

    import pandas as pd
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = ROOT / "infra" / "spark-cluster.sh"
JOB_IDS = ("fa", "fb", "fc")

CONFIG = """\
[defaults]
spl = "5m"
strategy = "milp"
max_migrations = 3
solver_time_limit_s = 30
alpha = 1e-6
start_date = 2026-01-01T00:00:00Z

[jobs.fa]
source = { kind = "synthetic", operators = 2, keygroups_per_operator = 4, nodes = 3, seed = 7, varies = 30 }

[jobs.fb]
max_migrations = 2
source = { kind = "synthetic", operators = 2, keygroups_per_operator = 5, nodes = 3, seed = 11, varies = 40 }

[jobs.fc]
strategy = "greedy"
source = { kind = "synthetic", operators = 3, keygroups_per_operator = 3, nodes = 4, seed = 3, varies = 20 }
"""

# Columns that legitimately differ between two runs of the same plan (and, in `message`, the
# solver's timings: "solve 0.055s").
VOLATILE = {"mlflow_run_id", "solve_s", "plan_json"}
_SECONDS = re.compile(r"\d+(\.\d+)?s\b")


def untimed(message: str) -> str:
    return _SECONDS.sub("<t>s", message)
KEYS = {
    "keygroup_stats": ["job_id", "period_end", "keygroup"],
    "comm_stats": ["job_id", "period_end", "src_keygroup", "dst_keygroup"],
    "node_stats": ["job_id", "period_end", "node"],
    "plans": ["job_id", "period_end"],
    "plan_moves": ["job_id", "period_end", "keygroup"],
}


def write_config(folder: Path) -> Path:
    path = folder / "fleet-jobs.toml"
    path.write_text(CONFIG)
    return path


def land_all(paths: Paths, period_end: datetime, config: Path) -> None:
    """The runtime stand-in lands the period for every job of the config."""
    from reconf.settings import make_source

    for job in load_jobs(config).values():
        make_source(job, paths).land_period(paths.landing, period_end)


def sorted_rows(spark: SparkSession, paths: Paths, table: str) -> pd.DataFrame:
    """A table's rows without the volatile columns, sorted by its key, index reset."""
    from jobs.lake.base import read_table

    frame: Any = read_table(spark, paths, table).toPandas()
    frame = frame[[c for c in frame.columns if c not in VOLATILE]]
    if "message" in frame:
        frame["message"] = frame["message"].map(lambda m: untimed(m or ""))
    return frame.sort_values(KEYS[table]).reset_index(drop=True)


def plan_json_stable(spark: SparkSession, paths: Paths) -> dict[str, dict[str, Any]]:
    """Each job's plan_json without its wall time (the only field timing changes)."""
    import json

    from jobs.lake.base import read_table

    out = {}
    for row in read_table(spark, paths, "plans").select("job_id", "plan_json").collect():
        doc = json.loads(row["plan_json"])
        doc.pop("wall_s", None)
        doc["message"] = untimed(doc.get("message") or "")
        doc = untimed_plan(doc)
        out[row["job_id"]] = doc
    return out


def runs_by_job(paths: Paths, period_end: datetime) -> dict[str, list[Any]]:
    """job -> its MLflow runs (not dry runs) for the period."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    stamp = format_period_end(period_end)
    out: dict[str, list[Any]] = {}
    for job_id in JOB_IDS:
        experiment = client.get_experiment_by_name(job_id)
        runs = [] if experiment is None else client.search_runs(
            [experiment.experiment_id],
            filter_string=f"tags.`reconf.period_end` = '{stamp}' AND tags.`reconf.dry_run` = 'false'")
        out[job_id] = runs
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def subprocess_env(paths: Paths, config: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "RECONF_HOME": str(paths.home), "RECONF_CONFIG": str(config),
           "SPARK_LOCAL_IP": "127.0.0.1", **extra}
    env.pop("RECONF_SPARK_MASTER", None)
    return env
