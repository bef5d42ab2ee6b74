"""The docs site's generated reference pages, and the MkDocs hook that adds them to each build.

`reference/cli.md` is written from `reconf`'s argparse parser (reconf/cli/), every command and
sub-command with its help, usage, options, defaults and examples; `reference/config.md` from the
job config's pydantic models (schemas/config/job.py: each field's type, default, rule and
docstring) and the strategies' params classes (schemas/strategies.py). They are generated at build
time, never committed, so they cannot go stale; tests/docs/test_site.py checks that they name every
command, option and key, each with a description.

mkdocs.yml names this file under `hooks:`; MkDocs calls `on_files` once per build.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import types
import typing
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The reference describes the checkout that mkdocs.yml sits in, not whichever copy of the
# packages the interpreter's editable install points at (a git worktree shares the virtualenv).
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["CLI_PAGE", "CONFIG_PAGE", "cli_commands", "cli_reference", "config_reference",
           "config_tables", "on_files"]

CLI_PAGE = "reference/cli.md"
CONFIG_PAGE = "reference/config.md"


# ---------------------------------------------------------------------------------- Markdown


def _md(text: str) -> str:
    """`text` as one line of Markdown (a table cell, a paragraph): its `code spans` kept, the rest
    escaped, so a help text's `<job>`, `*` or `|` shows as written."""
    parts = re.split(r"(`[^`]*`)", " ".join(text.split()))
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(part)
        else:
            part = part.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;")
            out.append(re.sub(r"([|*_\[\]])", r"\\\1", part.replace(">", "&gt;")))
    return "".join(out)


def _code(text: str) -> str:
    """`text` as one code span (a backtick inside gets a longer fence)."""
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _block(text: str, lang: str = "text") -> list[str]:
    return [f"```{lang}", text.rstrip("\n"), "```", ""]


# --------------------------------------------------------------------------------------- CLI


def cli_commands(parser: argparse.ArgumentParser | None = None,
                 ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    """(path, parser, help) of every command and sub-command, depth first in the parser's order,
    e.g. (("bench", "balance"), …)."""
    if parser is None:
        from reconf.cli import _parser

        parser = _parser()
    yield from _walk(parser, ())


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...],
          ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), sub, helps.get(name, "")
                yield from _walk(sub, (*path, name))


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's options and positionals, without --help and the sub-command choice."""
    return [a for a in parser._actions
            if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
            and a.help != argparse.SUPPRESS]


def _default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if action.default is None or action.default is False or action.default == argparse.SUPPRESS:
        return "—"
    value = action.default
    if isinstance(value, list | tuple):
        value = " ".join(map(str, value))
    return _code(str(value))


def _slug(path: tuple[str, ...]) -> str:
    return "-".join(("reconf", *path))


def cli_reference() -> str:
    """The CLI reference page, from the parser `reconf` runs."""
    from reconf.cli import _parser

    top = _parser()
    commands = list(cli_commands(top))
    lines = ["# CLI reference", "",
             "Generated from `reconf`'s parser (`reconf/cli/`) when the site is built: every "
             "command and sub-command, its help, usage, options with their defaults, and its "
             "examples. `reconf COMMAND --help` prints the same in a terminal.", ""]
    lines += _block(top.format_help())
    lines += ["| command | what it does |", "|---|---|"]
    for path, _, text in commands:
        lines.append(f"| [{_md(' '.join(('reconf', *path)))}](#{_slug(path)}) | {_md(text)} |")
    lines.append("")
    for path, parser, text in commands:
        lines += [f"{'#' * min(len(path) + 1, 4)} {' '.join(('reconf', *path))}"
                  f" {{#{_slug(path)}}}", "", _md(text), ""]
        lines += _block(parser.format_usage().removeprefix("usage: "), "sh")
        description = parser.description or ""
        if description and " ".join(description.split()) != " ".join(text.split()):
            lines += _block(description)
        options = _options(parser)
        if options:
            formatter = parser._get_formatter()
            lines += ["| option | default | description |", "|---|---|---|"]
            for action in options:
                help_text = formatter._expand_help(action) if action.help else ""
                lines.append(f"| {_code(formatter._format_action_invocation(action))} | "
                             f"{_default(action)} | {_md(help_text)} |")
            lines.append("")
        if parser.epilog:
            lines += _block(parser.epilog)
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ config


