"""An operator's reason (`--reason`, `--override-budget`, the rollback DAG's params): one rule
wherever a reason is taken, and shown safely wherever it is printed (docs/operations.md,
"Reasons").

The rule: UTF-8 text (an argument of bytes that are not UTF-8 is refused naming the option;
`reconf stop` once accepted them while `reconf rollback` failed on them without naming it), no
control characters but newlines and tabs, at most REASON_MAX_CHARS characters (a 10 kB reason was
whole in the plans table but cut to 8,000 characters in MLflow with only a warning). Printed
(`reconf audit`, `reconf period show`), a reason's newlines are indented under its line and any
other control character escaped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconf.audit_execution import execution_lines
from reconf.cli import main
from schemas.approval import Decision
from schemas.reasons import REASON_MAX_CHARS, check_reason, shown_reason

NOT_UTF8 = os.fsdecode(b"power lost \xff\xfe at rack 3")  # what Python makes of such argv bytes
T = "2026-01-01T00:05:00Z"

COMMANDS = [
    (["stop", "--job", "a"], "--reason"),
    (["rollback", "--job", "a", "--to-version", "1"], "--reason"),
    (["period", "lost", "--job", "a", "--period-end", T], "--reason"),
    (["health", "report", "--job", "a", "--dead", "n0"], "--reason"),
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "jobs.toml"
    config.write_text('[jobs.a]\nstrategy = "milp"\nstart_date = 2026-01-01T00:00:00Z\n')
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _written(home: Path) -> list[Path]:
    """What a command left under RECONF_HOME, bar the directories check_home creates."""
    return [p for p in home.rglob("*") if p.is_file()] if home.exists() else []


@pytest.mark.parametrize(("argv", "option"), COMMANDS, ids=[c[0][0] for c in COMMANDS])
def test_a_reason_that_is_not_utf8_is_refused_naming_the_option(
        home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], option: str) -> None:
    assert main([*argv, option, NOT_UTF8]) == 2
    err = capsys.readouterr().err
    assert f"{option}: not UTF-8 text" in err, err
    assert "\n  where: the command line" in err and "\n  fix:   " in err, err
    assert _written(home) == []


def test_an_override_reason_that_is_not_utf8_is_refused_naming_it(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rollback", "--job", "a", "--to-version", "1", "--reason", "ok",
                 "--override-budget", NOT_UTF8]) == 2
    assert "--override-budget: not UTF-8 text" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "option"), COMMANDS, ids=[c[0][0] for c in COMMANDS])
def test_a_reason_over_the_limit_is_refused_naming_the_limit(
        home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], option: str) -> None:
    assert main([*argv, option, "x" * 10_000]) == 2
    err = capsys.readouterr().err
    assert f"{option}: 10000 characters, more than {REASON_MAX_CHARS}" in err, err
    assert _written(home) == []


@given(st.text())
def test_any_reason_is_kept_whole_or_refused_naming_the_option(text: str) -> None:
    try:
        kept = check_reason(text, "--reason")
    except ValueError as exc:
        assert str(exc).startswith("--reason: "), exc
        return
    assert kept == text and len(kept) <= REASON_MAX_CHARS
    kept.encode("utf-8")  # what the lake and MLflow store


@given(st.text())
def test_any_reason_prints_on_indented_lines_without_control_characters(text: str) -> None:
    shown = shown_reason(text, "    ")
    _first, *rest = shown.split("\n")
    assert all(line.startswith("    ") for line in rest)
    assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in shown.replace("\n", ""))
    assert len(rest) == text.count("\n") + text.count("\r") - text.count("\r\n")


def test_audit_indents_a_multi_line_reason_and_escapes_the_rest() -> None:
    lines = execution_lines({"rollback": {"to_version": 3, "reason": "node-01 overloaded\n"
                                          "see ticket 42\x1b[31m", "budget_override": None}})
    assert "\n".join(lines) == ("  rollback to v3: node-01 overloaded\n"
                               "    see ticket 42\\x1b[31m")
    line = Decision("rejected", "too many moves\nat peak", "admin", "").shown()
    assert line == "rejected by admin: too many moves\n    at peak"


def test_the_rollback_dags_params_keep_the_same_rule_naming_the_param(home: Path) -> None:
    """The rollback DAG calls the stage, not the CLI: the stage checks its reasons too, and
    names them as the trigger's --conf spells them."""
    from jobs.publish.rollback import rollback, trigger_spelling
    from schemas.config import Paths, resolve_job
    from schemas.reasons import ReasonError

    job, paths, asked = resolve_job("a"), Paths(home), trigger_spelling("rollback_a")
    with pytest.raises(ReasonError, match=r'^the param "reason": 10000 characters, more than'):
        rollback(job, 1, paths=paths, reason="x" * 10_000, asked=asked)
    with pytest.raises(ReasonError, match=r'^the param "override_budget": not UTF-8 text'):
        rollback(job, 1, paths=paths, reason="ok", override_budget=NOT_UTF8, asked=asked)
    assert _written(home) == []
    params = _rollback_params()
    assert params["reason"].schema["maxLength"] == REASON_MAX_CHARS
    assert params["override_budget"].schema["maxLength"] == REASON_MAX_CHARS


def _rollback_params() -> dict[str, Any]:
    import importlib.util

    os.environ.setdefault("AIRFLOW_HOME", str(Path(__file__).resolve().parents[1] / ".reconf"
                                              / "test-airflow"))
    spec = importlib.util.spec_from_file_location(
        "rollback_dag_reasons", Path(__file__).resolve().parents[1] / "dags" / "rollback.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.rollback_params())


def test_period_show_indents_a_lost_periods_multi_line_reason(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["period", "lost", "--job", "a", "--period-end", T, "--reason",
                 "runtime lost its metrics\nsee ticket 42"]) == 0
    capsys.readouterr()
    assert main(["period", "show", "--job", "a"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith(f"{T:21} lost") and out[1].endswith("runtime lost its metrics")
    assert out[2] == " " * 37 + "see ticket 42"
