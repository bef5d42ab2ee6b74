"""One reconfiguration DAG per configured job: collect -> validate -> plan -> publish -> whatif.

Thin by design (Airflow best practice): at import time it only reads the small TOML job config;
every stage imports delta-rs or Spark, GE, the planner and MLflow inside its task. A run
processes the statistics period [logical date - SPL, logical date): the window comes from the
run's logical date, never from the wall clock, so reruns and backfills of a date redo exactly
that period.

Semantics (docs/operations.md, "Airflow DAGs"): runs on the job's period grid with logical date =
period end and the job's catch-up policy (reconf/timetable.py), one run at a time; the first task
passes the cycle gate (a cycle whose previous period failed is held: it ends at once, failed, so
the failed period's re-run finds the run slot free; reconf/cycle_gate.py, jobs/cycles.py; no task
`depends_on_past`, so no task added to the DAG can wait on a run that never had it), then waits
(deferred) for the period's landing and, if it never lands, skips the stages so that
`missed_period` fails the run and records the period as lost (reconf/landing_wait.py); each task
records the cycle's outcome for the next one's gate; Spark stages retry with exponential back-off, but bad
input (a ReconfError: StageError, ConfigError, PeriodError…, e.g. a failed Great Expectations
check) fails at once; manual runs take validated params (strategy, budget, solver time limit,
dry_run); publish emits the Asset `reconf://<job_id>/assignment`; `whatif` (shadow strategies
on the published plan's state) is a teardown: it runs once publish is done and its outcome never
changes the run's state. A job with `approval = true` runs the what-if before an `approve` task
(Airflow's human-in-the-loop ApprovalOperator, reconf/approval_step.py) that publish waits for;
a rejection or a timeout skips publish. A job whose config is invalid gets no DAG here: its error is reported by
dags/reconfigure_config_check.py, so the other jobs' DAGs stay schedulable.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, Asset, Param, task
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from reconf.assets import assignment_asset
from reconf.cycle_gate import record_cycle
from reconf.landing_wait import WaitForLanding, missed_message
from reconf.mlflow_link import MlflowRunLink
from reconf.timetable import PeriodGridTimetable
from schemas.config import (
    PROJECT_ROOT,
    STRATEGY_NAMES,
    JobConfig,
    valid_jobs,
)
from schemas.errors import ReconfError

_log = logging.getLogger("reconf.dag")  # task logs at INFO: each stage's summary

RETRIES = 3  # Spark stages: transient failures (a lost executor, a busy disk) get 3 more tries
RETRY_DELAY = timedelta(seconds=30)
RETRY_BACKOFF = 2.0  # 30 s, 60 s, 120 s, ... capped at MAX_RETRY_DELAY
MAX_RETRY_DELAY = timedelta(minutes=10)
MAX_TIME_LIMIT_S = 600.0  # the largest solver time limit a manual run may ask for
SPARK_CONN_ID = "reconf_spark"


def _period_end(context: dict[str, Any]) -> str:
    logical_date = context.get("logical_date")
    if logical_date is None:
        raise AirflowFailException(
            "this run has no logical date, so it names no statistics period\n"
            f"  where: DAG run {context.get('run_id')}\n"
            "  fix:   trigger it with a logical date = the period end (UI: 'Logical date'; CLI: "
            "`airflow dags trigger <dag> --logical-date 2026-01-01T00:05:00+00:00`)")
    return str(logical_date.isoformat())


@contextlib.contextmanager
def _fail_fast(stage: str, job_id: str = "", context: dict[str, Any] | None = None
               ) -> Iterator[None]:
    """Bad input fails the task at once (no retries: rerunning cannot fix it), its what / where /
    fix as the log's last lines, recorded as the period's outcome; any other error propagates
    and is retried with back-off."""
    import time

    # Progress markers `reconf demo` relays as they come (one line per stage, with its time).
    print(f"reconf-stage {stage} start", flush=True)
    started = time.monotonic()
    try:
        yield
    except ReconfError as exc:  # any refused input: stage, period, config, manifest, params…
        print(f"{stage} refused to run: bad input, not retried; nothing was published "
              "(LATEST is unchanged)", flush=True)
        print(f"reconf-stage {stage} failed {time.monotonic() - started:.2f} s", flush=True)
        if context is not None:
            record_cycle(job_id, context, "failed", str(exc).splitlines()[0], stage=stage)
        raise AirflowFailException(str(exc)) from None
    print(f"reconf-stage {stage} done {time.monotonic() - started:.2f} s", flush=True)


@task(task_id="collect")
def collect(job_id: str, **context: Any) -> str:
    with _fail_fast("collect", job_id, context):
        from jobs.run import run_collect

        summary = run_collect(job_id, _period_end(context))
    _log.info("%s", summary)
    return summary


@task(task_id="validate")
def validate(job_id: str, **context: Any) -> str:
    with _fail_fast("validate", job_id, context):
        from jobs.run import run_validate

        summary = run_validate(job_id, _period_end(context))
    _log.info("%s", summary)
    return summary


@task(task_id="plan")
def plan(job_id: str, **context: Any) -> dict[str, Any]:
    params = context["params"]
    with _fail_fast("plan", job_id, context):
        from jobs.run import run_plan

        result = run_plan(
            job_id, _period_end(context), strategy=params["strategy"],
            max_migrations=params["max_migrations"], time_limit_s=params["time_limit_s"],
            dry_run=params["dry_run"], tags={"reconf.airflow_run_id": str(context.get("run_id"))})
    _log.info("%s", result.summary())
    from reconf.mlflow_link import mlflow_run_url, remember_url

    url = mlflow_run_url(result.mlflow_run_id) if result.mlflow_run_id else None
    if url:
        _log.info("MLflow run of this cycle: %s", url)
        remember_url(context, url)
    return {"plan_id": result.plan_id, "summary": result.summary(),
            "mlflow_run_id": result.mlflow_run_id, "mlflow_url": url,
            "migrations": result.plan.migrations, "dry_run": bool(params["dry_run"])}


def _publish(job_id: str, asset: Asset) -> Any:
    @task(task_id="publish", outlets=[asset])
    def publish(job_id: str, planned: dict[str, Any], **context: Any) -> dict[str, Any]:
        from jobs.cycles import CycleState
        from schemas.attempts import PlanStatus

        if context["params"]["dry_run"]:
            from schemas.config import Paths
            from schemas.manifest import read_latest_version

            latest = read_latest_version(Paths.from_env().published, job_id)
            print(f"dry run: plan {planned['plan_id']} is in MLflow run {planned['mlflow_run_id']} "
                  f"(tag reconf.dry_run=true) and is NOT published; LATEST stays at "
                  f"{'v' + str(latest) if latest else 'no version'}", flush=True)
            record_cycle(job_id, context, CycleState.NOT_PUBLISHED, "dry run")
            raise AirflowSkipException("dry run: publish skipped")
        with _fail_fast("publish", job_id, context):
            from jobs.run import run_publish

            result = run_publish(job_id, _period_end(context))
        if result.status == PlanStatus.STALE:
            # Another publish overtook this plan; the next cycle plans from it. Skipped, not
            # failed: the cycle did its job.
            print(f"publish {job_id}@{result.period_end}: stale plan, not published: "
                  f"{result.reason}", flush=True)
            record_cycle(job_id, context, CycleState.NOT_PUBLISHED, f"stale plan: {result.reason}")
            raise AirflowSkipException(f"stale plan: {result.reason}")
        if result.version is None:  # historical: older than the newest published period
            record_cycle(job_id, context, CycleState.NOT_PUBLISHED,
                         f"{result.status}: not published")
        else:
            record_cycle(job_id, context, CycleState.PUBLISHED,
                         f"v{result.version} ({result.status})")
        _log.info("publish %s@%s: %s, version %s; MLflow run %s", job_id, result.period_end,
                  result.status, result.version, planned["mlflow_run_id"])
        context["outlet_events"][asset].extra = {
            "job_id": job_id, "version": result.version, "period_end": result.period_end,
            "status": str(result.status), "manifest": result.manifest,
            "mlflow_run_id": planned["mlflow_run_id"]}
        from reconf.mlflow_link import remember_url

        remember_url(context, planned.get("mlflow_url"))
        return {"version": result.version, "status": str(result.status),
                "mlflow_run_id": planned["mlflow_run_id"], "mlflow_url": planned.get("mlflow_url")}

    return publish


@task(task_id="whatif", retries=0)
def whatif(job_id: str, **context: Any) -> str:
    """After publish: other strategies plan the same state, compared in MLflow. A teardown:
    it never delays publish, and its failure never fails the run (docs/operations.md)."""
    if context["params"]["dry_run"]:
        raise AirflowSkipException("dry run: nothing published, no what-if")
    if context["ti"].xcom_pull(task_ids="publish") is None:
        raise AirflowSkipException("publish did not run (or published nothing): no what-if")
    import time

    print("reconf-stage whatif start", flush=True)
    started = time.monotonic()
    from jobs.run import run_whatif

    summary = run_whatif(job_id, _period_end(context))  # its failure: this task's, not the run's
    _log.info("%s", summary)
    print(f"reconf-stage whatif done {time.monotonic() - started:.2f} s", flush=True)
    return summary


def _cluster_mode() -> bool:
    """Collect runs through spark-submit when both are set: RECONF_SPARK_SUBMIT=1 and a
    RECONF_SPARK_MASTER of spark://... (docs/operations.md, "Cluster mode")."""
    return (os.environ.get("RECONF_SPARK_SUBMIT") == "1"
            and os.environ.get("RECONF_SPARK_MASTER", "").startswith("spark://"))


