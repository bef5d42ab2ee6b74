"""A job declaring its input streams through collect -> validate -> plan -> publish with `rod`.

The synthetic runtime lands two streams' rates; its loads are linear in them with known
coefficients. After one period the rates cannot separate the streams (no load model: `rod` keeps
the placement and says why); after two, collect's NNLS fit in ``load_model`` equals the true
coefficients, and the plan is ROD's, with its feasible-set ratio in MLflow.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient
from pipeline_kit import SPL, T0, run_cycle

from jobs.lake.base import period_predicate, read_table
from jobs.run import run_collect, run_plan, run_validate
from reconf.settings import make_source
from runtime.synthetic import true_coefficients
from schemas.config import Paths, resolve_job
from schemas.tables import LOAD_MODEL, PLANS, STREAM_STATS

pytestmark = pytest.mark.spark

JOB = "streams"
CONFIG = f"""\
[jobs.{JOB}]
spl = "5m"
strategy = "rod"
max_migrations = 4
solver_time_limit_s = 2
start_date = 2026-01-01T00:00:00Z
source = {{ kind = "synthetic", operators = 2, keygroups_per_operator = 3, nodes = 3, seed = 5, streams = 2 }}

[jobs.{JOB}.load_model]
streams = ["in0", "in1"]
min_rate = {{ in1 = 100.0 }}
periods = 2
"""


def test_the_load_model_is_fitted_and_rod_plans_on_it(spark, home: Paths, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "streams.toml"
    config.write_text(CONFIG)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    paths, job = home, resolve_job(JOB)
    first, second = T0 + SPL, T0 + 2 * SPL
    runtime = make_source(job, paths)
    runtime.land_period(paths.landing, first)
    run_collect(JOB, first)
    run_validate(JOB, first)
    assert read_table(spark, paths, STREAM_STATS).where(period_predicate(JOB, first)).count() == 2
    kept = run_plan(JOB, first)  # not fitted yet: rod keeps the placement, the cycle completes
    assert kept.plan.moves == () and "load model is not fitted yet" in kept.plan.message

    runtime.land_period(paths.landing, second)
    result = run_cycle(JOB, second)
    assert result.status == "published"
    fitted = read_table(spark, paths, LOAD_MODEL).where(period_predicate(JOB, second)).collect()
    truth = true_coefficients(runtime.spec)  # type: ignore[attr-defined]
    assert {(r["keygroup"], r["stream"]) for r in fitted} == {
        (u, s) for u, row in truth.items() for s in row}
    for r in fitted:
        assert r["coefficient"] == pytest.approx(truth[r["keygroup"]][r["stream"]], rel=1e-6,
                                                 abs=1e-12)
        assert r["periods"] == 2
    plan = read_table(spark, paths, PLANS).where(period_predicate(JOB, second)).first()
    assert plan is not None and plan["strategy"] == "rod"
    metrics = MlflowClient(tracking_uri=paths.mlflow_uri).get_run(
        plan["mlflow_run_id"]).data.metrics
    assert 0 < metrics["feasible_set_ratio_after"] <= 1
    assert "feasible_set_ratio_before" in metrics and "headroom_in0_after" in metrics
