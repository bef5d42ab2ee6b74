"""Live scheduled cycles: how long after its period ends is a period's plan published?

Starts its own Airflow as `make up` does (kit.py), with the project's `demo` job on a short SPL
(default 30 s), lands each period in real time at its end with the runtime stand-in
(`kit.land_now`: apply the newest version, land the period), and lets the scheduler run the
cycles as it runs an operator's. Per period it reports, in seconds after the period end: landed
(the `_SUCCESS` marker's mtime), noticed (the end of `wait_for_landing`), each stage's task
start and end (the metadata DB; the stages' own start and end from their `reconf-stage` log
lines), and published (the manifest's mtime); then where the time went per task (report.py) and
the target: period end -> published <= 15 s, p50 and max, each match / beat / miss.

The first `--warmup` runs (default 1) are reported but not timed: a job's first cycle creates
its Delta tables and its MLflow experiment. `--quick`: 3 timed periods.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

DESCRIPTION = ("live scheduled cycles of the demo job through the real scheduler: period end -> "
               "landed -> noticed -> each stage -> published, against <= 15 s")

FINAL = ("success", "failed")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--periods", type=int, default=None, metavar="N",
                        help="timed periods (default 5; --quick: 3)")
    parser.add_argument("--warmup", type=int, default=1, metavar="N",
                        help="runs before the timed ones, reported but not timed (default 1)")
    parser.add_argument("--spl", type=int, default=30, metavar="S",
                        help="the job's statistics period in seconds (default 30)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra setting of the Airflow services (e.g. "
                             "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME=1), repeatable")
    parser.add_argument("--home", type=Path, default=None, metavar="DIR",
                        help="where its RECONF_HOME goes (default a new temporary directory)")


def _settings(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"bench live: --env {pair!r} is not KEY=VALUE")
        out[key] = value
    return out


def measure(root: Path, spl: timedelta, runs: int, env: dict[str, str]
            ) -> tuple[list[dict[str, Any]], dict[str, float | None]]:
    """Start Airflow under `root`, land periods live until `runs` scheduled runs have ended, and
    return their records (kit.read_records) and the % of a core the scheduler's and the
    triggerer's own processes used meanwhile."""
    from bench.live.kit import (
        Lander,
        cpu_seconds,
        job_config,
        read_records,
        scheduled_runs,
        started_airflow,
    )

    now = datetime.now(UTC)
    start = now.replace(second=0, microsecond=0) - timedelta(hours=1)  # any past grid origin
    with started_airflow(root, job_config(spl, start), env) as paths:
        print(f"Airflow is up ({time.strftime('%H:%M:%S')}); landing a period every "
              f"{spl.total_seconds():g} s until {runs} scheduled runs have ended", flush=True)
        lander = Lander(paths, start, spl)
        lander.start()
        services = ("scheduler", "triggerer")
        cpu0, wall0 = {n: cpu_seconds(paths, n) for n in services}, time.monotonic()
        deadline = time.monotonic() + (runs + 4) * spl.total_seconds() + 300
        seen: set[str] = set()
        try:
            while True:
                if lander.error is not None:
                    raise RuntimeError(f"the lander failed: {lander.error!r}") from lander.error
                done = [r for r in scheduled_runs(paths) if r[2] in FINAL]
                for logical, _, state in done:
                    if logical not in seen:
                        seen.add(logical)
                        print(f"  run {logical}: {state}", flush=True)
                if len(done) >= runs:
                    break
                if time.monotonic() > deadline:
                    print(f"bench live: only {len(done)} of {runs} runs ended in time; "
                          "reporting those", file=sys.stderr)
                    break
                time.sleep(1.0)
        finally:
            lander.stop.set()
            lander.join(timeout=60)
        wall = time.monotonic() - wall0
        cpu = {f"{n}_cpu_pct": None if (a := cpu0[n]) is None or (b := cpu_seconds(paths, n)) is None
               else round(100 * (b - a) / wall, 1) for n in services}
        records = read_records(paths, dict(lander.landed), dict(lander.loads))[:runs]
    (root / "records.json").write_text(json.dumps(records, indent=1))  # to look at again later
    return records, cpu


def main(args: argparse.Namespace) -> int:
    from bench import write_rows
    from bench.live.report import breakdown, period_rows, print_tables, target_row

    periods = args.periods or (3 if args.quick else 5)
    spl = timedelta(seconds=args.spl)
    env = _settings(args.env)
    root = args.home or Path(tempfile.mkdtemp(prefix="reconf-bench-live-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"bench live: demo job, SPL {args.spl} s, {args.warmup} warm-up + {periods} timed "
          f"periods; home {root}; load {os.getloadavg()[0]:.1f}"
          + (f"; settings {env}" if env else ""), flush=True)
    records, cpu = measure(root, spl, args.warmup + periods, env)
    rows = period_rows(records, args.warmup)
    parts = breakdown(rows)
    target = {**target_row(rows, float(args.spl)), **cpu, "settings": env}
    print_tables(rows, parts, target)
    print(f"wrote {write_rows(args.json, [*rows, *parts, target])}")
    return 0 if target["published"] == target["periods"] else 1
