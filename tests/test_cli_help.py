"""`reconf <command> --help` teaches: every option says what it is (and its default where it has
one), every command ends with examples, and every example is a command `reconf` accepts, on a
job the shipped config has."""

from __future__ import annotations

import argparse
import shlex

import pytest

from reconf.cli import _parser
from reconf.cli.examples import EXAMPLES
from schemas.config import PROJECT_ROOT, load_jobs


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_option_has_a_help_and_every_command_examples(name: str) -> None:
    parser = _commands()[name]
    silent = [a.option_strings[0] for a in parser._actions
              if a.option_strings and not (a.help or "").strip()]
    assert silent == [], f"reconf {name}: options without a help text: {silent}"
    text = parser.format_help()
    assert "examples:" in text, f"`reconf {name} --help` shows no example"


def test_every_example_parses_and_names_a_configured_job() -> None:
    assert set(EXAMPLES) <= set(_commands())
    jobs = load_jobs(PROJECT_ROOT / "config" / "jobs.toml")
    for name, lines in EXAMPLES.items():
        assert lines, name
        for line in lines:
            argv = shlex.split(line, comments=True)
            assert argv[:2] == ["reconf", name], line
            args = _parser().parse_args(argv[1:])  # exits 2 (SystemExit) on a bad example
            job = getattr(args, "job", None)  # a benchmark's own --job may be unset
            assert job is None or job in jobs, line


def test_the_overview_says_the_jobs_strategy_plans_not_always_the_milp() -> None:
    """Half the shipped jobs plan with ALBIC, Herding, CG, ROD or SPRAWL: `reconf --help`'s cycle
    by hand must not say every plan is a MILP's."""
    text = _parser().format_help()
    assert "reconf plan --job J --period-end T        # the job's strategy plans" in text
    assert "MILP plan" not in text
