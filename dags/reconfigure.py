"""One reconfiguration DAG per configured job: collect -> validate -> plan -> publish.

Thin by design (Airflow best practice): at import time it only reads the small TOML job config;
every stage imports Spark, GE, the planner and MLflow inside its task. A run processes the
statistics period [logical date - SPL, logical date): the window comes from the run's logical
date, never from the wall clock, so reruns and backfills of a date redo exactly that period.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, task

from schemas.config import JobConfig, load_jobs


def _period_end(context: dict[str, Any]) -> str:
    return context["logical_date"].isoformat()


@task(task_id="collect")
def collect(job_id: str, **context: Any) -> str:
    from jobs.stages import run_collect

    summary = run_collect(job_id, _period_end(context))
    print(summary)
    return summary


@task(task_id="validate")
def validate(job_id: str, **context: Any) -> str:
    from jobs.stages import run_validate

    summary = run_validate(job_id, _period_end(context))
    print(summary)
    return summary


@task(task_id="plan")
def plan(job_id: str, **context: Any) -> dict[str, Any]:
    from jobs.stages import run_plan

    run_id = context.get("run_id")
    result = run_plan(job_id, _period_end(context), tags={"reconf.airflow_run_id": str(run_id)})
    p = result.plan
    print(
        f"plan {result.plan_id}: {p.strategy} ({p.status.value}) load distance "
        f"{p.before.load_distance:.2f} -> {p.after.load_distance:.2f}, {p.migrations} migrations, "
        f"MLflow run {result.mlflow_run_id}"
    )
    return {"plan_id": result.plan_id, "mlflow_run_id": result.mlflow_run_id,
            "migrations": p.migrations}


@task(task_id="publish")
def publish(job_id: str, **context: Any) -> dict[str, Any]:
    from jobs.stages import run_publish

    result = run_publish(job_id, _period_end(context))
    print(f"publish {job_id}@{result.period_end}: {result.status}, version {result.version}")
    return {"version": result.version, "status": result.status}


def build_dag(job: JobConfig) -> DAG:
    with DAG(
        dag_id=f"reconfigure_{job.job_id}",
        description=f"Reconfigure stream job {job.job_id} every {job.spl}",
        schedule=job.spl,
        start_date=job.start_date,
        catchup=False,
        max_active_runs=1,
        default_args={"execution_timeout": max(timedelta(minutes=10), 2 * job.spl)},
        tags=["reconf", job.job_id],
    ) as dag:
        collect(job.job_id) >> validate(job.job_id) >> plan(job.job_id) >> publish(job.job_id)
    return dag


for _job in load_jobs().values():
    globals()[f"reconfigure_{_job.job_id}"] = build_dag(_job)
