"""The demo: a job reconfigured period after period through the real pipeline.

Per period: the runtime stand-in lands the period's metrics, the job's Airflow DAG runs for that
logical date (`airflow dags test`: collect -> validate -> plan -> publish on real Spark, Delta, GE
and MLflow), and the runtime applies the published version. The demo continues after the newest
period it already landed, so running it again extends the history instead of redoing it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from jobs.errors import StageError
from reconf.settings import airflow_bin, airflow_env, make_source
from schemas.config import Paths, resolve_job
from schemas.landing import SUCCESS_MARKER, format_period_end, parse_period_end

__all__ = ["ensure_airflow", "run_dag", "run_demo"]


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


def run_dag(paths: Paths, job_id: str, period_end: datetime, log_file: Path) -> None:
    """One real DAG run for the period (logical date = period end); its output goes to `log_file`."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("w") as log:
        done = subprocess.run(
            [airflow_bin(), "dags", "test", f"reconfigure_{job_id}", period_end.isoformat()],
            env=airflow_env(paths), stdout=log, stderr=subprocess.STDOUT,
        )
    if done.returncode != 0:  # `airflow dags test` exits 1 when the run failed
        tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-25:])
        raise StageError(
            f"the DAG run for period {format_period_end(period_end)} failed; its last lines:\n{tail}",
            where=str(log_file),
            fix="fix what the log names, then run the demo again (it resumes at this period)",
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
        "ld": f"{m.get('load_distance_before', float('nan')):6.2f} -> {m.get('load_distance_after', float('nan')):5.2f}",
        "migrations": f"{int(m.get('migrations', 0))}",
        "collocation": f"{m.get('collocation_factor_before', float('nan')):4.0f}% -> "
                       f"{m.get('collocation_factor_after', float('nan')):3.0f}%",
        "load_index": f"{m.get('load_index', float('nan')):5.1f}",
    }


def run_demo(job_id: str, periods: int) -> int:
    if periods < 1:
        raise ValueError(f"--periods must be >= 1, got {periods}")
    job = resolve_job(job_id)
    paths = Paths.from_env()
    source = make_source(job, paths)
    ensure_airflow(paths)
    spl_s = job.spl.total_seconds()
    print(f"demo: job {job_id}, {periods} period(s) of {job.spl}, strategy {job.strategy}, "
          f"budget {job.max_migrations} migrations; stores under {paths.home}", flush=True)
    for _ in range(periods):
        period_end = _next_period(paths, job_id, job.start_date, spl_s)
        stamp = format_period_end(period_end)
        started = time.monotonic()
        source.land_period(paths.landing, period_end)
        run_dag(paths, job_id, period_end, paths.home / "logs" / "demo" / f"{job_id}-{stamp}.log")
        applied = source.apply_latest(paths.published)
        s = _cycle_summary(paths, job_id, period_end)
        print(
            f"period {stamp}  v{s.get('version', '-'):<3} load distance {s.get('ld', '?')}  "
            f"migrations {s.get('migrations', '?'):>2}  collocation {s.get('collocation', '?')}  "
            f"load index {s.get('load_index', '?')}  MLflow run {s.get('run_id', '?')}  "
            f"runtime {applied.status} ({time.monotonic() - started:.0f} s)",
            flush=True,
        )
    print(
        "\nopen the plans in the MLflow UI:\n"
        f"  {Path(sys.executable).with_name('mlflow')} ui --backend-store-uri {paths.mlflow_uri} "
        "--port 5000\n  then browse http://127.0.0.1:5000 (experiment "
        f"'{job_id}', one run per period)"
    )
    return 0