@dataclasses.dataclass(frozen=True)
class Key:
    """One key of a config table, as the reference shows it."""

    name: str
    type: str
    default: str
    accepts: str
    description: str


@dataclasses.dataclass(frozen=True)
class Table:
    """One TOML table of the job config and its keys."""

    title: str
    anchor: str
    intro: str
    keys: tuple[Key, ...]


def _first_paragraph(doc: str | None) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def _with_values(text: str) -> str:
    """`text` with each MAX_* name of schemas/config/rules.py followed by its value."""
    import schemas.config.rules as rules

    def value(m: re.Match[str]) -> str:
        found = getattr(rules, m.group(0), None)
        if isinstance(found, timedelta):
            return f"{m.group(0)} ({found.days} days)"
        if isinstance(found, int | float):
            return f"{m.group(0)} ({_number(found)})"
        if isinstance(found, tuple):
            return f"{m.group(0)}: {', '.join(map(repr, found))}"
        return m.group(0)

    return re.sub(r"\b(?:MAX_[A-Z_]+|UNIT_SETS)\b", value, text)


def _type(annotation: Any) -> str:
    """A field's type in TOML's words."""
    origin = typing.get_origin(annotation)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return " or ".join(_type(a) for a in args)
    if origin is typing.Literal:
        return " or ".join(f'"{a}"' if isinstance(a, str) else str(a)
                           for a in typing.get_args(annotation))
    if origin in (tuple, list):
        return "list of " + _type(typing.get_args(annotation)[0]) + "s"
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return "table"
    if annotation is timedelta:
        return 'duration ("5m")'
    if annotation is datetime:
        return "date-time"
    if annotation is bool:
        return "boolean"
    if annotation is str:
        return "string"
    if annotation is int:
        return "integer"
    if annotation is float:
        return "number"
    return "table"


def _toml(value: Any) -> str:
    """A default as it would be written in the file."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, timedelta):
        seconds = int(value.total_seconds())
        for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
            if seconds % size == 0:
                return f'"{seconds // size}{unit}"'
        return f'"{seconds}s"'
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, Mapping):
        return "{}" if not value else repr(dict(value))
    if dataclasses.is_dataclass(value):
        return "its keys' defaults"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _field_default(info: Any) -> str:
    from pydantic_core import PydanticUndefined

    if info.default is not PydanticUndefined:
        return _toml(info.default)
    if info.default_factory is not None:
        return _toml(info.default_factory())
    return "required"


def _model_keys(cls: type, links: Mapping[type, str], skip: frozenset[str] = frozenset(),
                ) -> tuple[Key, ...]:
    """The keys of one job-config model: its pydantic fields, the rule each field's validator
    states (its docstring), a sub-table linked to its own section."""
    keys = []
    for name, info in cls.__pydantic_fields__.items():  # type: ignore[attr-defined]
        if name in skip:
            continue
        rule = next((_first_paragraph(m.func.__doc__) for m in info.metadata
                     if callable(getattr(m, "func", None))), "")
        sub = next((c for c in links if c in _classes(info.annotation)), None)
        accepts = f"a table: [{_md(_table_title(links[sub]))}](#{links[sub]})" if sub else \
            _md(_with_values(rule))
        keys.append(Key(name, _type(info.annotation), _field_default(info), accepts,
                        _md(info.description or "")))
    return tuple(keys)


def _classes(annotation: Any) -> set[Any]:
    return {annotation, *typing.get_args(annotation)}


def _table_title(anchor: str) -> str:
    return "[jobs.<id>]" if anchor == "jobs-id" else f"[jobs.<id>.{anchor.removeprefix('jobs-id-')}]"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def _bounds(info: Any) -> str:
    """A params field's range, from its annotated_types metadata (Field(ge=…, le=…))."""
    words = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}
    found = [f"{words[k]} {_number(getattr(m, k))}" for m in info.metadata for k in words
             if getattr(m, k, None) is not None]
    return ", ".join(found) or "—"


