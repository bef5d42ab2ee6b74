"""`[jobs.<id>.healing]`: off by default, every field checked when the config loads, with one
clear message naming the file, the field and the rule (the CLI exits 2, no traceback)."""
from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from schemas.config import PROJECT_ROOT, ConfigError, HealingConfig, load_jobs


def _load(tmp_path: Path, table: str) -> HealingConfig:
    path = tmp_path / "jobs.toml"
    path.write_text(f"[jobs.j1]\nstrategy = \"milp\"\n{table}")
    return load_jobs(path)["j1"].healing


def test_healing_is_off_by_default(tmp_path: Path) -> None:
    cfg = _load(tmp_path, "")
    assert cfg == HealingConfig() and not cfg.enabled


def test_values_load(tmp_path: Path) -> None:
    cfg = _load(tmp_path, "[jobs.j1.healing]\nenabled = true\nbudget = 4\nmin_gap = \"2m\"\n"
                          "max_nodes_at_once = 2\nover_capacity_pct = 180\n")
    assert cfg == HealingConfig(True, 4, timedelta(minutes=2), 2, 180.0)


@pytest.mark.parametrize(("table", "message"), [
    ("enabled = \"yes\"", "jobs.j1.healing.enabled: must be true or false, got 'yes'"),
    ("budget = 0", "jobs.j1.healing.budget: must be a whole number >= 1, got 0"),
    ("budget = 2.5", "jobs.j1.healing.budget: must be a whole number"),
    ("min_gap = \"soon\"", "jobs.j1.healing.min_gap: must be a duration like '5m'"),
    ("min_gap = 0", "jobs.j1.healing.min_gap: must be a positive duration"),
    ("max_nodes_at_once = 0", "jobs.j1.healing.max_nodes_at_once: must be a whole number >= 1"),
    ("over_capacity_pct = 90", "jobs.j1.healing.over_capacity_pct: must be a utilisation in % "
                               "of a node's capacity above 100"),
    ("threshold = 2", "jobs.j1.healing: unknown field(s) threshold; known: budget, enabled"),
])
def test_bad_healing_config_fails_at_load_naming_the_field(tmp_path: Path, table: str,
                                                          message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, f"[jobs.j1.healing]\n{table}\n")
    assert message in str(err.value)


def test_the_cli_refuses_a_bad_healing_table_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "jobs.toml"
    path.write_text("[jobs.j1]\n[jobs.j1.healing]\nenabled = true\nmax_nodes_at_once = -1\n")
    env = {**os.environ, "RECONF_CONFIG": str(path), "RECONF_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-m", "reconf.cli", "jobs"], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert "jobs.j1.healing.max_nodes_at_once: must be" in done.stderr
    assert "fix:" in done.stderr and "Traceback" not in done.stderr
