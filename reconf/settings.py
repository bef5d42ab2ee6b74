"""Settings the CLI resolves: the stores (`RECONF_HOME`), the job config (`RECONF_CONFIG`) and the
metrics source a job is configured with. The contracts themselves live in `schemas.config`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from jobs.errors import StageError
from runtime.source import MetricsSource
from runtime.synthetic import SyntheticJob, SyntheticSpec
from runtime.wan_links import LinkFeed, link_feed
from schemas.config import PROJECT_ROOT, ConfigError, JobConfig, Paths

__all__ = ["LATENCY_DEFAULTS", "airflow_bin", "airflow_env", "latency_settings", "make_source",
           "prepend_path"]


def make_source(job: JobConfig, paths: Paths) -> MetricsSource:
    """The runtime stand-in the job's `source` table names (default: the synthetic job).

    kind = "replay": the replay engine on real data (runtime/replay/), imported only then. A job
    with execution limits (every job by default: 5 moves per node and wave) gets a runtime that
    refuses a manifest moving units without its move schedule, so no edit of `published/` can
    turn its waves into one.
    """
    source = _make_source(job, paths)
    if any(v is not None for v in job.execution.limits.to_dict().values()):
        setattr(source, "schedule_required", True)  # noqa: B010 (a protocol without the field)
    return source


def _make_source(job: JobConfig, paths: Paths) -> MetricsSource:
    kind = job.source.get("kind", "synthetic")
    if kind == "queries":  # the query platform (runtime/replay/queries.py), a dynamic job's
        from runtime.replay.queries import QueryPlatform, QuerySpec

        try:
            queries = QuerySpec.from_mapping(
                {"period_s": int(job.spl.total_seconds()), "start": job.start_date, **job.source},
                job_id=job.job_id)
        except ValueError as exc:
            raise ConfigError(f"jobs.{job.job_id}.source: {exc}") from exc
        return QueryPlatform(queries, paths.runtime)
    if kind == "replay":
        from runtime.replay import ReplayJob, ReplaySpec

        try:
            replay = ReplaySpec.from_mapping(
                {"period_s": int(job.spl.total_seconds()), "start": job.start_date, **job.source},
                job_id=job.job_id,
            )
        except ValueError as exc:
            raise ConfigError(f"jobs.{job.job_id}.source: {exc}") from exc
        return ReplayJob(replay, paths.runtime)
    if kind == "kafka-streams":  # real Kafka Streams instances (runtime/kafka_streams/)
        from runtime.kafka_streams.source import KafkaStreamsJob
        from runtime.kafka_streams.spec import KStreamsSpec

        try:
            kspec = KStreamsSpec.from_mapping(
                {"period_s": int(job.spl.total_seconds()), **job.source}, job_id=job.job_id)
        except ValueError as exc:
            raise ConfigError(f"jobs.{job.job_id}.source: {exc}") from exc
        return KafkaStreamsJob(kspec, paths.home, paths.published, paths.mlflow_uri)
    if kind != "synthetic":
        raise ConfigError(
            f"jobs.{job.job_id}.source.kind: unknown source {kind!r}; known: synthetic, replay, "
            "queries, kafka-streams"
        )
    source = dict(job.source)
    links = source.pop("links", None)  # a wide-area job's link measurements
    try:
        spec = SyntheticSpec.from_mapping(
            {"period_s": int(job.spl.total_seconds()), **source}, job_id=job.job_id
        )
        feed = None if links is None else _link_feed(job, spec, links)
    except ValueError as exc:
        raise ConfigError(f"jobs.{job.job_id}.source: {exc}") from exc
    return SyntheticJob(spec, paths.runtime, feed)


def _link_feed(job: JobConfig, spec: SyntheticSpec, raw: object) -> LinkFeed:
    """The stand-in's link measurements over the job's topology file (runtime/wan_links.py)."""
    if job.topology is None:
        raise ValueError("links: the job has no topology file to measure; add "
                         f'`topology = "..."` to [jobs.{job.job_id}] or remove links')
    from placement.sprawl.topology import TopologyError, load_topology

    try:
        network = load_topology(job.topology).network
    except TopologyError as exc:
        raise ValueError(f"links: {exc}") from None
    return link_feed(raw, tuple((lk.a, lk.b, lk.latency_ms, lk.bandwidth) for lk in network.links),
                     start=job.start_date, period_s=spec.period_s, seed=spec.seed)


def airflow_env(paths: Paths) -> dict[str, str]:
    """The environment of a project-local Airflow: its own home, our DAGs, no examples.

    Its metadata DB is `paths.airflow_db_uri`: SQLite by default, PostgreSQL when `RECONF_DB_URI`
    names a server (then MLflow's store moves there too, `Paths.mlflow_uri`).
    """
    sqlite = {
        # A longer busy timeout: several Airflow processes write the one file (airflow_sqlite).
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS": "reconf.airflow_sqlite.CONNECT_ARGS",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS_ASYNC": "reconf.airflow_sqlite.ASYNC_CONNECT_ARGS",
    } if paths.airflow_db_uri.startswith("sqlite") else {}
    return {
        **os.environ,
        **sqlite,
        "AIRFLOW_HOME": str(paths.airflow),
        "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT_ROOT / "dags"),
        # The plugin that registers the period-grid timetable (reconf/timetable.py).
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(PROJECT_ROOT / "infra" / "airflow_plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": os.environ.get("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING"),
        # SQLite under RECONF_HOME, or database `airflow` on the PostgreSQL of RECONF_DB_URI.
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": paths.airflow_db_uri,
        "RECONF_HOME": str(paths.home),
        "PYTHONPATH": prepend_path(str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")),
    }


#: The scheduler settings that bring a scheduled cycle's publish close to its period end
#: (docs/operations.md, "Services"; `reconf bench live` measures them), each overridable;
#: reconf/services.py `service_env` gives them to the services `make up` starts.
LATENCY_DEFAULTS = {
    # Task processes start with the stages' libraries loaded: the LocalExecutor's workers fork
    # from a server that imported reconf/task_preload.py once (GE, MLflow, pandas, delta-rs, the
    # DAG file's imports) instead of each task importing them again (4-6 s a cycle).
    "AIRFLOW__SCHEDULER__MP_START_METHOD": "forkserver",
    "AIRFLOW__SCHEDULER__MP_FORKSERVER_PRELOAD": "reconf.task_preload",
    # An idle scheduler looks again after 0.25 s (default 1 s): each of a cycle's five hand-overs
    # (run created, a task done -> the next queued) waited up to a second for it.
    "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.25",
}


def latency_settings() -> dict[str, str]:
    """LATENCY_DEFAULTS, where the environment does not set them already."""
    return {key: os.environ.get(key, value) for key, value in LATENCY_DEFAULTS.items()}


def prepend_path(entry: str, search_path: str) -> str:
    """`entry` first in a PATH-like list, once: applying it twice changes nothing."""
    rest = [p for p in search_path.split(os.pathsep) if p and p != entry]
    return os.pathsep.join([entry, *rest])


def airflow_bin() -> str:
    """The `airflow` executable of this interpreter's environment."""
    import sys

    candidate = Path(sys.executable).with_name("airflow")
    return str(candidate) if candidate.exists() else "airflow"


def ensure_airflow(paths: Paths) -> None:
    """Initialise the project-local Airflow metadata database once (`airflow db migrate`)."""
    if (paths.airflow / "airflow.db").is_file():
        return
    paths.airflow.mkdir(parents=True, exist_ok=True)
    print(f"initialising Airflow in {paths.airflow} (airflow db migrate) ...", flush=True)
    done = subprocess.run([airflow_bin(), "db", "migrate"], env=airflow_env(paths),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise StageError(
            f"airflow db migrate failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}",
            where=str(paths.airflow),
            fix="remove that directory and run the demo again",
        )
