"""Bad input through `reconf` (in-process): exit 2, one clear message, and nothing written.

One module-wide RECONF_HOME holds a published first cycle (P1 = v1), a collected-but-unplanned
P2, and a landed-but-uncollected P3; every case uses its own period or job, takes a snapshot of
the Delta tables and the published tree, runs the command, and checks both are exactly as before.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq
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
    period,
    snapshot,
    stamp,
)

from jobs.plan.stage import plan_period
from jobs.publish.stage import publish_period
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
        # the fix names where config fields are explained, not `reconf plan --help`'s arguments
        "fix:   edit the job config", "`reconf jobs` checks every job's fields",
    ]


def _plan_before_collect(paths, tmp_path, monkeypatch):
    return ["plan", "--job", JOB_ID, "--period-end", stamp(P3)], [
        f"period {stamp(P3)} of job '{JOB_ID}' has no completed collect",
        str(paths.reports / JOB_ID / stamp(P3) / "collect.json"),
        f"reconf collect --job {JOB_ID} --period-end {stamp(P3)}`, then `reconf validate",
    ]


def _publish_before_plan(paths, tmp_path, monkeypatch):
    return ["publish", "--job", JOB_ID, "--period-end", stamp(P2)], [
        f"no plan for job '{JOB_ID}', period ending {stamp(P2)}",
        paths.table("plans"),
        f"reconf plan --job {JOB_ID} --period-end {stamp(P2)}",
    ]


def _rewrite(where: Path, kind: str, change: Callable[[pa.Table], pa.Table]) -> Path:
    """Hand-edit a landed period's samples of one kind (as an operator or a buggy runtime might)."""
    part = where / kind / "part-0.parquet"
    pq.write_table(change(pq.read_table(part)), part)
    return part


def _off_grid(paths, tmp_path, monkeypatch):
    return ["collect", "--job", JOB_ID, "--period-end", "2026-01-01T00:07:00Z"], [
        "period end 2026-01-01T00:07:00Z is not on the job's period grid",
        f"job '{JOB_ID}'", "2026-01-01T00:05:00Z and 2026-01-01T00:10:00Z",
    ]


def _far_future(paths, tmp_path, monkeypatch):
    return ["plan", "--job", JOB_ID, "--period-end", "2100-01-01T00:00:00Z"], [
        "period end 2100-01-01T00:00:00Z is in the future", f"job '{JOB_ID}'",
        "the newest period that has ended is",
    ]


def _beyond_storable(paths, tmp_path, monkeypatch):
    return ["land", "--job", JOB_ID, "--period-end", "2999-01-01T00:00:00Z"], [
        "period end 2999-01-01T00:00:00Z is beyond what reconf can store", f"job '{JOB_ID}'",
        "give the period end of a real statistics period",
    ]


def _huge_budget(paths, tmp_path, monkeypatch):
    return ["plan", "--job", JOB_ID, "--period-end", stamp(P2), "--max-migrations",
            "99999999999999999999"], [
        "max_migrations 99999999999999999999 is out of range", f"job '{JOB_ID}'",
        "give a whole number from 0 to 2147483647",
    ]


