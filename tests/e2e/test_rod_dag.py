"""End to end: a job declaring its input streams through the real DAG with `rod` (`airflow dags
test` on real Spark, Delta, GE and MLflow).

The synthetic runtime lands two streams' rates; its loads are linear in them with known true
coefficients. Period 1 runs through the stage functions the tasks call (one period cannot
separate two streams: no model, `rod` keeps the placement); period 2 through the DAG: collect
fits the load model (NNLS over both periods) into ``load_model``, validate's GE suites pass, the
plan is ROD's and the period's MLflow run carries its feasible-set ratio and headroom.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from pipeline_kit import run_cycle

from reconf.settings import airflow_bin, airflow_env, ensure_airflow, make_source
from runtime.synthetic import SyntheticJob, true_coefficients
from schemas.config import PROJECT_ROOT, Paths, resolve_job

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

JOB = "st"
P1 = datetime(2026, 3, 1, 0, 5, tzinfo=UTC)
P2 = P1 + timedelta(minutes=5)
CONFIG = f"""
[jobs.{JOB}]
spl = "5m"
strategy = "rod"
max_migrations = 3
solver_time_limit_s = 2
shadow_time_budget_s = 0  # no what-if shadows: their plans are tests/jobs/test_whatif.py's
start_date = 2026-03-01T00:00:00Z
source = {{ kind = "synthetic", operators = 2, keygroups_per_operator = 3, nodes = 3, seed = 5, streams = 2 }}

[jobs.{JOB}.load_model]
streams = ["in0", "in1"]
periods = 2
"""


@pytest.fixture(scope="module")
def rod_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Paths, dict[str, str]]]:
    """A home with the job config, the reconfigure DAG file, Airflow's metadata DB."""
    root = tmp_path_factory.mktemp("rod_dag")
    (root / "jobs.toml").write_text(CONFIG)
    dags = root / "dags"
    dags.mkdir()
    (dags / "reconfigure.py").symlink_to(PROJECT_ROOT / "dags" / "reconfigure.py")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RECONF_CONFIG", str(root / "jobs.toml"))
        mp.setenv("RECONF_HOME", str(root / "home"))
        paths = Paths.from_env()
        paths.home.mkdir()
        env = {**airflow_env(paths), "AIRFLOW__CORE__DAGS_FOLDER": str(dags)}
        ensure_airflow(paths)
        yield paths, env


def test_declared_streams_fit_the_load_model_and_log_resilience_through_the_dag(
        rod_home: tuple[Paths, dict[str, str]]) -> None:
    paths, env = rod_home
    source = make_source(resolve_job(JOB), paths)
    assert isinstance(source, SyntheticJob)
    source.land_period(paths.landing, P1)
    run_cycle(JOB, P1)  # not fitted yet: rod keeps the placement, the cycle completes
    source.apply_latest(paths.published)
    source.land_period(paths.landing, P2)
    done = subprocess.run([airflow_bin(), "dags", "test", f"reconfigure_{JOB}", P2.isoformat()],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]

    from mlflow import MlflowClient

    from jobs.lake.base import period_predicate, read_table
    from jobs.spark.session import get_spark
    from schemas.tables import LOAD_MODEL, PLANS

    spark = get_spark(paths)
    where = period_predicate(JOB, P2)
    model = read_table(spark, paths, LOAD_MODEL).where(where).collect()
    truth = true_coefficients(source.spec)
    assert {(r["keygroup"], r["stream"]) for r in model} == {
        (kg, s) for kg, row in truth.items() for s in row}  # every unit, every declared stream
    for r in model:
        assert r["periods"] == 2
        assert r["coefficient"] == pytest.approx(truth[r["keygroup"]][r["stream"]],
                                                 rel=1e-6, abs=1e-9)
    (plan,) = read_table(spark, paths, PLANS).where(where).collect()
    assert plan["strategy"] == "rod"
    run = MlflowClient(tracking_uri=paths.mlflow_uri).get_run(plan["mlflow_run_id"])
    assert run.data.tags.get("reconf.airflow_run_id", "").startswith("manual__")  # the DAG's
    metrics = run.data.metrics
    assert 0 < metrics["feasible_set_ratio_after"] <= 1
    assert metrics["feasible_set_ratio_after"] >= metrics["feasible_set_ratio_before"] - 1e-9
    assert metrics["headroom_all_after"] > 0
    assert {"headroom_in0_after", "headroom_in1_after", "headroom_min_after"} <= set(metrics)
