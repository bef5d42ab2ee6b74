"""The one way a `reconf` command is declared: a `Command` value, installed by `install`.

Each command group (reconf/cli/stages.py, operator.py, periods.py, live.py, audits.py,
services.py, bench.py) lists its commands as `COMMANDS`; reconf/cli/__init__.py installs them in
order on `reconf`'s sub-command table. A command with `actions` has sub-commands of its own
(`reconf period show|lost`, `reconf bench NAME`), declared the same way.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconf.cli.examples import EXAMPLES

__all__ = ["JOB_HELP", "Command", "examples", "install", "job_option", "job_period"]

JOB_HELP = "job id from the job config (e.g. demo; `reconf jobs` lists them)"

Run = Callable[[argparse.Namespace], int]
Arguments = Callable[[argparse.ArgumentParser], None]


def _no_arguments(_: argparse.ArgumentParser) -> None:
    return None


@dataclass(frozen=True)
class Command:
    """One command: its line in the table of its parent's --help, its own --help, its options
    and what it runs (exit status: 0 ok, 1 a refusal it names, 2 bad input; reconf/cli/errors.py).

    `description` is its --help's text as written (default: `help`, wrapped at 79 columns);
    `epilog` follows the options (`examples(name)` for the examples of reconf/cli/examples.py).
    `actions` are its sub-commands, or a function giving them when the parser is built (so
    `reconf bench` imports the benchmark modules only then). `uses_home`: it writes the stores
    under RECONF_HOME, checked and created before it runs. `defaults` are set on the namespace.
    """

    name: str
    help: str
    run: Run | None = None
    arguments: Arguments = _no_arguments
    description: str | None = None
    epilog: str | None = None
    actions: tuple[Command, ...] | Callable[[], tuple[Command, ...]] = ()
    actions_dest: str = "action"
    actions_metavar: str = "ACTION"
    uses_home: bool = False
    defaults: Mapping[str, Any] = field(default_factory=dict)
    formatter: type[argparse.HelpFormatter] = argparse.RawDescriptionHelpFormatter


def examples(name: str) -> str:
    """The epilog of the examples under `name` (reconf/cli/examples.py)."""
    return "examples:\n" + "\n".join(f"  {e}" for e in EXAMPLES[name])


def install(table: Any, commands: Iterable[Command]) -> None:
    """Add `commands` (and their actions, recursively) to `table`, an argparse sub-parser table."""
    for command in commands:
        description = command.description
        if description is None:  # wrapped here, so an epilog's examples keep their lines
            description = textwrap.fill(command.help, 79)
        parser = table.add_parser(command.name, help=command.help, description=description,
                                  epilog=command.epilog, formatter_class=command.formatter)
        command.arguments(parser)
        actions = command.actions() if callable(command.actions) else command.actions
        if actions:
            install(parser.add_subparsers(dest=command.actions_dest, required=True,
                                          metavar=command.actions_metavar), actions)
        if command.run is not None:
            parser.set_defaults(func=command.run)
        if command.defaults:
            parser.set_defaults(**command.defaults)


def job_option(parser: argparse.ArgumentParser) -> None:
    """--job, required."""
    parser.add_argument("--job", required=True, help=JOB_HELP)


def job_period(parser: argparse.ArgumentParser) -> None:
    """--job and --period-end, both required: a stage's period of a job."""
    job_option(parser)
    parser.add_argument(
        "--period-end", required=True, metavar="T",
        help="end of the statistics period, ISO-8601 with a zone (e.g. 2026-01-01T00:05:00Z)",
    )
