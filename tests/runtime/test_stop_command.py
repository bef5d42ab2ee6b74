"""`reconf stop --job J`: writes the stop flag the runtime honours between waves; an unknown job
is refused with nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconf.cli import main
from runtime.execution import Execution, save_execution, stop_path, stop_requested
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
    save_execution(paths.runtime, Execution("j1", 2, 3, (), "running",
                                            "2026-01-01T00:00:00+00:00"))
    assert main(["stop", "--job", "j1", "--reason", "maintenance"]) == 0
    assert "finishes its current wave and stops" in capsys.readouterr().out
    assert stop_requested(paths.runtime, "j1")
    assert "maintenance" in stop_path(paths.runtime, "j1").read_text()


def test_a_stop_while_nothing_executes_says_it_waits_for_the_next_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """With no wave running the flag is not consumed now: it stops the next version before its
    first wave. The command says so and how to withdraw the flag, instead of "finishes its
    current wave"."""
    config = tmp_path / "jobs.toml"
    config.write_text('[jobs.j1]\nstrategy = "milp"\n')
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    paths = Paths.from_env()
    flag = stop_path(paths.runtime, "j1")
    assert main(["stop", "--job", "j1"]) == 0
    out = capsys.readouterr().out
    assert "executing nothing now (nothing applied yet)" in out
    assert "stops the next version it applies before its first wave" in out
    assert f"To withdraw it: rm {flag}" in out
    save_execution(paths.runtime, Execution("j1", 4, 2, (), "done", "2026-01-01T00:00:00+00:00"))
    assert main(["stop", "--job", "j1"]) == 0
    assert "executing nothing now (v4 done)" in capsys.readouterr().out
    assert stop_requested(paths.runtime, "j1")
