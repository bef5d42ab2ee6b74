"""`[jobs.<id>.scaling]`: bad values fail when the config is loaded, before any cycle runs."""
from __future__ import annotations

from pathlib import Path

import pytest

from placement.scaling.policy import ScalingPolicy
from schemas.config import ConfigError, ScalingConfig, load_jobs

BASE = """\
[jobs.j1]
strategy = "milp"
"""


def write(tmp_path: Path, table: str) -> Path:
    path = tmp_path / "jobs.toml"
    path.write_text(BASE + "\n[jobs.j1.scaling]\n" + table)
    return path


def test_scaling_table_loads_with_defaults_and_values(tmp_path: Path) -> None:
    assert load_jobs(write(tmp_path, ""))["j1"].scaling == ScalingConfig()
    cfg = load_jobs(write(tmp_path, "min_nodes = 2\nmax_nodes = 9\ntarget_utilisation = 0.7\n"
                                    "cooldown_cycles = 4\nmax_ld = 5\n"))["j1"].scaling
    assert cfg == ScalingConfig(min_nodes=2, max_nodes=9, target_utilisation=0.7,
                                cooldown_cycles=4, max_ld=5.0)
    # what the plan stage builds from it is a valid policy
    from jobs.plan.scaling import policy_of

    assert policy_of(cfg).target_load == pytest.approx(70.0)
    assert isinstance(policy_of(cfg), ScalingPolicy)


def test_no_scaling_table_means_no_scaling(tmp_path: Path) -> None:
    path = tmp_path / "jobs.toml"
    path.write_text(BASE)
    assert load_jobs(path)["j1"].scaling is None


@pytest.mark.parametrize(("table", "field", "rule"), [
    ("min_nodes = 5\nmax_nodes = 3\n", "jobs.j1.scaling", "min_nodes (5) must be <= max_nodes"),
    ("target_utilisation = 0\n", "jobs.j1.scaling.target_utilisation", "(0, 1]"),
    ("target_utilisation = 1.2\n", "jobs.j1.scaling.target_utilisation", "(0, 1]"),
    ("target_utilisation = 80\n", "jobs.j1.scaling.target_utilisation", "(0, 1]"),
    ("cooldown_cycles = -1\n", "jobs.j1.scaling.cooldown_cycles", ">= 0"),
    ("max_ld = -2\n", "jobs.j1.scaling.max_ld", ">= 0"),
    ("max_nodes = 0\n", "jobs.j1.scaling", "max_nodes >= 1"),
    ("min_nodes = 1.5\n", "jobs.j1.scaling.min_nodes", "whole number"),
    ("targets = 0.8\n", "jobs.j1.scaling", "unknown field(s) targets"),
])
def test_bad_scaling_config_fails_at_load_time(tmp_path: Path, table: str, field: str,
                                               rule: str) -> None:
    path = write(tmp_path, table)
    with pytest.raises(ConfigError) as err:
        load_jobs(path)
    message = str(err.value)
    assert str(path) in message and field in message and rule in message, message


def test_cli_refuses_bad_scaling_config_before_any_stage(tmp_path: Path, monkeypatch,
                                                         capsys) -> None:
    from reconf.cli import main

    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RECONF_CONFIG", str(write(tmp_path, "cooldown_cycles = -3\n")))
    code = main(["plan", "--job", "j1", "--period-end", "2026-01-01T00:05:00Z"])
    assert code != 0
    assert "cooldown_cycles" in capsys.readouterr().err
    assert not (tmp_path / "home" / "lake").exists()  # nothing ran
