"""`reconf runtime run` (a job's stand-in engine in real time, runtime/live.py) and `reconf health
report` (a health report written by hand for the healing DAG): their parsers and commands.

Kept out of reconf/cli.py, which wires them in with one call (`add_parsers`)."""

from __future__ import annotations

import argparse
import os
import signal
import textwrap
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from reconf.cli_examples import EXAMPLES

__all__ = ["LIVE_KINDS", "add_parsers", "live_capable"]

_JOB_HELP = "job id from the job config (e.g. demo; `reconf jobs` lists them)"

#: The source kinds the live runtime drives. The replay engine and the query platform replay a
#: fixed data set period by period from the job's start_date (landing today's period would
#: first replay every period since); the Kafka Streams job is a real engine the demo drives.
LIVE_KINDS = frozenset({"synthetic"})
_WHY_NOT = {
    "replay": "the replay engine replays its data set period by period from the job's "
              "start_date, so landing the current period would first replay every period since",
    "queries": "the query platform replays its data set period by period from the job's "
               "start_date, so landing the current period would first replay every period since",
    "kafka-streams": "it is a real Kafka Streams engine whose periods `reconf demo --job "
                     "<job>` drives one at a time, not a stand-in the live runtime runs",
}


def live_capable(job: Any) -> None:
    """Refuse, with what/where/fix, a job whose source the live runtime cannot drive."""
    from jobs.errors import StageError

    kind = str(job.source.get("kind", "synthetic"))
    if kind in LIVE_KINDS:
        return
    why = _WHY_NOT.get(kind, f"its source kind {kind!r} has no stand-in")
    config = os.environ.get("RECONF_CONFIG") or "config/jobs.toml"
    raise StageError(
        f"job {job.job_id!r} has no live stand-in: {why}",
        where=f"{config}: jobs.{job.job_id}.source (kind = {kind!r})",
        fix=f"run a job with a synthetic source live (`reconf runtime run --job demo`; kinds: "
            f"{', '.join(sorted(LIVE_KINDS))}), or land this job's periods one at a time: "
            f"`reconf land --job {job.job_id} --period-end T`")


def _cmd_runtime_run(args: argparse.Namespace) -> int:
    from jobs.errors import StageError
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


def _group(sub: Any, name: str, help_text: str) -> Any:
    """A command with sub-commands (`reconf runtime run`), its examples in its --help."""
    parser = sub.add_parser(name, help=help_text, description=textwrap.fill(help_text, 79),
                            epilog="examples:\n" + "\n".join(f"  {e}" for e in EXAMPLES[name]),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser.add_subparsers(dest="action", required=True, metavar="ACTION")


def _leaf(group: Any, name: str, parent: str, fn: Callable[[argparse.Namespace], int],
          short: str, description: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = group.add_parser(
        name, help=short, description=description,
        epilog="examples:\n" + "\n".join(f"  {e}" for e in EXAMPLES[parent]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(func=fn)
    return parser


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


def add_parsers(sub: Any) -> None:
    """`reconf runtime run` and `reconf health report` on `reconf`'s sub-command table."""
    runtime = _group(sub, "runtime", "the job's stand-in runtime, live: lands periods as they "
                     "end, applies published versions, writes health reports")
    run = _leaf(runtime, "run", "runtime", _cmd_runtime_run,
                "run the job's runtime in real time until SIGTERM/SIGINT", _RUN_HELP)
    run.add_argument("--job", required=True, help=_JOB_HELP)
    run.add_argument("--kill-node", metavar="NODE",
                     help="simulate a dead node: after the runtime's --kill-after-th landing it "
                     "writes a dead-node report for NODE (default: no node dies)")
    run.add_argument("--kill-after", type=int, default=1, metavar="N",
                     help="with --kill-node: how many periods it lands first (default: 1)")
    run.add_argument("--poll", type=float, default=1.0, metavar="S",
                     help="seconds between two looks at LATEST (default: 1)")
    health = _group(sub, "health", "health reports of the job's runtime, for the healing DAG")
    report = _leaf(health, "report", "health", _cmd_health_report,
                   "write a health report (dead / over-capacity nodes) by hand",
                   _REPORT_HELP)
    report.add_argument("--job", required=True, help=_JOB_HELP)
    report.add_argument("--dead", action="append", default=[], metavar="NODE",
                        help="a node the runtime lost (repeat for more; at least one of --dead "
                        "and --over-capacity)")
    report.add_argument("--over-capacity", action="append", default=[], type=_node_load,
                        metavar="NODE=UTILISATION",
                        help="a live node's measured load over its capacity, as a fraction "
                        "(node-02=1.8: 180 %%); repeat for more")
    report.add_argument("--reason", default="", metavar="TEXT",
                        help="why (kept in the report; default: none)")
