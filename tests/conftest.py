"""Shared fixtures: one Spark JVM per test session, an isolated RECONF_HOME per test, a tiny job.

Everything is real (Spark + Delta, Great Expectations, MLflow on SQLite); what is shared is only
what is expensive and cannot leak between tests:

- ``spark``: the one Delta-enabled session (`jobs.spark.get_spark`); sessions are process-global.
- ``config_file``: a job config with one tiny synthetic job (2 operators x 4 key groups, 3 nodes,
  2 s solver limit, budget 3 migrations), exported as ``RECONF_CONFIG``.
- ``home``: a fresh ``RECONF_HOME`` (a tmp dir, exported) whose lake already holds the empty
  tables of the contract and whose MLflow store is initialised - a copy of a session template,
  since creating 7 Delta tables and migrating an MLflow DB costs ~10 s per test on a busy box.
  Neither holds an absolute path, so a copy is the same as creating them in place.
- ``collected_home``: the same, with period ``P1`` landed by the runtime stand-in and collected.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from anywhere: the packages live at the repo root
    sys.path.insert(0, str(ROOT))

from schemas.config import JobConfig, Paths, resolve_job  # noqa: E402
from schemas.landing import format_period_end  # noqa: E402
from schemas.tables import TABLES  # noqa: E402

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from runtime.source import ApplyResult

JOB_ID = "tiny"
OPERATORS, KEYGROUPS_PER_OPERATOR, NODES = 2, 4, 3
MAX_MIGRATIONS = 3
SPL = timedelta(minutes=5)
PERIOD_MS = SPL.total_seconds() * 1000.0
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def period(n: int) -> datetime:
    """End of the n-th period of the tiny job (n >= 1)."""
    return T0 + n * SPL


P1, P2, P3 = period(1), period(2), period(3)

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
"""


def stamp(period_end: datetime) -> str:
    return format_period_end(period_end)


# --- session: config, Spark, templates ------------------------------------------------------


@pytest.fixture(scope="session")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("config") / "jobs.toml"
    path.write_text(CONFIG)
    return path


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    from jobs.spark import get_spark

    session = get_spark(Paths(tmp_path_factory.mktemp("spark-home")))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def empty_template(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A RECONF_HOME with every contract table created (empty) and the MLflow store migrated."""
    from mlflow import MlflowClient

    from jobs.lake import ensure_tables

    paths = Paths(tmp_path_factory.mktemp("template-empty") / "home")
    ensure_tables(spark, paths)
    paths.mlflow.mkdir(parents=True)
    MlflowClient(tracking_uri=paths.mlflow_uri).search_experiments()  # creates the schema
    return paths.home


@pytest.fixture(scope="session")
def collected_template(
    spark: SparkSession,
    empty_template: Path,
    config_file: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """``empty_template`` plus period P1 landed by the runtime stand-in and collected."""
    from jobs.collect_stats import collect

    home = tmp_path_factory.mktemp("template-collected") / "home"
    shutil.copytree(empty_template, home)
    paths = Paths(home)
    job = resolve_job(JOB_ID, config_file)
    land(paths, P1, job)
    collect(job, P1, paths=paths, spark=spark)
    return home


# --- per test: an isolated RECONF_HOME -------------------------------------------------------


def _use_home(template: Path, target: Path, monkeypatch: pytest.MonkeyPatch, config: Path) -> Paths:
    shutil.copytree(template, target)
    monkeypatch.setenv("RECONF_HOME", str(target))
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    return Paths.from_env()


@pytest.fixture
def home(
    empty_template: Path, config_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Paths:
    return _use_home(empty_template, tmp_path / "home", monkeypatch, config_file)


@pytest.fixture
def collected_home(
    collected_template: Path, config_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Paths:
    return _use_home(collected_template, tmp_path / "home", monkeypatch, config_file)


@pytest.fixture
def job(config_file: Path) -> JobConfig:
    return resolve_job(JOB_ID, config_file)


# --- helpers ---------------------------------------------------------------------------------


def tiny_job(config: Path | None = None) -> JobConfig:
    return resolve_job(JOB_ID, config)


def land(paths: Paths, period_end: datetime, job: JobConfig | None = None) -> Path:
    """The runtime stand-in (the job's configured source) lands one period; its directory."""
    from reconf.settings import make_source

    return make_source(job or tiny_job(), paths).land_period(paths.landing, period_end)


def apply_latest(paths: Paths, job: JobConfig | None = None) -> ApplyResult:
    """The runtime stand-in polls and applies the newest published assignment."""
    from reconf.settings import make_source

    return make_source(job or tiny_job(), paths).apply_latest(paths.published)


def all_keygroups() -> set[str]:
    from runtime.synthetic import keygroup_name

    return {keygroup_name(o, k) for o in range(OPERATORS) for k in range(KEYGROUPS_PER_OPERATOR)}


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
    from jobs.lake import read_table

    df = read_table(spark, paths, table)
    return (df.where(where) if where else df).toPandas()


def latest(paths: Paths) -> str | None:
    path = paths.published / JOB_ID / "LATEST"
    return path.read_text() if path.exists() else None


def mlflow_runs(paths: Paths, *, dry_run: bool = False) -> list[Any]:
    """The job's MLflow runs (cycle runs by default, dry runs if asked)."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    experiment = client.get_experiment_by_name(JOB_ID)
    if experiment is None:
        return []
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    flag = str(dry_run).lower()
    return [r for r in runs if r.data.tags.get("reconf.dry_run") == flag]