def _params_keys(cls: Any, skip: frozenset[str]) -> tuple[Key, ...]:
    from schemas.strategies import PIPELINE_PARAMS

    keys = []
    for name, info in cls.model_fields.items():
        if name in skip:
            continue
        accepts = _md(_bounds(info))
        if name in PIPELINE_PARAMS:  # refused in strategy_params: the job's own key sets it
            accepts = f"not here: the job's `{PIPELINE_PARAMS[name]}` sets it"
        keys.append(Key(name, _type(info.annotation), _field_default(info), accepts,
                        _md(info.description or "")))
    return tuple(keys)


def config_tables() -> list[Table]:
    """Every table of the job config with its keys: the job's own, its sub-tables, and each
    strategy's `strategy_params` table."""
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

    subs: dict[type, str] = {ScalingConfig: "jobs-id-scaling", StabilityConfig: "jobs-id-stability",
                             HealingConfig: "jobs-id-healing", ExecutionConfig: "jobs-id-execution"}
    tables = [Table("[jobs.<id>]", "jobs-id", _first_paragraph(JobConfig.__doc__)
                    + " `[defaults]` takes the same keys and applies them to every job; a job's "
                    "own table overrides any of them.",
                    _model_keys(JobConfig, subs, frozenset({"job_id"})))]
    for cls, anchor in subs.items():
        tables.append(Table(_table_title(anchor), anchor, _first_paragraph(cls.__doc__),
                            _model_keys(cls, subs)))
    common = frozenset(StrategyParams.model_fields)
    tables.append(Table("[jobs.<id>.strategy_params.<strategy>]: every strategy",
                        "strategy-params", _first_paragraph(StrategyParams.__doc__),
                        _params_keys(StrategyParams, frozenset())))
    for name in STRATEGIES:
        cls = params_class(name)
        intro = ("Only the keys [every strategy](#strategy-params) takes." if cls is StrategyParams
                 else f"`{cls.__name__}`: {_first_paragraph(cls.__doc__)}")
        tables.append(Table(f"[jobs.<id>.strategy_params.{name}]", f"strategy-params-{name}",
                            intro, _params_keys(cls, common)))
    return tables


def config_reference() -> str:
    """The configuration reference page, from the models the config loader validates with."""
    lines = ["# Configuration reference", "",
             "Generated from the job config's pydantic models (`schemas/config/job.py`, the "
             "rules in `schemas/config/rules.py`) and the strategies' params classes "
             "(`schemas/strategies.py`) when the site is built. Jobs are configured in "
             "`config/jobs.toml`, or the file `$RECONF_CONFIG` names; a value that breaks its "
             "rule fails when the file loads, naming the file, the job, the field and the rule "
             "([Per-job config errors](../operations.md#per-job-config-errors), "
             "[Limits of the job config](../operations.md#limits-of-the-job-config)). "
             "The keys inside `source` depend on the source's `kind` (config/jobs.toml, "
             "[the runtime](../runtime.md)); those of `load_model` and `constraints` are in "
             "[Jobs with declared input streams](../operations.md#jobs-with-declared-input-streams-the-load-model) "
             "and [Topology constraints](../operations.md#topology-constraints-labels-spread-anti-affinity-pins).",
             ""]
    for table in config_tables():
        lines += [f"## {_md(table.title)} {{#{table.anchor}}}", "",
                  table.intro if table.intro.startswith("Only") else _md(table.intro), ""]
        if not table.keys:
            continue
        lines += ["| key | type | default | accepts | description |", "|---|---|---|---|---|"]
        lines += [f"| `{k.name}` | {_md(k.type)} | {_md(k.default)} | {k.accepts} | "
                  f"{k.description} |" for k in table.keys]
        lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------------------------- MkDocs hook


def on_files(files: Any, config: Any) -> Any:
    """Add the generated reference pages to the build (MkDocs 1.6 `File.generated`)."""
    from mkdocs.structure.files import File

    for page, text in ((CLI_PAGE, cli_reference()), (CONFIG_PAGE, config_reference())):
        files.append(File.generated(config, page, content=text))
    return files
