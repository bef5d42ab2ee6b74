"""Fleet planning throughput: jobs planned per minute, one solver per job on Spark executors.

N synthetic jobs (paper §5.1 generator, `placement/workloads/synthetic.py`, seeds 1..N; each 5 nodes,
40 key groups, 4 operators, varies 30, a budget of 5 migrations, MILP with HiGHS and a 1 s
limit: small instances that solve to optimality) are planned with `jobs.plan.fleet.solve_fleet`, the
same `groupBy(job_id).applyInPandas` call `python -m jobs.plan.stage --fleet` makes, in three modes:

- serial: a plain loop in one Python process, no Spark (the baseline);
- local[2]: in-process Spark, two executor threads with Python workers;
- cluster: the standalone cluster of `infra/spark-cluster.sh` (2 workers x 1 core on loopback).
  `--master spark://…` uses a running one; otherwise the bench starts its own on free ports (a
  throw-away RECONF_HOME) and stops it at the end. `--no-cluster` skips the mode.

Timed: from handing the N tasks to Spark to having the N plans back on the driver (task
serialisation, shuffle, executor Python start-up, the solves); a warm-up of 4 jobs per mode
runs first. Not timed: instance generation, recording (MLflow, Delta; per job as in the per-job
path). `--quick`: N = 10 and 40, local[2] and cluster only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DESCRIPTION = "fleet planning: jobs planned per minute, serial vs local[2] vs standalone cluster"

NODES, KEYGROUPS, OPERATORS, VARIES = 5, 40, 4, 30.0
INSTANCE = {"nodes": NODES, "keygroups": KEYGROUPS, "operators": OPERATORS, "varies": VARIES}
MAX_MIGRATIONS, TIME_LIMIT_S = 5, 1.0
FULL_SIZES, QUICK_SIZES = (10, 100, 1000), (10, 40)
SCRIPT = Path(__file__).resolve().parents[1] / "infra" / "spark-cluster.sh"


def make_tasks(n: int, offset: int = 0) -> list[Any]:
    """N fleet tasks over synthetic jobs `job-<seed>` (seeds offset+1 .. offset+N)."""
    from jobs.plan.fleet import FleetTask
    from placement import Budget, synthetic_state

    tasks = []
    for seed in range(offset + 1, offset + n + 1):
        state = synthetic_state(NODES, KEYGROUPS, OPERATORS, VARIES, seed)
        tasks.append(FleetTask(f"job-{seed:05d}", "milp", {}, state,
                               Budget(max_migrations=MAX_MIGRATIONS), TIME_LIMIT_S))
    return tasks


def _row(mode: str, master: str, n: int, wall: float, outcomes: list[Any]) -> dict[str, Any]:
    plans = [o.plan for o in outcomes if o.plan is not None]
    return {"mode": mode, "master": master, "jobs": n, "wall_s": wall,
            "jobs_per_min": 60.0 * n / wall if wall > 0 else None,
            "solver_s_sum": sum(o.solve_s for o in outcomes),
            "executor_processes": len({o.host for o in outcomes}),
            "failed": n - len(plans), "optimal": sum(p.status.value == "optimal" for p in plans),
            "instance": dict(INSTANCE), "max_migrations": MAX_MIGRATIONS,
            "time_limit_s": TIME_LIMIT_S}


def run_serial(sizes: list[int]) -> list[dict[str, Any]]:
    from jobs.plan.fleet import solve_task

    rows = []
    for task in make_tasks(2, offset=10**6):  # warm-up: imports, the solver's first load
        solve_task(task)
    for n in sizes:
        tasks = make_tasks(n)
        t0 = time.perf_counter()
        outcomes = [solve_task(t) for t in tasks]
        rows.append(_row("serial", "-", n, time.perf_counter() - t0, outcomes))
        _progress(rows[-1])
    return rows


def run_spark(mode: str, master: str, sizes: list[int]) -> list[dict[str, Any]]:
    from jobs.plan.fleet import solve_fleet
    from jobs.spark.session import get_spark
    from schemas.config import Paths

    spark = get_spark(Paths.from_env(), app_name=f"reconf-bench-fleet-{mode}", master=master)
    try:
        solve_fleet(spark, make_tasks(4, offset=10**6))  # warm-up: executors' Python workers
        rows = []
        for n in sizes:
            tasks = make_tasks(n)
            t0 = time.perf_counter()
            outcomes = solve_fleet(spark, tasks)
            rows.append(_row(mode, master, n, time.perf_counter() - t0, list(outcomes.values())))
            _progress(rows[-1])
        return rows
    finally:
        spark.stop()


def _progress(row: dict[str, Any]) -> None:
    print(f"  {row['mode']:>8}  N={row['jobs']:<5} {row['wall_s']:8.1f} s  "
          f"{row['jobs_per_min']:8.1f} jobs/min", file=sys.stderr, flush=True)


def start_cluster() -> tuple[str, dict[str, str]]:
    """Start a standalone cluster on free ports in a throw-away RECONF_HOME: (URL, its env)."""
    import socket

    def free() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    home = tempfile.mkdtemp(prefix="reconf-bench-fleet-")
    env = {**os.environ, "RECONF_HOME": home, "RECONF_SPARK_PORT": str(free()),
           "RECONF_SPARK_UI_PORT": str(free())}
    done = subprocess.run([str(SCRIPT), "up"], env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        stop_cluster(env)
        raise SystemExit(f"bench fleet: could not start the cluster:\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1], env


def stop_cluster(env: dict[str, str]) -> None:
    """Stop the processes `start_cluster` started (infra/spark-cluster.sh down: by pid)."""
    subprocess.run([str(SCRIPT), "down"], env=env, capture_output=True, check=False)


def format_table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'mode':>8}  {'jobs':>5}  {'wall s':>8}  {'jobs/min':>9}  {'solver s':>9}  "
             f"{'procs':>5}  {'optimal':>7}  {'failed':>6}"]
    for r in rows:
        lines.append(f"{r['mode']:>8}  {r['jobs']:>5}  {r['wall_s']:>8.1f}  "
                     f"{r['jobs_per_min']:>9.1f}  {r['solver_s_sum']:>9.1f}  "
                     f"{r['executor_processes']:>5}  {r['optimal']:>7}  {r['failed']:>6}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", help="comma list of fleet sizes N (default 10,100,1000; "
                        "--quick: 10,40)")
    parser.add_argument("--modes", help="comma list of serial, local, cluster (default: all; "
                        "--quick: local,cluster)")
    parser.add_argument("--master", help="use this running standalone cluster (spark://…) "
                        "instead of starting one")
    parser.add_argument("--no-cluster", action="store_true", help="skip the cluster mode")


def _choices(args: argparse.Namespace) -> tuple[list[int], list[str]]:
    sizes = [int(v) for v in args.jobs.split(",")] if args.jobs else list(
        QUICK_SIZES if args.quick else FULL_SIZES)
    if any(n < 1 for n in sizes):
        raise SystemExit(f"bench fleet: --jobs sizes must be >= 1, got {args.jobs}")
    modes = args.modes.split(",") if args.modes else (
        ["local", "cluster"] if args.quick else ["serial", "local", "cluster"])
    unknown = set(modes) - {"serial", "local", "cluster"}
    if unknown:
        raise SystemExit(f"bench fleet: unknown modes {sorted(unknown)}; use serial, local, cluster")
    if args.no_cluster and "cluster" in modes:
        modes.remove("cluster")
    return sizes, modes


def main(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    sizes, modes = _choices(args)
    rows: list[dict[str, Any]] = []
    if "serial" in modes:
        rows += run_serial(sizes)
    if "local" in modes:
        rows += run_spark("local[2]", "local[2]", sizes)
    if "cluster" in modes:
        env = None
        master = args.master
        if master is None:
            master, env = start_cluster()
            print(f"  started a standalone cluster at {master} (stopped at the end)",
                  file=sys.stderr, flush=True)
        try:
            rows += run_spark("cluster", master, sizes)
        finally:
            if env is not None:
                stop_cluster(env)
    print(format_table(rows))
    if args.json:
        from bench import write_rows

        write_rows(args.json, rows)
    print(f"\n{len(rows)} rows written to {args.json} in {time.perf_counter() - t0:.1f} s "
          f"(load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    return 0
