"""`reconf runtime run` (a job's stand-in engine in real time, runtime/live.py) and `reconf health
report` (a health report written by hand for the healing DAG)."""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from reconf.cli.command import Command, examples, job_option

__all__ = ["COMMANDS"]


def _cmd_runtime_run(args: argparse.Namespace) -> int:
    from jobs.errors import StageError
    from reconf.runtime_service import live_capable
    from reconf.settings import make_source
    from runtime.live import LiveRuntime, LiveSettings, runtime_lock
    from schemas.config import Paths, resolve_job

    paths = Paths.from_env()
    job = resolve_job(args.job)
    live_capable(job)
    if args.poll <= 0 or args.kill_after < 1:
        raise StageError(f"--poll must be > 0 and --kill-after >= 1 (got {args.poll}, "
                         f"{args.kill_after})", where=f"reconf runtime run --job {job.job_id}",
                         fix="give a positive poll interval in seconds and a period count >= 1")
    stop = threading.Event()
    with runtime_lock(paths.runtime, job.job_id):
        source: Any = make_source(job, paths)
        if args.kill_node is not None and args.kill_node not in source.state.nodes:
            raise StageError(f"job {job.job_id!r} runs no node {args.kill_node!r}",
                             where=f"{paths.runtime / job.job_id / 'runtime.json'} (its nodes: "
                             f"{', '.join(source.state.nodes)})",
                             fix="name one of those nodes with --kill-node")
        healing = job.healing
        settings = LiveSettings(
            job.job_id, job.start_date, job.spl, paths.landing, paths.published, paths.runtime,
            poll_s=args.poll, kill_node=args.kill_node, kill_after=args.kill_after,
            over_capacity=healing.over_capacity_pct / 100.0 if healing and healing.enabled
            else None)
        handlers = _on_stop(stop)
        try:
            summary = LiveRuntime(settings, source, lambda line: print(line, flush=True)).run(stop)
        finally:
            for sig, old in handlers.items():
                signal.signal(sig, old)
    print(f"landed {len(summary.landed)} period(s), applied "
          f"{', '.join(f'v{v}' for v in summary.applied) or 'no new version'}, "
          f"{len(summary.reports)} health report(s)", flush=True)
    return 0


def _on_stop(stop: threading.Event) -> Mapping[int, Any]:
    """SIGTERM and SIGINT set `stop` (the loop finishes its step, then ends); the old handlers."""
    def handler(signum: int, _frame: object) -> None:
        print(f"received {signal.Signals(signum).name}: stopping after the current step",
              flush=True)
        stop.set()

    return {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}


def _cmd_health_report(args: argparse.Namespace) -> int:
    from reconf.health_report import write_by_hand
    from schemas.config import Paths, resolve_job

    job = resolve_job(args.job)
    print(write_by_hand(job, Paths.from_env(), dead=tuple(args.dead),
                        over=tuple(args.over_capacity), reason=args.reason,
                        at=datetime.now(UTC)))
    return 0


def _node_load(text: str) -> tuple[str, float]:
    """`NODE=FRACTION` of --over-capacity (1.8 = 180 % of the node's capacity)."""
    node, sep, value = text.partition("=")
    try:
        load = float(value)
    except ValueError:
        load = -1.0
    if not sep or not node or not load > 0:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give NODE=UTILISATION, the node's measured load over its capacity as a "
            "fraction (e.g. node-02=1.8 for 180 %)")
    return node, load


_RUN_HELP = """\
Run the job's stand-in engine in real time: land each period as wall-clock time passes its end
(on the job's grid, start_date + k*SPL; the first is the newest period that has ended, unless it
is landed already, then the next; a landed period is never landed again), apply each published
version in waves as soon as LATEST names it, write health reports, and keep going until SIGTERM
or SIGINT (Ctrl-C): the step in progress finishes, so no period is ever half-landed. One line
per event. `make up` runs it for the demo job (RECONF_LIVE_JOBS / LIVE_JOBS choose the jobs);
docs/runtime.md, "The live runtime"."""

_REPORT_HELP = """\
Write a health report for the job's runtime by hand (landing/<job>/_health/<id>.json, validated
by the contract's own reader, written atomically): nodes it lost (--dead) and nodes far over
capacity (--over-capacity NODE=UTILISATION). The job's healing DAG heal_<job> picks it up within
seconds (docs/operations.md, "Healing between periods"). A node the job does not run (not in its
runtime's state or its newest landed period) is refused."""


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    job_option(parser)
    parser.add_argument("--kill-node", metavar="NODE",
                        help="simulate a dead node: after the runtime's --kill-after-th landing "
                        "it writes a dead-node report for NODE (default: no node dies)")
    parser.add_argument("--kill-after", type=int, default=1, metavar="N",
                        help="with --kill-node: how many periods it lands first (default: 1)")
    parser.add_argument("--poll", type=float, default=1.0, metavar="S",
                        help="seconds between two looks at LATEST (default: 1)")


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    job_option(parser)
    parser.add_argument("--dead", action="append", default=[], metavar="NODE",
                        help="a node the runtime lost (repeat for more; at least one of --dead "
                        "and --over-capacity)")
    parser.add_argument("--over-capacity", action="append", default=[], type=_node_load,
                        metavar="NODE=UTILISATION",
                        help="a live node's measured load over its capacity, as a fraction "
                        "(node-02=1.8: 180 %%); repeat for more")
    parser.add_argument("--reason", default="", metavar="TEXT",
                        help="why (kept in the report; default: none)")


COMMANDS = (
    Command("runtime", "the job's stand-in runtime, live: lands periods as they end, applies "
            "published versions, writes health reports", epilog=examples("runtime"),
            uses_home=True, actions=(
                Command("run", "run the job's runtime in real time until SIGTERM/SIGINT",
                        _cmd_runtime_run, _run_arguments, description=_RUN_HELP,
                        epilog=examples("runtime")),
            )),
    Command("health", "health reports of the job's runtime, for the healing DAG",
            epilog=examples("health"), uses_home=True, actions=(
                Command("report", "write a health report (dead / over-capacity nodes) by hand",
                        _cmd_health_report, _report_arguments, description=_REPORT_HELP,
                        epilog=examples("health")),
            )),
)
