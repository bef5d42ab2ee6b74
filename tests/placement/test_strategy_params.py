"""Per-job strategy parameters: the config table, the merge with defaults, the registry's check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from placement.registry import check_params
from schemas.config import ConfigError, load_jobs

BASE = """
[defaults]
spl = "5m"
[defaults.strategy_params.albic]
max_pl = 20
s_f = 2.0
[defaults.strategy_params.cola]
max_ld = 5

[jobs.a]
[jobs.b.strategy_params.albic]
s_f = 1.2
"""


def _load(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "jobs.toml"
    path.write_text(text)
    return load_jobs(path)


def test_defaults_merge_per_strategy_and_the_job_wins(tmp_path: Path) -> None:
    jobs = _load(tmp_path, BASE)
    assert jobs["a"].strategy_params == {"albic": {"max_pl": 20, "s_f": 2.0}, "cola": {"max_ld": 5}}
    assert jobs["b"].strategy_params == {"albic": {"max_pl": 20, "s_f": 1.2}, "cola": {"max_ld": 5}}


def test_no_table_means_no_parameters(tmp_path: Path) -> None:
    assert _load(tmp_path, "[jobs.a]\n")["a"].strategy_params == {}


@pytest.mark.parametrize(("text", "field"), [
    ("[jobs.a]\nstrategy_params = 3\n", "jobs.a.strategy_params"),
    ("[jobs.a.strategy_params]\nalbic = 1.5\n", "jobs.a.strategy_params.albic"),
    ("[jobs.a.strategy_params.albic]\nmax_pl = [1, 2]\n", "jobs.a.strategy_params.albic.max_pl"),
])
def test_malformed_tables_name_the_field(tmp_path: Path, text: str, field: str) -> None:
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        _load(tmp_path, text)


def test_check_params_accepts_the_papers_knobs() -> None:
    check_params("albic", {"max_ld": 10, "max_pl": 25, "step_pl": 5, "s_f": 1.5})
    check_params("albic_many", {"pair_share": 0.5})
    check_params("milp", {"w_b": 2.0, "solver": "highs"})
    check_params("cola", {"max_ld": 10})


@pytest.mark.parametrize(("name", "params", "message"), [
    ("albic", {"max_pl": 0}, "maxPL"),
    ("albic", {"max_pl": 101}, "maxPL"),
    ("albic", {"s_f": 0}, "sF"),
    ("albic_many", {"pair_share": 1.5}, "pair_share"),
    ("cola", {"max_ld": -1}, "max_ld"),
    ("albic", {"maxpl": 20}, "has no parameter"),
    ("flux", {"w_b": 1}, "has no parameter"),
    ("milp", {"time_limit_s": 3}, "solver_time_limit_s"),
    ("nope", {}, "unknown strategy"),
])
def test_check_params_refuses_with_the_reason(name: str, params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_params(name, params)
