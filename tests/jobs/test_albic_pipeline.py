"""ALBIC through the pipeline for three published periods: per-job strategy parameters, the
collocation factor and the load index in MLflow, bad parameters refused when the config loads."""

from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_kit import CONFIG, JOB_ID, MAX_MIGRATIONS, P1, P2, P3, land, mlflow_runs, rows, stamp

from jobs.run import run_collect, run_plan, run_publish, run_validate
from schemas.config import ConfigError, resolve_job
from schemas.tables import PLANS

pytestmark = pytest.mark.spark

ALBIC_CONFIG = CONFIG.replace('strategy = "milp"', 'strategy = "albic"') + f"""
[jobs.{JOB_ID}.strategy_params.albic]
max_pl = 40
s_f = 1.2
"""


@pytest.fixture
def albic_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home) -> Path:
    path = tmp_path / "albic.toml"
    path.write_text(ALBIC_CONFIG)
    monkeypatch.setenv("RECONF_CONFIG", str(path))
    return path


def test_three_albic_periods_log_collocation_and_load_index(home, albic_config, spark) -> None:
    job = resolve_job(JOB_ID)
    assert job.strategy == "albic"
    assert job.strategy_params == {"albic": {"max_pl": 40, "s_f": 1.2}}
    system_loads = []
    for number, period_end in enumerate((P1, P2, P3), start=1):
        land(home, period_end, job)
        run_collect(JOB_ID, period_end)
        run_validate(JOB_ID, period_end)
        planned = run_plan(JOB_ID, period_end)
        assert planned.plan.strategy == "albic"
        assert planned.plan.migrations <= MAX_MIGRATIONS
        published = run_publish(JOB_ID, period_end)
        assert (published.version, published.status) == (number, "published")

    runs = {r.data.tags["reconf.period_end"]: r for r in mlflow_runs(home)}
    assert set(runs) == {stamp(p) for p in (P1, P2, P3)}
    for period_end in (P1, P2, P3):
        metrics = runs[stamp(period_end)].data.metrics
        assert 0.0 <= metrics["collocation_factor_before"] <= 100.0
        assert 0.0 <= metrics["collocation_factor_after"] <= 100.0
        system_loads.append(metrics["system_load"])
        # The configured parameters are what ran (tags hold the current settings).
        tags = runs[stamp(period_end)].data.tags
        assert tags["reconf.param.strategy"] == "albic"
        assert (tags["reconf.param.albic.max_pl"], tags["reconf.param.albic.s_f"]) == ("40", "1.2")
        assert runs[stamp(period_end)].data.params["albic.max_pl"] == "40"
    # Load index: the first period is the warm-up (100); the others relative to its system load.
    first = runs[stamp(P1)].data.metrics
    assert first["load_index"] == pytest.approx(100.0)
    for period_end, load in zip((P2, P3), system_loads[1:], strict=True):
        index = runs[stamp(period_end)].data.metrics["load_index"]
        assert index == pytest.approx(100.0 * load / system_loads[0], rel=1e-6)

    plans = rows(spark, home, PLANS)
    assert sorted(plans["strategy"]) == ["albic"] * 3
    assert (plans["migrations"] <= MAX_MIGRATIONS).all()


def test_bad_strategy_params_fail_when_the_config_loads(home, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    good = tmp_path / "good.toml"
    good.write_text(ALBIC_CONFIG)
    monkeypatch.setenv("RECONF_CONFIG", str(good))
    land(home, P1, resolve_job(JOB_ID))
    run_collect(JOB_ID, P1)
    run_validate(JOB_ID, P1)
    bad = tmp_path / "bad.toml"
    bad.write_text(ALBIC_CONFIG.replace("max_pl = 40", "max_pl = 140"))
    monkeypatch.setenv("RECONF_CONFIG", str(bad))
    with pytest.raises(ConfigError) as info:  # refused when the file loads: no stage runs
        run_plan(JOB_ID, P1, strategy="milp", dry_run=True)
    text = str(info.value)
    assert str(bad) in text and f"jobs.{JOB_ID}.strategy_params.albic.max_pl" in text
    assert "maxPL" in text and "less than or equal to 100, got 140" in text
    assert mlflow_runs(home) == []  # refused before anything was logged
