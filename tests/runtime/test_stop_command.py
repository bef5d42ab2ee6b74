"""`reconf stop --job J`: writes the stop flag the runtime honours between waves; an unknown job
is refused with nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconf.cli import main
from runtime.execution import stop_path, stop_requested
from schemas.config import Paths


def test_stop_writes_the_flag_and_refuses_unknown_jobs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "jobs.toml"
    config.write_text('[jobs.j1]\nstrategy = "milp"\n')
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    paths = Paths.from_env()
    assert main(["stop", "--job", "nope"]) == 2
    assert "unknown job id 'nope'" in capsys.readouterr().err
    assert not stop_path(paths.runtime, "nope").exists()
    assert main(["stop", "--job", "j1", "--reason", "maintenance"]) == 0
    assert "finishes its current wave and stops" in capsys.readouterr().out
    assert stop_requested(paths.runtime, "j1")
    assert "maintenance" in stop_path(paths.runtime, "j1").read_text()
