"""Bad input through `reconf` (in-process): exit 2, one clear message, and nothing written.

One module-wide RECONF_HOME holds a published first cycle (P1 = v1), a collected-but-unplanned
P2, and a landed-but-uncollected P3; every case uses its own period or job, takes a snapshot of
the Delta tables and the published tree, runs the command, and checks both are exactly as before.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from pipeline_kit import (
    CONFIG,
    JOB_ID,
    P1,
    P2,
    P3,
    P4,
    P5,
    P6,
    land,
    latest,
    snapshot,
    stamp,
)

from jobs.plan import plan_period
from jobs.publish import publish_period
from reconf.cli import main
from schemas.config import Paths, resolve_job
from schemas.landing import SUCCESS_MARKER, period_dir

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def baseline(collected_template, config_file, spark, tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("cli-errors") / "home"
    shutil.copytree(collected_template, home)
    paths = Paths(home)
    job = resolve_job(JOB_ID, config_file)
    plan_period(job, P1, paths=paths, spark=spark)
    assert publish_period(job, P1, paths=paths, spark=spark).version == 1
    land(paths, P3, job)
    return home


@pytest.fixture
def paths(baseline, config_file, monkeypatch) -> Paths:
    monkeypatch.setenv("RECONF_HOME", str(baseline))
    monkeypatch.setenv("RECONF_CONFIG", str(config_file))
    return Paths.from_env()


def _no_landing(paths, tmp_path, monkeypatch):
    return ["collect", "--job", JOB_ID, "--period-end", stamp(P6)], [
        f"no landing data for job '{JOB_ID}', period ending {stamp(P6)}",
        str(period_dir(paths.landing, JOB_ID, P6)),
        f"reconf land --job {JOB_ID} --period-end {stamp(P6)}",
    ]


def _no_success(paths, tmp_path, monkeypatch):
    where = land(paths, P4)
    (where / SUCCESS_MARKER).unlink()
    return ["collect", "--job", JOB_ID, "--period-end", stamp(P4)], [
        f"no {SUCCESS_MARKER} marker", str(where), f"wait for the runtime to write {SUCCESS_MARKER}",
    ]


def _corrupt_parquet(paths, tmp_path, monkeypatch):
    where = land(paths, P5)
    part = where / "keygroups" / "part-0.parquet"
    part.write_bytes(b"this is not parquet at all" * 10)
    return ["collect", "--job", JOB_ID, "--period-end", stamp(P5)], [
        "corrupt Parquet file", str(part), "remove the period's directory and land it again",
    ]


def _unknown_job(paths, tmp_path, monkeypatch):
    return ["collect", "--job", "nosuchjob", "--period-end", stamp(P1)], [
        "unknown job id 'nosuchjob'", f"configured jobs: {JOB_ID}", "add [jobs.nosuchjob]",
    ]


def _negative_budget(paths, tmp_path, monkeypatch):
    bad = tmp_path / "bad-jobs.toml"
    bad.write_text(CONFIG.replace("max_migrations = 3", "max_migrations = -1"))
    assert "max_migrations = -1" in bad.read_text()
    monkeypatch.setenv("RECONF_CONFIG", str(bad))
    return ["plan", "--job", JOB_ID, "--period-end", stamp(P2)], [
        str(bad), "max_migrations", "must be >= 0, got -1",
    ]


def _plan_before_collect(paths, tmp_path, monkeypatch):
    return ["plan", "--job", JOB_ID, "--period-end", stamp(P3)], [
        f"no statistics collected for job '{JOB_ID}', period ending {stamp(P3)}",
        paths.table("keygroup_stats"),
        f"reconf collect --job {JOB_ID} --period-end {stamp(P3)}",
    ]


def _publish_before_plan(paths, tmp_path, monkeypatch):
    return ["publish", "--job", JOB_ID, "--period-end", stamp(P2)], [
        f"no plan for job '{JOB_ID}', period ending {stamp(P2)}",
        paths.table("plans"),
        f"reconf plan --job {JOB_ID} --period-end {stamp(P2)}",
    ]


CASES: dict[str, Callable] = {
    "missing-landing": _no_landing,
    "no-success-marker": _no_success,
    "corrupt-parquet": _corrupt_parquet,
    "unknown-job": _unknown_job,
    "negative-budget": _negative_budget,
    "plan-before-collect": _plan_before_collect,
    "publish-before-plan": _publish_before_plan,
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_exits_2_with_one_message_and_changes_nothing(
    case, paths, tmp_path, monkeypatch, capsys
):
    argv, expected = CASES[case](paths, tmp_path, monkeypatch)
    before = snapshot(paths)
    assert before["delta_versions"]["assignment_versions"] >= 1 and latest(paths) == "1\n"
    capsys.readouterr()

    code = main(argv)

    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    err = captured.err
    assert err.startswith(f"reconf {argv[0]}: error: ")
    assert err.count("error:") == 1 and "Traceback" not in err
    for part in expected:  # what, where, and how to fix it
        assert part in err, f"{part!r} not in {err!r}"
    if case not in ("unknown-job", "negative-budget"):  # StageError: labelled where/fix lines
        assert "\n  where: " in err and "\n  fix:   " in err
    assert snapshot(paths) == before
    assert latest(paths) == "1\n"
