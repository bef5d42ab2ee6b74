"""`reconf`: run the reconfiguration pipeline's stages by hand, the demo, and the benchmarks.

Every stage command takes a job id (from the job config, config/jobs.toml or $RECONF_CONFIG) and
the end of a statistics period (ISO-8601 with a zone, e.g. 2026-01-01T00:05:00Z). Stores live
under $RECONF_HOME (default .reconf/ in the project).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from reconf.cli.command import Command, install

__all__ = ["main"]

# The docstring above is `reconf --help`'s text; each command is a `Command` of its group's
# module (reconf/cli/command.py), and `python -m reconf.cli` runs `main` (__main__.py).

_EPILOG = """\
a cycle by hand, for period ending T of job J:
  reconf land --job J --period-end T        # the runtime stand-in lands the period's metrics
  reconf collect --job J --period-end T     # landing zone -> Delta stats tables
  reconf validate --job J --period-end T    # Great Expectations checks; stops on bad stats
  reconf plan --job J --period-end T        # the job's strategy plans -> Delta + MLflow run
  reconf publish --job J --period-end T     # next assignment version + manifest + LATEST
  reconf apply --job J                      # the runtime applies the newest version
or the runtime live, landing each period at its end and applying each version as it appears:
  reconf runtime run --job J                # (make up runs it for the demo job)
or all four pipeline stages at once: reconf cycle --job J --period-end T
why the plan of a period moved what it moved (from its MLflow run):
  reconf audit --job J --period-end T [--key-group K] [--compare]
how other strategies would have planned (shadow plans after each publish, compared over time):
  reconf whatif --job J --period-end T      # by hand; the DAG runs it after every publish
  reconf compare --job J --since T [--plot PATH]
what became of each period's DAG cycle (published, failed at which stage, held, lost):
  reconf period show --job J                # and `reconf period lost` to give a failed one up
every job's plan for a period at once, on Spark:
  reconf fleet --period-end T [--jobs J1,J2]
"""


def _commands() -> tuple[Command, ...]:
    """Every command, in the order `reconf --help` lists them: the pipeline by hand, an
    operator's actions, the live runtime, reading back, the services, the benchmarks."""
    from reconf.cli import audits, bench, live, operator, periods, services, stages

    return (*stages.COMMANDS, *operator.COMMANDS, *periods.COMMANDS, *live.COMMANDS,
            *audits.COMMANDS, *services.COMMANDS, *bench.COMMANDS)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reconf", description=__doc__, epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    install(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"), _commands())
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    import os

    from jobs.errors import check_home
    from reconf.cli.errors import bad_input, check_reasons, closed_stdout, internal_error
    from schemas.config import Paths
    from schemas.errors import ReconfError

    try:
        check_reasons(args)  # before anything is written: one rule for every reason taken
        if args.command in {c.name for c in _commands() if c.uses_home}:
            check_home(Paths.from_env())
        code = int(args.func(args))
        sys.stdout.flush()  # here, not at exit: a reader that went away is seen below
        return code
    except BrokenPipeError:  # `reconf audit … | head -1`: the reader stopped, reconf did not fail
        return closed_stdout()
    # refused input, of every kind (schemas/errors.py); a bare ValueError is a value check of the
    # runtime stand-in or a planner that has not been given that type yet
    except (ReconfError, ValueError) as exc:
        print(f"reconf {args.command}: error: {bad_input(args, exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"reconf {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("RECONF_DEBUG") == "1":
            raise
        return internal_error(args.command, exc)
