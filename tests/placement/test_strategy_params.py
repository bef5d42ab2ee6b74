"""Per-job strategy parameters: the config table, the merge with defaults, the check at load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from annotated_types import Ge, Gt, Le, Lt
from pydantic.fields import FieldInfo

from placement.registry import check_params, get_spec, strategy_names
from schemas.config import ConfigError, load_jobs
from schemas.strategies import PIPELINE_PARAMS

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
    ("albic", {"maxpl": 20}, "maxpl: unknown parameter"),
    ("flux", {"w_b": 1}, "w_b: unknown parameter"),
    ("milp", {"w1": 1.0, "w2": 0.5}, r"w1 > 2·w2"),
    ("milp", {"solver": "gurobi"}, "solver"),
    ("milp", {"candidates": "bogus"}, "candidates"),
    ("milp", {"time_limit_s": 3}, "solver_time_limit_s"),
    ("nope", {}, "unknown strategy"),
])
def test_check_params_refuses_with_the_reason(name: str, params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_params(name, params)


def _bad_values(info: FieldInfo) -> tuple[object, object | None]:
    """(a value of the wrong type, a value out of range or None) for a field."""
    choices = getattr(info.annotation, "__args__", ())
    if all(isinstance(c, str) for c in choices) and choices:  # a Literal of choices
        return 1.5, "bogus"
    out: object | None = None
    for rule in info.metadata:
        if isinstance(rule, Ge | Gt):
            out = cast(float, rule.ge) - 1 if isinstance(rule, Ge) else rule.gt
        elif isinstance(rule, Le | Lt):
            out = cast(float, rule.le) + 1 if isinstance(rule, Le) else rule.lt
    return "not-a-number", out


def _cases() -> list[tuple[str, str, str, object]]:
    """(strategy, field, kind, value) for every field of every registered strategy's params."""
    out: list[tuple[str, str, str, object]] = []
    for name in strategy_names():
        fields = get_spec(name).params.model_fields
        out.append((name, "no_such_knob", "unknown", 1))
        for field, info in sorted(fields.items()):
            if field in PIPELINE_PARAMS or field == "resource_caps":  # a table, not a scalar
                continue
            wrong, outside = _bad_values(info)
            out.append((name, field, "mistyped", wrong))
            if outside is not None:
                out.append((name, field, "out of range", outside))
    return out


def test_every_strategy_has_a_range_or_choice_to_check() -> None:
    kinds = {(name, kind) for name, _, kind, _ in _cases()}
    for name in strategy_names():
        assert {(name, "unknown"), (name, "mistyped"), (name, "out of range")} <= kinds


@pytest.mark.parametrize(("strategy", "field", "kind", "value"), _cases())
def test_bad_strategy_params_fail_at_load_naming_file_job_field(
        tmp_path: Path, strategy: str, field: str, kind: str, value: object) -> None:
    path = tmp_path / "jobs.toml"
    literal = f'"{value}"' if isinstance(value, str) else repr(value)
    path.write_text(f"[jobs.good]\n[jobs.bad.strategy_params.{strategy}]\n{field} = {literal}\n")
    with pytest.raises(ConfigError) as caught:
        load_jobs(path)
    message = str(caught.value)
    assert str(path) in message
    assert f"jobs.bad.strategy_params.{strategy}.{field}" in message
    if kind == "unknown":
        assert "unknown parameter" in message
    else:  # the rule, and the value given
        assert "Input should be" in message and f"got {value!r}" in message


def test_a_bad_table_of_one_job_leaves_the_others(tmp_path: Path) -> None:
    from schemas.config import read_jobs

    path = tmp_path / "jobs.toml"
    path.write_text("[jobs.good]\n[jobs.bad.strategy_params.albic]\nmax_pl = 101\n"
                    "[jobs.typo.strategy_params.albicc]\nmax_pl = 10\n")
    loaded = read_jobs(path)
    assert set(loaded.jobs) == {"good"}
    assert "less than or equal to 100, got 101" in str(loaded.errors["bad"])
    assert "unknown strategy 'albicc'" in str(loaded.errors["typo"])


def test_every_family_package_and_params_module_is_light() -> None:
    # A family's `__init__` resolves its names on first use and its `params` imports pydantic
    # only, so the config loader reads any job's parameters without a solver or numpy.
    root = Path(__file__).resolve().parents[2] / "placement"
    families = sorted(p.name for p in root.iterdir() if (p / "__init__.py").exists())
    modules = [f"placement.{f}" for f in families]
    modules += [f"placement.{f}.params" for f in families if (root / f / "params.py").exists()]
    probe = "\n".join([
        "import sys",
        f"for m in {modules!r}: __import__(m)",
        "heavy = ('numpy', 'pulp', 'highspy', 'pymetis', 'scipy', 'pandas', 'numba')",
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))",
    ])
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert len(families) >= 9 and done.stdout.strip() == ""
