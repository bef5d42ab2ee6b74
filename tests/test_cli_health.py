"""`reconf health report`: a valid report the contract's reader reads back (what the healing DAG's
watcher fires on), and refusals that write nothing (exit 2, what/where/fix, no traceback)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from reconf.cli import main
from reconf.settings import make_source
from schemas.config import Paths, resolve_job
from schemas.health import list_reports, read_report

CONFIG = """\
[defaults]
source = { kind = "synthetic", operators = 2, keygroups_per_operator = 4, nodes = 3, seed = 7 }

[jobs.plain]

[jobs.mend]

[jobs.mend.healing]
enabled = true
budget = 4
over_capacity_pct = 150
"""
LANDED = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    config = tmp_path / "jobs.toml"
    config.write_text(CONFIG)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    paths = Paths.from_env()
    for job in ("plain", "mend"):
        make_source(resolve_job(job), paths).land_period(paths.landing, LANDED)
    return paths


def test_a_dead_node_report_is_valid_and_says_what_happens_next(
        paths: Paths, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["health", "report", "--job", "mend", "--dead", "node-01",
                 "--over-capacity", "node-02=1.8", "--reason", "host lost power"]) == 0
    out = capsys.readouterr().out
    (path,) = list_reports(paths.landing, "mend")
    report = read_report(path)  # the contract's reader: what the healing watcher reads
    assert report.dead == ("node-01",) and dict(report.utilisation) == {"node-02": 1.8}
    assert report.reason == "host lost power" and report.job_id == "mend"
    assert report.over(1.5) == ("node-02",)
    assert f"health report {report.report_id} written: {path}" in out
    assert "heal_mend" in out and f"reconf heal --job mend --report-id {report.report_id}" in out
    assert report.report_id.startswith("node-01-dead-")


def test_healing_off_and_a_load_below_the_threshold_are_said(
        paths: Paths, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["health", "report", "--job", "plain", "--dead", "node-00"]) == 0
    assert "healing is off for job plain" in capsys.readouterr().out
    assert main(["health", "report", "--job", "mend", "--over-capacity", "node-00=1.2"]) == 0
    out = capsys.readouterr().out
    assert "node-00 at or below the job's over_capacity_pct 150 %" in out
    (path,) = list_reports(paths.landing, "mend")
    assert read_report(path).report_id.startswith("node-00-over-")


@pytest.mark.parametrize(("argv", "words"), [
    (["--job", "mend", "--dead", "node-9"], "job 'mend' runs no node 'node-9'"),
    (["--job", "mend", "--dead", "node-01", "--over-capacity", "node-01=2"],
     "node(s) node-01 reported both dead and over capacity"),
    (["--job", "mend"], "nothing to report"),
    (["--job", "nope", "--dead", "node-01"], "unknown job id 'nope'"),
])
def test_refusals_write_nothing(paths: Paths, capsys: pytest.CaptureFixture[str],
                                argv: list[str], words: str) -> None:
    before = sorted(paths.home.rglob("*"))
    assert main(["health", "report", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and "where:" in err and "fix:" in err, err
    assert "Traceback" not in err
    assert sorted(paths.home.rglob("*")) == before


def test_an_unknown_node_is_refused_naming_the_nodes_and_where_they_were_read(
        paths: Paths, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["health", "report", "--job", "mend", "--dead", "node-9"]) == 2
    err = capsys.readouterr().err
    assert "fix:   name nodes the job runs: node-00, node-01, node-02" in err
    assert str(paths.runtime / "mend" / "runtime.json") in err


def test_a_job_that_never_ran_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "jobs.toml"
    config.write_text(CONFIG)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "fresh"))
    assert main(["health", "report", "--job", "mend", "--dead", "node-01"]) == 2
    err = capsys.readouterr().err
    assert "job 'mend' has not run yet" in err and "reconf runtime run --job mend" in err


@pytest.mark.parametrize("bad", ["node-01", "node-01=", "node-01=x", "node-01=-1", "=1.5"])
def test_over_capacity_needs_node_equals_a_positive_fraction(
        paths: Paths, capsys: pytest.CaptureFixture[str], bad: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["health", "report", "--job", "mend", "--over-capacity", bad])
    assert exit_.value.code == 2
    assert "give NODE=UTILISATION" in capsys.readouterr().err
    assert list_reports(paths.landing, "mend") == []