def _unusable_home(paths, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("RECONF_HOME", str(blocker / "home"))
    return ["collect", "--job", JOB_ID, "--period-end", stamp(P1)], [
        f"the reconf home {blocker / 'home'} is not usable", f"RECONF_HOME={blocker / 'home'}",
        "point RECONF_HOME at a writable directory",
    ]


def _duplicate_sample(paths, tmp_path, monkeypatch):
    where = land(paths, period(7))
    _rewrite(where, "keygroups", lambda t: pa.concat_tables([t, t.slice(0, 1)]))
    return ["collect", "--job", JOB_ID, "--period-end", stamp(period(7))], [
        "1 keygroups sample(s) repeat another sample's (keygroup, ts)",
        str(where / "keygroups"), "land the period again",
    ]


def _negative_counter(paths, tmp_path, monkeypatch):
    where = land(paths, period(8))

    def negate_first(t: pa.Table) -> pa.Table:
        values = t.column("tuples_in").to_pylist()
        values[0] = -5
        return t.set_column(t.schema.get_field_index("tuples_in"), "tuples_in",
                            pa.array(values, pa.int64()))

    _rewrite(where, "keygroups", negate_first)
    return ["collect", "--job", JOB_ID, "--period-end", stamp(period(8))], [
        "1 keygroups sample(s) break the rule tuples_in >= 0", "'tuples_in': -5",
        str(where / "keygroups"),
    ]


def _outside_window(paths, tmp_path, monkeypatch):
    where = land(paths, period(9))

    def a_day_early(t: pa.Table) -> pa.Table:
        ts = pa.compute.subtract(t.column("ts"), pa.scalar(86_400_000_000, pa.duration("us")))
        return t.set_column(0, "ts", ts.cast(t.schema.field("ts").type))

    _rewrite(where, "keygroups", a_day_early)
    return ["collect", "--job", JOB_ID, "--period-end", stamp(period(9))], [
        "the period has no keygroups samples inside its window", "lie outside it",
        str(where / "keygroups"),
    ]


def _wrong_type(paths, tmp_path, monkeypatch):
    where = land(paths, period(10))
    part = _rewrite(where, "keygroups", lambda t: t.set_column(
        t.schema.get_field_index("tuples_in"), "tuples_in",
        t.column("tuples_in").cast(pa.float64())))
    return ["collect", "--job", JOB_ID, "--period-end", stamp(period(10))], [
        "keygroups column 'tuples_in' has type double; the landing contract says int64",
        str(part), "schemas/landing.py",
    ]


def _rows_changed_after_validate(paths, tmp_path, monkeypatch):
    """A node's capacity made negative in the lake after the period passed validate: the
    planner's own check (Node) refuses it, and says where and how to fix like any refusal."""
    from jobs.lake.base import period_predicate, update_rows
    from jobs.spark.session import get_spark
    from schemas.tables import NODE_STATS

    end = period(11)
    land(paths, end)
    assert main(["collect", "--job", JOB_ID, "--period-end", stamp(end)]) == 0
    assert main(["validate", "--job", JOB_ID, "--period-end", stamp(end)]) == 0
    update_rows(get_spark(paths), paths, NODE_STATS, {"capacity": "-1.0"},
                period_predicate(JOB_ID, end))
    return ["plan", "--job", JOB_ID, "--period-end", stamp(end), "--dry-run"], [
        "the period's rows do not make a valid cluster state", "capacity",
        "lake tables keygroup_stats, node_stats", f"reconf validate --job {JOB_ID}",
    ]


def _rollback_with_one_version(paths, tmp_path, monkeypatch):
    """v1 is the only version: nothing is earlier, and the fix says so (not "one of v1..v0")."""
    return ["rollback", "--job", JOB_ID, "--to-version", "1", "--reason", "x"], [
        "v1 is not an earlier version: the newest is v1", f"where: job '{JOB_ID}'",
        "v1 is the job's only version, so there is nothing earlier to roll back to",
    ]


CASES: dict[str, Callable] = {
    "rollback-with-one-version": _rollback_with_one_version,
    "rows-changed-after-validate": _rows_changed_after_validate,
    "off-grid-period": _off_grid,
    "far-future-period": _far_future,
    "beyond-storable-period": _beyond_storable,
    "huge-budget": _huge_budget,
    "unusable-home": _unusable_home,
    "duplicate-sample": _duplicate_sample,
    "negative-counter": _negative_counter,
    "all-samples-outside-window": _outside_window,
    "wrong-column-type": _wrong_type,
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
    assert "\n  where: " in err and "\n  fix:   " in err  # every exit 2: labelled where/fix
    assert snapshot(paths) == before
    assert latest(paths) == "1\n"