def _spark_connection(context: Any) -> None:
    """Worker-side defaults for the submission: the `reconf_spark` connection from
    RECONF_SPARK_MASTER unless AIRFLOW_CONN_RECONF_SPARK is set, and this environment's
    `spark-submit` (PySpark's, next to the interpreter) on PATH if none is."""
    import json
    import shutil
    import sys
    from pathlib import Path

    env = f"AIRFLOW_CONN_{SPARK_CONN_ID.upper()}"
    if env not in os.environ:
        host, _, port = os.environ["RECONF_SPARK_MASTER"].rpartition(":")
        os.environ[env] = json.dumps({"conn_type": "spark", "host": host, "port": int(port)})
    if shutil.which("spark-submit") is None:
        os.environ["PATH"] = os.pathsep.join(
            [str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def _cluster_collect(job: JobConfig) -> Any:
    """The collect task as a SparkSubmitOperator running jobs/submit.py on the cluster."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from jobs.spark.session import submit_settings

    settings: dict[str, Any] = submit_settings()
    return SparkSubmitOperator(
        task_id="collect", conn_id=SPARK_CONN_ID, name=f"reconf-collect-{job.job_id}",
        application=str(PROJECT_ROOT / "jobs" / "submit.py"),
        application_args=["collect", "--job", job.job_id, "--period-end", "{{ ts }}"],
        jars=settings["jars"], conf=settings["conf"], env_vars=settings["env_vars"],
        pre_execute=_spark_connection)


def task_timeouts(job: JobConfig) -> dict[str, timedelta]:
    """Per task: a stage may take 2 SPL (at least 10 min); plan adds twice the longest solver
    time a run may ask for (scaling can solve twice); the what-if its shadow budget + 5 min."""
    base = max(timedelta(minutes=10), 2 * job.spl)
    solver = timedelta(seconds=2 * max(MAX_TIME_LIMIT_S, job.solver_time_limit_s))
    shadows = timedelta(seconds=job.shadow_time_budget_s) + timedelta(minutes=5)  # + logging
    return {"collect": base, "validate": base, "plan": base + solver, "publish": base,
            "whatif": shadows}


def run_params(job: JobConfig) -> dict[str, Param]:
    """Manual-run params, defaulting to the job's config (a scheduled run uses the defaults)."""
    return {
        "strategy": Param(job.strategy, type="string", enum=sorted(STRATEGY_NAMES),
                          description="placement strategy for this run"),
        "max_migrations": Param(job.max_migrations, type=["null", "integer"], minimum=0,
                                description="migration budget: at most this many moves"),
        "time_limit_s": Param(job.solver_time_limit_s, type="number", exclusiveMinimum=0,
                              maximum=max(MAX_TIME_LIMIT_S, job.solver_time_limit_s),
                              description="solver time limit in seconds"),
        "dry_run": Param(False, type="boolean",
                         description="plan and log to MLflow (tagged dry_run), never publish"),
    }


@task(task_id="missed_period", trigger_rule="all_skipped", retries=0)
def missed_period(job_id: str, **context: Any) -> None:
    """Runs only when the landing wait gave up (it skips, so the cycle's tasks skip): fails the
    run with the land message and records the period as lost, so the next period's run goes
    ahead."""
    from datetime import UTC, datetime

    from schemas.config import Paths, resolve_job
    from schemas.landing import SUCCESS_MARKER, period_dir

    job = resolve_job(job_id)
    end = datetime.fromisoformat(_period_end(context)).astimezone(UTC)
    marker = period_dir(Paths.from_env().landing, job_id, end) / SUCCESS_MARKER
    record_cycle(job_id, context, "lost", f"did not land within {job.landing_wait} of its end")
    raise AirflowFailException(missed_message(job_id, end, marker, job.landing_wait))


def build_dag(job: JobConfig) -> DAG:
    timeouts = task_timeouts(job)
    with DAG(
        dag_id=f"reconfigure_{job.job_id}",
        description=f"Reconfigure stream job {job.job_id} every {job.spl}",
        # Runs at start_date + k*SPL, logical date = period end; catch-up policy of the job.
        schedule=PeriodGridTimetable(job.start_date, job.spl, job.catchup_periods),
        start_date=job.start_date,
        catchup=False,  # the timetable's own policy: the newest `catchup_periods` missed periods
        max_active_runs=1,
        params=run_params(job),
        default_args={
            # No task waits on the previous run's: the first task's cycle gate orders the
            # cycles (reconf/cycle_gate.py), and a task new to the DAG never waits on a run
            # that did not have it.
            "depends_on_past": False,
            "retries": RETRIES,
            "retry_delay": RETRY_DELAY,
            "retry_exponential_backoff": RETRY_BACKOFF,
            "max_retry_delay": MAX_RETRY_DELAY,
            "execution_timeout": timeouts["collect"],
        },
        tags=["reconf", job.job_id],
    ) as dag:
        # No retries: a held cycle or a period that never lands must end at once.
        landed = WaitForLanding(task_id="wait_for_landing", job_id=job.job_id, retries=0,
                                execution_timeout=job.landing_wait + timedelta(minutes=5))
        first = (_cluster_collect(job) if _cluster_mode()
                 else collect.override(execution_timeout=timeouts["collect"])(job.job_id))
        checked = validate.override(execution_timeout=timeouts["validate"])(job.job_id)
        planned = plan.override(execution_timeout=timeouts["plan"])(job.job_id)
        published = _publish(job.job_id, assignment_asset(job.job_id)).override(
            execution_timeout=timeouts["publish"])(job.job_id, planned)
        for linked in (planned, published):  # the Airflow UI's button to the MLflow run
            linked.operator.operator_extra_links = [MlflowRunLink()]  # type: ignore[union-attr]
        if job.approval:  # a human approves each plan: its what-if first, for the approver
            from reconf.approval_step import ApprovePlan, whatif_before_approval

            preview = whatif_before_approval.override(
                execution_timeout=timeouts["whatif"])(job.job_id)
            approve = ApprovePlan(task_id="approve", job_id=job.job_id,
                                  timeout=job.approval_timeout, retries=0)
            landed >> first >> checked >> planned >> preview >> approve >> published
        else:
            shadows = whatif.override(execution_timeout=timeouts["whatif"])(job.job_id)
            landed >> first >> checked >> planned >> published >> shadows.as_teardown()
        landed >> missed_period(job.job_id)
    return dag



for _job in valid_jobs().values():
    globals()[f"reconfigure_{_job.job_id}"] = build_dag(_job)
