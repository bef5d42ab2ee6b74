"""The docs site: `mkdocs build --strict` passes (every internal link and anchor resolves), the
generated references name every command, option and config key with a description, and the
tutorial's commands are the ones other tests run or check."""

from __future__ import annotations

import argparse
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.config import PROJECT_ROOT
from tools import docs_reference as ref

TUTORIAL = PROJECT_ROOT / "docs" / "tutorial.md"


def test_the_site_builds_strictly_with_both_references(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                           "-f", str(PROJECT_ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    for page in ("reference/cli", "reference/config", "tutorial", "how-to"):
        assert (tmp_path / "site" / page / "index.html").is_file(), page


@pytest.fixture(scope="module")
def cli_page() -> str:
    return ref.cli_reference()


def test_the_cli_reference_has_every_command_and_option_with_its_help(cli_page: str) -> None:
    commands = list(ref.cli_commands())
    assert len(commands) > 20 and ("bench", "balance") in [path for path, _, _ in commands]
    for path, parser, help_text in commands:
        name = " ".join(("reconf", *path))
        assert help_text.strip(), f"{name}: no help text"
        assert f" {name} {{#{'-'.join(('reconf', *path))}}}" in cli_page, name
        section = cli_page.split(f" {name} {{#")[1].split("\n#")[0]
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            assert action.help and action.help.strip(), f"{name} {action.option_strings}: no help"
            shown = action.option_strings[-1] if action.option_strings else action.dest
            assert f"`{shown}" in section, f"{name}: {shown} not in its reference"


def _rule_doc(info: object) -> str | None:
    return next((m.func.__doc__ for m in getattr(info, "metadata", [])
                 if callable(getattr(m, "func", None))), None)


def test_the_config_reference_has_every_key_with_its_description_and_rule() -> None:
    from placement.params import StrategyParams
    from schemas.config import (
        ExecutionConfig,
        HealingConfig,
        JobConfig,
        ScalingConfig,
        StabilityConfig,
    )
    from schemas.params import params_class
    from schemas.strategies import STRATEGIES

    page = ref.config_reference()
    sections = {m.group(1): body for m in re.finditer(r"\{#([a-z0-9_-]+)\}\n(.*?)(?=\n## |\Z)",
                                                      page, re.S) for body in [m.group(2)]}
    models = {"jobs-id": JobConfig, "jobs-id-scaling": ScalingConfig,
              "jobs-id-stability": StabilityConfig, "jobs-id-healing": HealingConfig,
              "jobs-id-execution": ExecutionConfig}
    for anchor, cls in models.items():
        for f in dataclasses.fields(cls):
            info = cls.__pydantic_fields__[f.name]  # type: ignore[attr-defined]
            assert info.description, f"{cls.__name__}.{f.name}: no docstring under the field"
            if f.name == "job_id":
                continue
            assert f"| `{f.name}` |" in sections[anchor], f"{anchor}: {f.name} missing"
            sub = f.type if isinstance(f.type, type) else None
            if _rule_doc(info) is None and sub is None:
                assert "a table: [" in sections[anchor].split(f"| `{f.name}` |")[1].split("\n")[0], \
                    f"{cls.__name__}.{f.name}: its rule says nothing of what it accepts"
    for name in STRATEGIES:
        cls = params_class(name)
        for key, info in cls.model_fields.items():
            assert info.description, f"{cls.__name__}.{key}: no description"
            anchor = "strategy-params" if key in StrategyParams.model_fields else \
                f"strategy-params-{name}"
            assert f"| `{key}` |" in sections[anchor], f"{anchor}: {key} missing"


def test_every_rule_of_a_config_key_says_what_it_accepts() -> None:
    for table in ref.config_tables():
        for key in table.keys:
            assert key.accepts and key.description, f"{table.title} {key.name}: {key}"


def _blocks(text: str) -> list[str]:
    return re.findall(r"^```(?:sh|bash)\n(.*?)^```", text, re.S | re.M)


def _commands(block: str) -> list[str]:
    """The block's commands without their trailing `# comment` columns."""
    lines = (re.split(r"\s{2,}# ", line)[0].strip() for line in block.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_the_tutorials_commands_are_the_tested_ones() -> None:
    """Each command of the tutorial is one a test runs or checks where it is written: a line of
    operations.md's "Five kinds of job" block (tests/e2e/test_family_ui.py runs each as printed),
    of the README's blocks, or `make demo`, which must run that section's demo of flights2."""
    operations = (PROJECT_ROOT / "docs" / "operations.md").read_text()
    five_kinds = operations.split("## Five kinds of job")[1].split("## Plan audit")[0]
    tested = {c for b in _blocks(five_kinds) for c in _commands(b)}
    readme = {c for b in _blocks((PROJECT_ROOT / "README.md").read_text()) for c in _commands(b)}
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    assert "JOB ?= flights2" in makefile and "PERIODS ?= 4" in makefile
    assert "$(BIN)/reconf demo --job $(JOB) --periods $(PERIODS)" in makefile
    assert "reconf demo --job flights2 --periods 1" in tested
    found = [c for b in _blocks(TUTORIAL.read_text()) for c in _commands(b)]
    assert "make demo" in found and any(c.startswith("reconf audit") for c in found)
    for command in found:
        assert command in tested or command in readme, f"tutorial: {command!r} is run nowhere"
