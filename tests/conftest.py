"""Shared fixtures: one Spark JVM per test session, an isolated RECONF_HOME per test, a tiny job.

Everything is real (Spark + Delta, Great Expectations, MLflow on SQLite); shared is only what is
expensive and cannot leak between tests:

- ``spark``: the one Delta-enabled session (`jobs.spark.session.get_spark`); sessions are process-global.
- ``config_file``: a job config with one tiny synthetic job (2 operators x 4 key groups, 3 nodes,
  2 s solver limit, a budget of 3 migrations); exported as ``RECONF_CONFIG`` by ``home``.
- ``home``: a fresh ``RECONF_HOME`` (under tmp_path, exported) whose lake already holds the empty
  tables of the contract and whose MLflow store is migrated: a copy of a session template, since
  creating 7 Delta tables and an MLflow DB costs ~10 s per test on a busy machine. Neither holds
  an absolute path, so the copy is the same as creating them in place.
- ``collected_home``: the same, with periods P1 and P2 landed by the runtime stand-in (its initial
  allocation) and collected.
- ``connect_url``: a real Spark Connect server with Delta (`infra/spark-connect.sh`) on a free
  loopback port, started on first use, shared by the session's tests, stopped by pid at the end.
  PySpark cannot hold a Connect client next to the in-process session, so tests drive it from
  subprocesses (the stages' own way: thin clients in their own process).

The tiny job's constants and helpers (landing a period, snapshots, MLflow runs) live in
tests/jobs/pipeline_kit.py.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings as hypothesis_settings

# Hypothesis's per-example deadline (200 ms) is a timing check, and timing belongs in the
# benchmarks: on 2 shared cores a busy moment makes an example slow, not wrong.
hypothesis_settings.register_profile("reconf", deadline=None)
hypothesis_settings.load_profile("reconf")

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "tests" / "jobs"):  # the packages, and the tiny job's kit
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from pipeline_kit import CONFIG, JOB_ID, P1, P2, land, use_home  # noqa: E402

from schemas.config import JobConfig, Paths, resolve_job  # noqa: E402

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SUBPROCESS_JAVA_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

# Under pytest-xdist (`make test` runs two workers) each worker is its own process with its own
# session fixtures (Spark JVM, Kafka broker, Connect server) and its own tmp dirs; what the test
# modules share through the project tree is Airflow's home of the DAG-parsing tests: one each.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
os.environ.setdefault("AIRFLOW_HOME", str(ROOT / ".reconf" / (f"test-airflow-{WORKER}" if WORKER
                                                              else "test-airflow")))
# Airflow reads its configuration once, at its first import, in whichever test module comes first:
# the plugins (the period-grid timetable's registration) must be set before any of them
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__PLUGINS_FOLDER", str(ROOT / "infra" / "airflow_plugins"))

#: rough seconds per test by marker, to start the longest groups first (longest-first
#: scheduling keeps one worker from ending the run alone on a slow module)
_WEIGHTS = (("soak", 300.0), ("e2e", 30.0), ("kafka", 30.0), ("browser", 30.0), ("spark", 5.0))


#: the e2e modules that share one Airflow (tests/e2e/scheduler_kit.py SharedAirflow)
_SHARED_AIRFLOW = "tests/e2e/test_scheduler"


def _group(nodeid: str) -> str:
    """The unit a worker runs whole: the test's module (module fixtures and in-order tests stay
    together), every Kafka test together (one broker; they count the machine's Kafka JVMs), and
    the test_scheduler* modules of tests/e2e together (one Airflow, started once)."""
    module = nodeid.split("::", 1)[0]
    if module.startswith(_SHARED_AIRFLOW):
        return _SHARED_AIRFLOW
    return "tests/kafka" if module.startswith("tests/kafka/") else module


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """pytest-xdist hands out whole groups (`_group`), in the order the workers collected them.
    (Its own `--dist loadgroup` marks do not reach pytest 9's node ids, hence this scheduler.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    return ByGroup(config, log)


#: seconds each group took in a `make test` run (the run writes them to
#: .reconf/test-durations.json; copy that file here when the suite's shape changes)
_MEASURED = ROOT / "tests" / "durations.json"


def _measured() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(_MEASURED.read_text())["groups"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker: heaviest groups first (stable: each group keeps its tests' order), by
    the measured seconds of tests/durations.json, else by the markers' rough weights."""
    if not hasattr(config, "workerinput"):
        return
    measured = _measured()
    weight: dict[str, float] = {}
    for item in items:
        group = _group(item.nodeid)
        weight[group] = weight.get(group, 0.0) + next(
            (w for name, w in _WEIGHTS if item.get_closest_marker(name)), 0.3)
    weight.update({group: seconds for group, seconds in measured.items() if group in weight})
    items.sort(key=lambda item: -weight[_group(item.nodeid)])


class _Timing:
    """Where the suite's time went, measured by the controller: seconds per group (setup, call
    and teardown of its tests) and per xdist worker; printed at the end and written to
    .reconf/test-durations.json, the input of the next run's order (tests/durations.json)."""

    def __init__(self) -> None:
        self.groups: dict[str, float] = {}
        self.workers: dict[str, float] = {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        group = _group(report.nodeid)
        self.groups[group] = self.groups.get(group, 0.0) + report.duration
        worker = getattr(getattr(report, "node", None), "gateway", None)
        name = getattr(worker, "id", "main")
        self.workers[name] = self.workers.get(name, 0.0) + report.duration

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.groups:
            return
        top = sorted(self.groups.items(), key=lambda kv: -kv[1])
        terminalreporter.section("time per test group")
        for group, seconds in top[:15]:
            terminalreporter.write_line(f"{seconds:8.1f} s  {group}")
        terminalreporter.write_line("per worker: " + ", ".join(
            f"{name} {seconds:.0f} s" for name, seconds in sorted(self.workers.items())))
        out = ROOT / ".reconf" / "test-durations.json"
        try:
            out.parent.mkdir(exist_ok=True)
            out.write_text(json.dumps({"groups": {g: round(s, 1) for g, s in top},
                                       "workers": {w: round(s, 1) for w, s in
                                                   sorted(self.workers.items())}}, indent=1) + "\n")
        except OSError as exc:
            terminalreporter.write_line(f"(not written: {out}: {exc})")


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller, or a run without xdist
        config.pluginmanager.register(_Timing(), "reconf-timing")


@pytest.fixture(scope="session")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("config") / "jobs.toml"
    path.write_text(CONFIG)
    return path


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """The session's one Spark JVM (Delta enabled, local jars from Paths.jars)."""
    from jobs.spark.session import get_spark

    session = get_spark(Paths(tmp_path_factory.mktemp("spark-home")))
    # The stages' subprocesses (Airflow tasks, spark-submit, CLIs) each run a JVM for seconds on
    # small data: C1-only JIT and the serial GC start them faster (docs/operations.md). Not this
    # long-lived JVM: without C2 the in-process tests ran about a third slower.
    os.environ.setdefault("RECONF_SPARK_JAVA_OPTS", SUBPROCESS_JAVA_OPTS)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`sc://127.0.0.1:<free port>` of a Spark Connect server this fixture started and stops."""
    from jobs.spark.connect import wait_until_serving
    from runtime.procs import alive, free_port, spawn, stop

    run = tmp_path_factory.mktemp("spark-connect")
    port = free_port()
    url = f"sc://127.0.0.1:{port}"
    env = {**os.environ, "RECONF_PYTHON": sys.executable, "RECONF_HOME": str(run / "home")}
    env.pop("RECONF_SPARK_REMOTE", None)
    record = spawn("spark-connect", [str(ROOT / "infra" / "spark-connect.sh"), "--port", str(port)],
                   env=env, cwd=ROOT, run_dir=run, log=run / "server.log", url=url)
    try:
        if not wait_until_serving(url, 300.0, lambda: alive(record)):
            tail = "\n".join((run / "server.log").read_text(errors="replace").splitlines()[-30:])
            pytest.fail(f"the Spark Connect server did not come up on {url}:\n{tail}")
        yield url
    finally:
        stop(record, grace_s=20)


@pytest.fixture(scope="session")
def empty_template(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A RECONF_HOME with every contract table created (empty) and the MLflow store migrated."""
    from mlflow import MlflowClient

    from jobs.lake.base import ensure_tables

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
    """``empty_template`` plus periods P1 and P2 landed by the runtime stand-in, collected and
    validated (so either may be planned for publishing)."""
    from jobs.collect.stage import collect
    from jobs.validate.stage import validate_period

    home = tmp_path_factory.mktemp("template-collected") / "home"
    shutil.copytree(empty_template, home)
    paths = Paths(home)
    job = resolve_job(JOB_ID, config_file)
    for period_end in (P1, P2):
        land(paths, period_end, job)
        collect(job, period_end, paths=paths, spark=spark)
        validate_period(job, period_end, paths=paths, spark=spark)
    return home


@pytest.fixture
def home(
    empty_template: Path, config_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Paths:
    """A fresh, isolated RECONF_HOME (empty tables) for this test; env vars set."""
    return use_home(empty_template, tmp_path / "home", monkeypatch, config_file)


@pytest.fixture
def collected_home(
    collected_template: Path, config_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Paths:
    """A fresh, isolated RECONF_HOME with periods P1 and P2 landed and collected; env vars set."""
    return use_home(collected_template, tmp_path / "home", monkeypatch, config_file)


@pytest.fixture
def job(config_file: Path) -> JobConfig:
    """The tiny job's config, read through the real loader."""
    return resolve_job(JOB_ID, config_file)
