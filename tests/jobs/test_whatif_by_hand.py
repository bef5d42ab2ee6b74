"""`reconf whatif` by hand on a period that was never planned: bad input (exit 2, what / where /
fix), not the DAG teardown's quiet skip (exit 0), which let a mistyped period pass unnoticed."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.run import run_whatif
from reconf.cli import main


def test_a_period_without_a_plan_is_refused_by_hand_and_skipped_by_the_dag(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "jobs.toml"
    config.write_text('[jobs.j1]\nstrategy = "milp"\nstart_date = 2026-01-01T00:00:00Z\n'
                      'source = { kind = "synthetic", operators = 2, keygroups_per_operator = 2, '
                      'nodes = 2, seed = 1 }\n')
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    end = "2026-01-01T01:00:00Z"
    assert main(["whatif", "--job", "j1", "--period-end", end]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err
    assert err.startswith(f"reconf whatif: error: period {end} of job 'j1' has no plan to "
                          "compare: the period has no MLflow run"), err
    assert "\n  where: MLflow experiment 'j1'" in err
    assert f"\n  fix:   plan and publish the period first (`reconf cycle --job j1 --period-end {end}`)" in err
    # the DAG's teardown (after a failed plan, too) keeps the skip
    assert run_whatif("j1", end).endswith("skipped: the period has no MLflow run")
