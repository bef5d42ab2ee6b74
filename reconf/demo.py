"""The demo: a job reconfigured period after period through the real pipeline.

Per period: the runtime stand-in lands the period's metrics, the job's Airflow DAG runs for that
logical date (`airflow dags test`: collect -> validate -> plan -> publish on real Spark, Delta, GE
and MLflow), and the runtime applies the published version. The demo continues after the newest
period it already landed, so running it again extends the history instead of redoing it.

The stages read and write the lake with delta-rs in each task's process (jobs/lake/delta_rs.py,
jobs/lake/write.py), so no Spark runs. With `RECONF_LAKE_IO=spark` they are thin clients of a
Spark Connect server (jobs/spark/connect.py) instead: the one `make up` started, or
`$RECONF_SPARK_REMOTE`, or else one the demo starts for its run and stops at the end.
Each step prints a line as it starts and completes it with its time when it ends (the DAG's
tasks print `reconf-stage` markers; the demo relays them as they come).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from jobs.errors import StageError
from jobs.lake import native_io
from reconf.settings import airflow_bin, airflow_env, ensure_airflow, make_source
from runtime.source import MetricsSource
from schemas.config import Paths, resolve_job
from schemas.headline import headline
from schemas.landing import SUCCESS_MARKER, format_period_end, parse_period_end
from schemas.tracking import Tag

__all__ = ["run_dag", "run_demo"]



_MARKER = re.compile(r"reconf-stage (\w+) (start|done|failed)(?: ([\d.]+) s)?")


def run_dag(paths: Paths, job_id: str, period_end: datetime, log_file: Path,
            on_stage: Callable[[str, str, float | None], None] | None = None) -> None:
    """One real DAG run for the period (logical date = period end); its output goes to `log_file`,
    and each `reconf-stage` marker in it to `on_stage(stage, event, seconds)` as it comes."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("w") as log:
        proc = subprocess.Popen(
            [airflow_bin(), "dags", "test", f"reconfigure_{job_id}", period_end.isoformat()],
            env=airflow_env(paths), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            errors="replace",
        )
        assert proc.stdout is not None
        seen: set[tuple[str, str]] = set()
        for line in proc.stdout:
            log.write(line)
            marker = _MARKER.search(line)
            # Airflow may echo a task's line more than once (its log and the console)
            key = (marker.group(1), marker.group(2)) if marker else ("", "")
            if marker and on_stage is not None and key not in seen:
                seen.add(key)
                seconds = float(marker.group(3)) if marker.group(3) else None
                on_stage(marker.group(1), marker.group(2), seconds)
        done = proc.wait()
    if done != 0:  # `airflow dags test` exits 1 when the run failed
        tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-25:])
        raise StageError(
            f"the DAG run for period {format_period_end(period_end)} failed; its last lines:\n{tail}",
            where=str(log_file),
            fix="fix what the log names, then run the demo again (it resumes at this period)",
        )


def _period(paths: Paths, job_id: str, source: MetricsSource, period_end: datetime) -> None:
    """One cycle: land, the DAG run (its four stages relayed), apply; then the period's line."""
    stamp = format_period_end(period_end)
    print(f"period {stamp}", flush=True)
    started = time.monotonic()
    _step("land")
    source.land_period(paths.landing, period_end)
    _step_done(time.monotonic() - started)
    run_dag(paths, job_id, period_end, paths.home / "logs" / "demo" / f"{job_id}-{stamp}.log",
            on_stage=_relay)
    t_apply = time.monotonic()
    _step("apply")
    applied = source.apply_latest(paths.published)
    _step_done(time.monotonic() - t_apply, applied.status)
    describe = getattr(source, "describe_apply", None)  # a real engine's own account (Kafka Streams)
    if callable(describe) and (line := describe(applied)):
        print(line, flush=True)
    s = _cycle_summary(paths, job_id, period_end)
    print(
        f"  => v{s.get('version', '-'):<3} {s.get('headline', '?')}  "
        f"migrations {s.get('migrations', '?'):>2}  load index {s.get('load_index', '?')}  MLflow run {s.get('run_id', '?')}  "
        f"cycle {time.monotonic() - started:.1f} s",
        flush=True,
    )


def _next_period(paths: Paths, job_id: str, start: datetime, spl_s: float) -> datetime:
    from datetime import timedelta

    landed = [
        parse_period_end(d.name.split("=", 1)[1])
        for d in (paths.landing / job_id).glob("period_end=*")
        if (d / SUCCESS_MARKER).is_file()
    ]
    return (max(landed) if landed else start) + timedelta(seconds=spl_s)


