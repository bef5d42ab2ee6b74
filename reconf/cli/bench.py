"""`reconf bench NAME`: one command per benchmark of bench/BENCHMARKS, each with the options
every benchmark shares (--quick, --json) and its module's own (`add_arguments`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from reconf.cli.command import Command, examples

__all__ = ["COMMANDS"]


def _run_benchmark(module: Any, name: str, args: argparse.Namespace) -> int:
    from bench import default_json_path

    if args.json is None:
        args.json = default_json_path(name, args.quick)
    return int(module.main(args))


def _benchmark(name: str, module: Any) -> Command:
    from bench import default_json_path

    def arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--quick", action="store_true",
                            help="the small configuration (about a minute)")
        parser.add_argument("--json", metavar="PATH", type=Path,
                            help=f"where to write the JSON rows (default "
                            f"{default_json_path(name, False)}, or -quick.json with --quick)")
        module.add_arguments(parser)

    return Command(name, module.DESCRIPTION, lambda args: _run_benchmark(module, name, args),
                   arguments, description=module.DESCRIPTION, formatter=argparse.HelpFormatter)


def _benchmarks() -> tuple[Command, ...]:
    """Every benchmark, its module imported now: when `reconf`'s parser is built."""
    import importlib

    from bench import BENCHMARKS

    return tuple(_benchmark(name, importlib.import_module(module_name))
                 for name, module_name in BENCHMARKS.items())


COMMANDS = (
    Command("bench", "run a benchmark: prints a table and writes JSON rows",
            description="paper reproductions and performance benchmarks",
            epilog=examples("bench"), actions=_benchmarks, actions_dest="benchmark",
            actions_metavar="NAME"),
)
