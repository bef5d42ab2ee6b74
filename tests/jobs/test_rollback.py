"""Schedules through the pipeline, and rollback: v4 = v1's assignment after v3, as a plan of its
own (moves, budget or override, MLflow run, reason) that `reconf audit` shows as a rollback;
unknown jobs and versions are refused with nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mlflow import MlflowClient
from pipeline_kit import JOB_ID, P1, P2, P3, apply_latest, land, latest, snapshot, stamp

from jobs.run import run_collect, run_plan, run_publish, run_validate
from reconf.cli import main
from runtime.execution import FAIL_MOVES_ENV
from schemas.landing import read_runtime_report
from schemas.manifest import read_manifest
from schemas.schedule import apply_waves
from schemas.tracking import Tag

pytestmark = pytest.mark.spark


def _cycle(paths, period_end):
    land(paths, period_end)
    run_collect(JOB_ID, period_end)
    run_validate(JOB_ID, period_end)
    planned = run_plan(JOB_ID, period_end)
    run_publish(JOB_ID, period_end)
    return planned


def test_rollback_to_v1_after_v3_publishes_v4_with_v1s_assignment(
        home, spark, capsys, tmp_path, monkeypatch):
    paths = home
    plans = [_cycle(paths, period_end) for period_end in (P1, P2, P3)]
    assert latest(paths) == "3\n"
    v1, v3 = (read_manifest(paths.published, JOB_ID, v) for v in (1, 3))
    # publish wrote each plan's schedule: exactly the plan's moves, in waves
    for version, planned in enumerate(plans, start=1):
        schedule = read_manifest(paths.published, JOB_ID, version).schedule
        assert schedule is not None
        assert sorted((m.keygroup, m.src, m.dst) for w in schedule.waves for m in w.moves) == \
            sorted((m.keygroup, m.src, m.dst) for m in planned.plan.moves)

    before = snapshot(paths)
    for argv, message in (
            (["--job", "nope", "--to-version", "1"], "unknown job id 'nope'"),
            (["--job", JOB_ID, "--to-version", "9"], "v9 is not an earlier version"),
            (["--job", JOB_ID, "--to-version", "3"], "v3 is not an earlier version"),
            (["--job", JOB_ID, "--to-version", "1", "--reason", " "], "needs a reason")):
        capsys.readouterr()
        assert main(["rollback", *argv, *([] if "--reason" in argv else ["--reason", "x"])]) == 2
        assert message in capsys.readouterr().err
        assert snapshot(paths) == before  # nothing written

    moves = sum(v1.assignment[k] != v3.assignment[k] for k in v1.assignment)
    assert moves > 0
    # a budget of no migrations: the rollback breaks it unless overridden with a reason
    config = tmp_path / "zero-budget.toml"
    config.write_text(Path(os.environ["RECONF_CONFIG"]).read_text().replace(
        "max_migrations = 3", "max_migrations = 0"))
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    argv = ["rollback", "--job", JOB_ID, "--to-version", "1", "--reason", "v3 overloads node-01"]
    capsys.readouterr()
    assert main(argv) == 2
    assert "--override-budget" in capsys.readouterr().err
    assert snapshot(paths) == before
    argv += ["--override-budget", "incident 42"]
    # as the rollback DAG's task runs it (dags/rollback.py): Airflow's context in the environment
    monkeypatch.setenv("AIRFLOW_CTX_DAG_ID", "rollback_tiny")
    monkeypatch.setenv("AIRFLOW_CTX_DAG_RUN_ID", "manual__2026-01-02T00:00:00+00:00")
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "published v4 = v1's assignment" in out
    assert latest(paths) == "4\n"
    published = snapshot(paths)
    # the same Airflow run again (a cleared task): it returns its version, publishes nothing more
    assert main(argv) == 0
    assert "published v4 = v1's assignment" in capsys.readouterr().out
    assert latest(paths) == "4\n" and not (paths.published / JOB_ID / "v5.json").exists()
    assert snapshot(paths) == published
    monkeypatch.delenv("AIRFLOW_CTX_DAG_ID")
    monkeypatch.delenv("AIRFLOW_CTX_DAG_RUN_ID")
    v4 = read_manifest(paths.published, JOB_ID, 4)
    assert dict(v4.assignment) == dict(v1.assignment)
    assert v4.schedule is not None
    assert apply_waves(dict(v3.assignment), v4.schedule.waves) == dict(v1.assignment)
    assert v4.schedule.moves == moves

    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    experiment = client.get_experiment_by_name(JOB_ID)
    assert experiment is not None
    run = next(r for r in client.search_runs([experiment.experiment_id])
               if r.data.tags.get(Tag.PLAN_ID) == v4.plan_id)
    assert run.data.tags[Tag.ROLLBACK_TO] == "1"
    assert run.data.tags[Tag.ROLLBACK_REASON] == "v3 overloads node-01"
    assert run.data.tags[Tag.ASSIGNMENT_VERSION] == "4"
    assert run.data.tags[Tag.BUDGET_OVERRIDE] == "incident 42"

    capsys.readouterr()
    assert main(["audit", "--job", JOB_ID, "--period-end", stamp(P3), "--plan-id",
                 v4.plan_id]) == 0
    shown = capsys.readouterr().out
    assert "rollback to v1: v3 overloads node-01 (budget overridden: incident 42)" in shown
    assert "schedule:" in shown


def test_the_measured_execution_reaches_the_versions_run_the_next_plans_run_and_audit(
        home, spark, capsys, tmp_path, monkeypatch):
    paths = home
    rate = 2000.0  # state bytes per second: the synthetic runtime paces its waves under it
    config = tmp_path / "rated.toml"
    config.write_text(Path(os.environ["RECONF_CONFIG"]).read_text()
                      + f"\n[jobs.tiny.execution]\nmax_moves_per_node = 1\n"
                        f"max_bytes_per_second = {rate}\n")
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    first = _cycle(paths, P1)
    v1 = read_manifest(paths.published, JOB_ID, 1)
    assert v1.schedule is not None and v1.schedule.limits.max_bytes_per_second == rate
    assert v1.schedule.expected_s() == pytest.approx(
        [w.state_bytes / rate for w in v1.schedule.waves], abs=1e-6)
    assert apply_latest(paths).applied  # the synthetic runtime applies v1 wave by wave
    planned = _cycle(paths, P2)
    report = read_runtime_report(paths.landing / JOB_ID / f"period_end={stamp(P2)}")
    assert report is not None and report.execution is not None
    assert report.execution["status"] == "done" and report.execution["version"] == 1
    runs = report.execution["runs"]
    assert len(runs) == len(v1.schedule.waves) >= 2
    assert all(r["state_bytes"] > 0 and r["bytes_per_s"] <= rate for r in runs)
    # the next plan's run keeps it as the state it started from
    capsys.readouterr()
    assert main(["audit", "--job", JOB_ID, "--period-end", stamp(P2), "--plan-id",
                 planned.plan_id]) == 0
    shown = capsys.readouterr().out
    assert f"the runtime's last schedule: v1: wave {len(runs)} of {len(runs)}" in shown
    assert "schedule:" in shown
    # v1's own run shows how v1 was applied: per wave time, bytes, failures (metrics by wave)
    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    own = client.get_run(first.mlflow_run_id)
    assert own.data.tags[Tag.EXECUTION_STATUS] == "done"
    history = client.get_metric_history(first.mlflow_run_id, "execution_wave_seconds")
    assert [(m.step, m.value) for m in history] == [(r["wave"], r["seconds"]) for r in runs]
    assert [m.value for m in client.get_metric_history(
        first.mlflow_run_id, "execution_wave_bytes")] == [r["state_bytes"] for r in runs]
    assert all(m.value == 0 for m in client.get_metric_history(
        first.mlflow_run_id, "execution_wave_failed"))
    assert max(m.value for m in client.get_metric_history(
        first.mlflow_run_id, "execution_wave_bytes_per_s")) <= rate
    capsys.readouterr()
    assert main(["audit", "--job", JOB_ID, "--period-end", stamp(P1)]) == 0
    shown = capsys.readouterr().out
    assert f"applied by the runtime: v1: wave {len(runs)} of {len(runs)}" in shown
    assert f"paced at most {rate:.6g} B/s" in shown
    wave = runs[0]
    assert (f"    wave 1: {len(wave['moved'])} moved, {wave['state_bytes']:.0f} B, "
            f"{wave['seconds']:.2f} s, {wave['bytes_per_s']:.6g} B/s") in shown
    assert f"rate {rate:.6g} B/s" in shown  # the schedule's own line
    # idempotent: another plan of the same period logs the same execution once only
    run_plan(JOB_ID, P2)
    assert len(client.get_metric_history(first.mlflow_run_id, "execution_wave_seconds")) == \
        len(runs)


def test_a_failed_wave_leaves_a_partial_assignment_the_next_plan_starts_from(
        home, spark, monkeypatch, tmp_path):
    paths = home
    # v1 moves one unit; v2 may move every unit, one move per node per wave: several waves
    text = Path(os.environ["RECONF_CONFIG"]).read_text()
    for budget, period_end in ((1, P1), (8, P2)):
        config = tmp_path / f"budget-{budget}.toml"
        config.write_text(text.replace("max_migrations = 3", f"max_migrations = {budget}")
                          + "\n[jobs.tiny.execution]\nmax_moves_per_node = 1\n")
        monkeypatch.setenv("RECONF_CONFIG", str(config))
        _cycle(paths, period_end)
        if period_end == P1:
            assert apply_latest(paths).applied  # the runtime runs v1
    v1, v2 = (read_manifest(paths.published, JOB_ID, v) for v in (1, 2))
    assert v2.schedule is not None and len(v2.schedule.waves) >= 2
    stuck = v2.schedule.waves[1].moves[0]  # wave 1 moves, wave 2 fails
    monkeypatch.setenv(FAIL_MOVES_ENV, stuck.keygroup)  # this unit cannot move
    result = apply_latest(paths)
    monkeypatch.delenv(FAIL_MOVES_ENV)
    assert result.status == "partial" and stuck.keygroup in result.reason
    land(paths, P3)
    report = read_runtime_report(paths.landing / JOB_ID / f"period_end={stamp(P3)}")
    assert report is not None and report.version == 1 and report.assignment is not None
    partial = dict(report.assignment)
    assert partial[stuck.keygroup] == stuck.src != v2.assignment[stuck.keygroup]
    assert partial != dict(v1.assignment)  # wave 1 moved
    run_collect(JOB_ID, P3)
    run_validate(JOB_ID, P3)
    planned = run_plan(JOB_ID, P3)
    # the plan starts from what runs, not from v1 (the version the runtime last ran whole): every
    # move leaves the unit's partial node, every other unit stays where the runtime reports it
    moved = {m.keygroup for m in planned.plan.moves}
    assert all(m.src == partial[m.keygroup] for m in planned.plan.moves)
    assert all(planned.plan.assignment[u] == partial[u] for u in partial if u not in moved)
    assert run_publish(JOB_ID, P3).version == 3
    assert apply_latest(paths).applied  # v3 applies from the partial assignment
