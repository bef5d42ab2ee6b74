"""Reading back what the pipeline did: one cycle's plan explained from its MLflow run (`reconf
audit`), and the what-if's shadow plans compared across periods (`reconf compare`).

Both only read: nothing here writes a store, so neither checks RECONF_HOME first.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reconf.cli.command import JOB_HELP, Command
from reconf.compare import HELP as COMPARE_HELP

__all__ = ["COMMANDS"]


def _cmd_compare(args: argparse.Namespace) -> int:
    from reconf.compare import compare, format_compare, plot_compare

    report = compare(args.job, args.since, until=args.until)
    print(format_compare(report))
    if args.plot:
        plot_compare(report, args.plot)
        print(f"plot: {args.plot}")
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    import json

    from reconf.audit import audit, format_report

    report = audit(args.job, args.period_end, args.key_group, dry_run=args.dry_run,
                   compare=args.compare, plan_id=args.plan_id, version=args.version)
    print(json.dumps(report, indent=2, sort_keys=True) if args.json else format_report(report))
    return 0


_AUDIT_HELP = """\
why a cycle's plan moved what it moved, read back from its MLflow run (never recomputed):
the run (id and UI link; RECONF_MLFLOW_URL sets the UI address), strategy, budget, load
distance before/after and lower bound, each migration with its load, state size and reason,
the scaling decision, the validation summary, the Delta table versions read and written,
the Airflow DAG run, and the published assignment version.

examples:
  reconf audit --job flights2 --period-end 2026-01-01T00:10:00Z
  reconf audit --job flights2 --period-end 2026-01-01T00:10:00Z --key-group 17
  reconf audit --job flights2 --period-end 2026-01-01T00:10:00Z --json | jq .moves
  reconf audit --job flights2 --version 6      # the plan published as v6 (e.g. a rollback)
"""


def _compare_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", required=True, help="job id")
    parser.add_argument("--since", required=True, metavar="T",
                        help="first period end to include, ISO-8601 with a zone")
    parser.add_argument("--until", metavar="T", help="last period end to include (default: all)")
    parser.add_argument("--plot", metavar="PATH", type=Path,
                        help="write a PNG: each strategy's load distance after, over the periods")


def _audit_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--job", required=True, help=JOB_HELP)
    parser.add_argument("--period-end", metavar="T", help="end of the statistics period, "
                        "ISO-8601 with a zone (e.g. 2026-01-01T00:05:00Z); or give --version")
    parser.add_argument("--version", type=int, metavar="N",
                        help="audit the plan published as version N (a period's plan, a "
                        "rollback or a healing: each is a version of its own)")
    parser.add_argument("--key-group", metavar="K",
                        help="also say whether key group K moved, from/to, its load, state size "
                        "and why (full id, or its number when unambiguous, e.g. 17)")
    parser.add_argument("--compare", action="store_true",
                        help="also print the what-if comparison: each shadow strategy's plan of "
                        "the same state (LD after, lower bound, migrations, cost, wall time, "
                        "status)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--plan-id", help="audit this attempt of the period (default: its "
                        "published plan, else its newest attempt; the report lists the others)")
    parser.add_argument("--dry-run", action="store_true",
                        help="audit the period's dry run instead of its real cycle")


COMMANDS = (
    Command("compare", "how each strategy's shadow plans compared with the plan in force, "
            "across periods", _cmd_compare, _compare_arguments, description=COMPARE_HELP),
    Command("audit", "explain one cycle's plan from its MLflow run", _cmd_audit,
            _audit_arguments, description=_AUDIT_HELP),
)
