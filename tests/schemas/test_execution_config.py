"""`[jobs.<id>.execution]`: wave limits checked when the config loads, with clear errors."""
from __future__ import annotations

from pathlib import Path

import pytest

from schemas.config import ConfigError, ExecutionConfig, load_jobs
from schemas.schedule import WaveLimits


def _load(tmp_path: Path, table: str) -> ExecutionConfig:
    path = tmp_path / "jobs.toml"
    path.write_text(f"[jobs.j1]\nstrategy = \"milp\"\n{table}")
    return load_jobs(path)["j1"].execution


def test_defaults_throttle_only_per_node_concurrency(tmp_path: Path) -> None:
    cfg = _load(tmp_path, "")
    assert cfg == ExecutionConfig()
    assert cfg.limits == WaveLimits(max_moves_per_node=5)


def test_values_load_into_the_planner_limits(tmp_path: Path) -> None:
    cfg = _load(tmp_path, "[jobs.j1.execution]\nmax_moves_per_node = 2\nmax_moves_per_wave = 10\n"
                          "max_bytes_per_wave = 1e6\nceiling_pct = 90\n")
    assert cfg.limits == WaveLimits(2, 10, 1e6, 90.0)
    rated = _load(tmp_path, "[jobs.j1.execution]\nmax_bytes_per_second = 5e6\n")
    assert rated.limits == WaveLimits(max_moves_per_node=5, max_bytes_per_second=5e6)


@pytest.mark.parametrize(("table", "message"), [
    ("max_moves_per_node = 0", "jobs.j1.execution.max_moves_per_node: must be a whole number >= 1"),
    ("max_moves_per_wave = 1.5", "jobs.j1.execution.max_moves_per_wave: must be a whole number"),
    ("max_bytes_per_wave = -1", "jobs.j1.execution.max_bytes_per_wave: must be >= 0"),
    ("ceiling_pct = 0", "jobs.j1.execution.ceiling_pct: must be a utilisation in %"),
    ("ceiling_pct = 5000", "at most 1000.0"),
    ("ceiling = 90", "jobs.j1.execution: unknown field(s) ceiling; known: ceiling_pct"),
    ("max_bytes_per_second = 0", "jobs.j1.execution.max_bytes_per_second: must be > 0"),
    ("max_bytes_per_second = -5e6", "jobs.j1.execution.max_bytes_per_second: must be >= 0"),
    ("max_bytes_per_second = \"fast\"", "jobs.j1.execution.max_bytes_per_second: must be a "
                                         "number"),
    ("max_bytes_per_second = inf", "jobs.j1.execution.max_bytes_per_second: must be >= 0"),
])
def test_bad_limits_fail_at_load_naming_the_field(tmp_path: Path, table: str,
                                                  message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, f"[jobs.j1.execution]\n{table}\n")
    assert message in str(err.value)


def test_a_bad_byte_rate_stops_the_cli_with_exit_2_naming_the_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from reconf.cli import main

    path = tmp_path / "jobs.toml"
    path.write_text('[jobs.j1]\nstrategy = "milp"\n[jobs.j1.execution]\nmax_bytes_per_second = 0\n')
    monkeypatch.setenv("RECONF_CONFIG", str(path))
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    assert main(["stop", "--job", "j1"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: jobs.j1.execution.max_bytes_per_second: must be > 0" in err
    assert "Traceback" not in err and not (tmp_path / "home" / "runtime").exists()
