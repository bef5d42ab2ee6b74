"""The tiny test job and helpers shared by tests/conftest.py and the tests under tests/jobs/.

(Its own module, not conftest.py: several conftest.py files share that module name, so tests
cannot import from one reliably.)
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemas.config import JobConfig, Paths, resolve_job
from schemas.landing import format_period_end
from schemas.tables import TABLES

if TYPE_CHECKING:
    import pytest
    from pyspark.sql import SparkSession

    from jobs.publish.stage import PublishResult
    from runtime.source import ApplyResult

JOB_ID = "tiny"
OPERATORS, KEYGROUPS_PER_OPERATOR, NODES = 2, 4, 3
MAX_MIGRATIONS = 3
SPL = timedelta(minutes=5)
PERIOD_MS = SPL.total_seconds() * 1000.0
T0 = datetime(2026, 1, 1, tzinfo=UTC)

CONFIG = f"""\
[defaults]
spl = "5m"
strategy = "milp"
max_migrations = {MAX_MIGRATIONS}
solver_time_limit_s = 2
alpha = 1e-6
start_date = 2026-01-01T00:00:00Z

[jobs.{JOB_ID}]
source = {{ kind = "synthetic", operators = {OPERATORS}, keygroups_per_operator = {KEYGROUPS_PER_OPERATOR}, nodes = {NODES}, seed = 7, varies = 30 }}
shadow_strategies = ["greedy", "albic"]  # the what-if after publish: two, to keep DAG tests quick
"""


#: a three-zone WAN for the tiny job's nodes (SPRAWL's tests): sites, links, the sources pinned
WAN_TOPOLOGY = """
[[sites]]
node = "node-00"
zone = "us"
[[sites]]
node = "node-01"
zone = "eu"
cpu_cost = 1.5
[[sites]]
node = "node-02"
zone = "asia"
cpu_cost = 2.0

[[links]]
a = "node-00"
b = "node-01"
latency_ms = 80.0
cost = 4.5
[[links]]
a = "node-01"
b = "node-02"
latency_ms = 160.0
cost = 4.5
[[links]]
a = "node-00"
b = "node-02"
latency_ms = 180.0
cost = 4.5

[pinned]
"op0-kg000" = "node-00"
"op0-kg001" = "node-01"
"op0-kg002" = "node-02"
"""


def period(n: int) -> datetime:
    """End of the n-th period of the tiny job (n >= 1)."""
    return T0 + n * SPL


P1, P2, P3, P4, P5, P6 = (period(n) for n in range(1, 7))


def stamp(period_end: datetime) -> str:
    return format_period_end(period_end)


def tiny_job(config: Path | None = None) -> JobConfig:
    """The tiny job as configured (RECONF_CONFIG unless a file is given)."""
    return resolve_job(JOB_ID, config)


def all_keygroups() -> set[str]:
    from runtime.synthetic import keygroup_name

    return {keygroup_name(o, k) for o in range(OPERATORS) for k in range(KEYGROUPS_PER_OPERATOR)}


def land(paths: Paths, period_end: datetime, job: JobConfig | None = None) -> Path:
    """The runtime stand-in (the job's configured synthetic source) lands one period."""
    from reconf.settings import make_source

    return make_source(job or tiny_job(), paths).land_period(paths.landing, period_end)


def apply_latest(paths: Paths, job: JobConfig | None = None) -> ApplyResult:
    """The runtime stand-in polls and applies the newest published assignment."""
    from reconf.settings import make_source

    return make_source(job or tiny_job(), paths).apply_latest(paths.published)


def run_cycle(job_id: str, period_end: datetime) -> PublishResult:
    """One whole cycle of a landed period through the stage functions the DAG's tasks call."""
    from jobs.run import run_collect, run_plan, run_publish, run_validate

    run_collect(job_id, period_end)
    run_validate(job_id, period_end)
    run_plan(job_id, period_end)
    return run_publish(job_id, period_end)


def delta_versions(paths: Paths) -> dict[str, int]:
    """Each contract table's newest committed Delta version (its newest `_delta_log` commit)."""
    versions = {}
    for name in TABLES:
        log = paths.lake / name / "_delta_log"
        commits = [int(p.stem) for p in log.glob("*.json") if p.stem.isdigit()]
        versions[name] = max(commits, default=-1)
    return versions


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` (relative path -> content); {} when it does not exist."""
    if not root.is_dir():
        return {}
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def snapshot(paths: Paths) -> dict[str, Any]:
    """What a refused stage must leave untouched: Delta commits and files, the published tree."""
    return {
        "delta_versions": delta_versions(paths),
        "lake_files": sorted(tree(paths.lake)),
        "published": tree(paths.published),
    }


def rows(spark: SparkSession, paths: Paths, table: str, where: str | None = None) -> Any:
    """A table's rows (optionally filtered by a SQL predicate) as a pandas frame."""
    from jobs.lake.base import read_table

    df = read_table(spark, paths, table)
    return (df.where(where) if where else df).toPandas()


def of_period(period_end: datetime) -> str:
    """SQL predicate: the tiny job's rows of one period."""
    from jobs.lake.base import period_predicate

    return period_predicate(JOB_ID, period_end)


def latest(paths: Paths) -> str | None:
    """The text of the job's LATEST file, or None when nothing was published."""
    path = paths.published / JOB_ID / "LATEST"
    return path.read_text() if path.exists() else None


def mlflow_runs(paths: Paths, *, dry_run: bool = False) -> list[Any]:
    """The job's MLflow runs: cycle runs, or dry runs if asked."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    experiment = client.get_experiment_by_name(JOB_ID)
    if experiment is None:
        return []
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    flag = str(dry_run).lower()
    return [r for r in runs if r.data.tags.get("reconf.dry_run") == flag]


def untimed_plan(doc: dict[str, Any]) -> dict[str, Any]:
    """A plan's JSON without the seconds of its solver phases (timings, not results)."""
    phases = [{k: v for k, v in p.items() if k != "seconds"} for p in doc.get("phases") or ()]
    return {**doc, "phases": phases} if "phases" in doc else doc


def use_home(
    template: Path, target: Path, monkeypatch: pytest.MonkeyPatch, config: Path
) -> Paths:
    """Copy `template` to `target` and point RECONF_HOME / RECONF_CONFIG at it."""
    shutil.copytree(template, target)
    monkeypatch.setenv("RECONF_HOME", str(target))
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    return Paths.from_env()