def _cycle_summary(paths: Paths, job_id: str, period_end: datetime) -> dict[str, str]:
    """Read back what the DAG run recorded, from the MLflow run of the period."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    experiment = client.get_experiment_by_name(job_id)
    stamp = format_period_end(period_end)
    runs = client.search_runs(
        [experiment.experiment_id] if experiment else [],
        filter_string=f"tags.`reconf.period_end` = '{stamp}' AND tags.`reconf.dry_run` = 'false'",
        max_results=1,
    )
    if not runs:
        return {}
    run = runs[0]
    m = run.data.metrics
    return {
        "run_id": run.info.run_id,
        "version": run.data.tags.get("reconf.assignment_version", "-"),
        # the job's own objective first, with its bound; load distance second
        "headline": headline(run.data.tags.get(f"{Tag.PARAM_PREFIX}strategy"), m),
        "migrations": f"{int(m.get('migrations', 0))}",
        "load_index": f"{m.get('load_index', float('nan')):5.1f}",
    }


def _step(name: str) -> None:
    print(f"  {name:<9} ...", end="", flush=True)


def _step_done(seconds: float, note: str = "") -> None:
    print(f" {seconds:5.1f} s{'  ' + note if note else ''}", flush=True)


def _relay(stage: str, event: str, seconds: float | None) -> None:
    """A DAG task's marker -> the stage's line: opened at start, completed at its end."""
    if event == "start":
        _step(stage)
    else:
        _step_done(seconds or 0.0, "FAILED" if event == "failed" else "")


def experiment_link(paths: Paths, job_id: str) -> str:
    """The job's runs table in the MLflow UI (classic view, its key-metrics columns), at the
    address every link of reconf uses (reconf.audit.mlflow_ui_base: the MLflow server `make up`
    runs, else `make mlflow-ui`'s)."""
    from mlflow import MlflowClient

    from jobs.tracking.ui_links import experiment_url
    from reconf.audit import mlflow_ui_base

    experiment = MlflowClient(tracking_uri=paths.mlflow_uri).get_experiment_by_name(job_id)
    base = mlflow_ui_base()
    return base if experiment is None else experiment_url(base, experiment.experiment_id)


def open_the_ui(paths: Paths, job_id: str) -> str:
    """The demo's last lines: where to browse the job's runs. With an MLflow server running
    (`make up`'s, or `RECONF_MLFLOW_URL`), its link; else the `mlflow ui` command to start one on
    the port the link names (a second server on `make up`'s port would not start)."""
    from reconf.ports import Ports, recorded_url

    link = experiment_link(paths, job_id)
    where = f"(experiment '{job_id}', one run per period, named by its period end)"
    if os.environ.get("RECONF_MLFLOW_URL") or recorded_url(paths.home / "run", "mlflow"):
        return f"\nopen the plans in the MLflow UI (its server runs):\n  browse {link} {where}"
    return (f"\nopen the plans in the MLflow UI:\n"
            f"  {Path(sys.executable).with_name('mlflow')} ui --backend-store-uri {paths.mlflow_uri} "
            f"--port {Ports.from_env().mlflow}\n  then browse {link} {where}")


def run_demo(job_id: str, periods: int) -> int:
    """The demo lands and applies the job's periods itself: it holds the job's runtime lock, so
    a live runtime of the job (`make up`'s) and the demo never land and apply side by side."""
    from runtime.live import runtime_lock

    if periods < 1:
        raise ValueError(f"--periods must be >= 1, got {periods}")
    paths = Paths.from_env()
    job = resolve_job(job_id)
    with runtime_lock(paths.runtime, job.job_id):
        return _run_demo(job_id, periods, paths)


def _run_demo(job_id: str, periods: int, paths: Paths) -> int:
    from reconf.services import Ports, spark_connect_for, stop_service

    job = resolve_job(job_id)
    source = make_source(job, paths)
    ensure_airflow(paths)
    spl_s = job.spl.total_seconds()
    print(f"demo: job {job_id}, {periods} period(s) of {job.spl}, strategy {job.strategy}, "
          f"budget {job.max_migrations} migrations; stores under {paths.home}", flush=True)
    started_server = None
    if native_io():  # every read and write of the lake by delta-rs: no stage asks for Spark
        print("lake reads and writes by delta-rs in each task (RECONF_LAKE_IO=spark: through "
              "a Spark Connect server instead)", flush=True)
    else:
        t0 = time.monotonic()
        print("Spark Connect server ...", end="", flush=True)
        remote, started_server = spark_connect_for(paths, Ports.from_env())
        print(f" {remote} ({'started for this demo' if started_server else 'already running'}, "
              f"{time.monotonic() - t0:.1f} s)", flush=True)
        os.environ["RECONF_SPARK_REMOTE"] = remote  # the DAG's tasks inherit it (airflow_env)
    try:
        for _ in range(periods):
            _period(paths, job_id, source, _next_period(paths, job_id, job.start_date, spl_s))
    finally:
        if started_server is not None:
            stop_service(paths, started_server)
        close = getattr(source, "close", None)  # a source that started processes stops them
        if callable(close):
            close()
    print(open_the_ui(paths, job_id))
    return 0
