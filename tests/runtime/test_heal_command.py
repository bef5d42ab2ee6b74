"""`reconf heal --report-id ID` takes a report's id, never a path: an unknown id, or one that
reaches out of the job's health folder, is refused (exit 2) naming the folder and the ids in it,
and nothing is written."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from reconf.cli import main
from schemas.config import Paths
from schemas.health import HealthReport, health_dir, write_report


def test_an_unknown_or_escaping_report_id_is_refused_naming_the_reports_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "jobs.toml"
    config.write_text('[jobs.j1]\nstrategy = "milp"\n')
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    paths = Paths.from_env()
    assert main(["heal", "--job", "j1", "--report-id", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no health report 'nope' for job 'j1'" in err and "it has no report yet" in err
    write_report(paths.landing, HealthReport("j1", "node-03-dead-1", datetime.now(UTC),
                                             dead=("node-03",)))
    # a valid report of the job placed outside its folder: reached by a relative id before
    outside = health_dir(paths.landing, "j1").parent / "escape.json"
    outside.write_text((health_dir(paths.landing, "j1") / "node-03-dead-1.json").read_text())
    before = sorted(p for p in paths.home.rglob("*"))
    for bad in ("../escape", "nope"):
        assert main(["heal", "--job", "j1", "--report-id", bad]) == 2
        err = capsys.readouterr().err
        assert f"no health report {bad!r}" in err, err
        assert f"where: {health_dir(paths.landing, 'j1')}" in err
        assert "its reports: node-03-dead-1" in err
        assert "Traceback" not in err
    assert sorted(p for p in paths.home.rglob("*")) == before  # nothing written
