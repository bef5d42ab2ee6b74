"""One reconfiguration cycle end to end, today's path against a long-lived Spark Connect server.

A cycle is: the runtime stand-in lands a period, collect, validate, plan, publish, the runtime
applies the new version. Three ways to run the four stages, side by side in one run:

- `process+jvm` (today): each stage in a fresh Python process with its own in-process Spark
  (a JVM per stage), as an Airflow task runs it;
- `process+connect`: each stage in a fresh process as a thin client of one Spark Connect server
  (`RECONF_SPARK_REMOTE`), as an Airflow task runs it after `make up`;
- `worker+connect`: the stages in one long-lived process (imports, GE context, MLflow client and
  the Connect session warm), the floor a resident worker reaches.

Per stage: wall seconds and its layers (bench/cycle_stage.py: process start, imports, Spark
session, Delta, GE, solver, MLflow, other). Every (job, mode) gets its own RECONF_HOME, runs one
untimed warm-up cycle (period 1; the server's JIT, MLflow's schema) and times period 2, whose
plan starts from period 1's published assignment. Growth: synthetic jobs of 10^2 .. 3*10^4 key
groups (greedy strategy, so the solver does not hide the pipeline), and 1, 2, 4 demo-sized jobs
cycled at once (one thread per job, Airflow-style). The Connect server is started on a free port
(infra/spark-connect.sh) unless `--remote` names one, and stopped at the end. `--quick`: the old
path for the demo job only, sizes 10^2 and 10^3, 1 and 2 jobs (about 15 minutes on 2 busy
cores; most of it the old path's JVM starts).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.cycle_stage import STAGES

DESCRIPTION = "one cycle land -> applied: stages with a JVM each (today) vs Spark Connect clients"

TARGET_S = 10.0  # one demo-job cycle, land -> applied
MODES = ("process+jvm", "process+connect", "worker+connect")
ROOT = Path(__file__).resolve().parents[1]
DEMO = 'source = { kind = "synthetic", operators = 4, keygroups_per_operator = 16, nodes = 8, seed = 7, varies = 30 }'
SIZES_FULL, SIZES_QUICK = (100, 1_000, 10_000, 30_000), (100, 1_000)
FLEET_FULL, FLEET_QUICK = (1, 2, 4), (1, 2)
COLUMNS = ("proc_start", "import", "spark", "read", "delta", "ge", "solver", "mlflow", "other")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--remote", metavar="URL", help="use this Spark Connect server (sc://…) "
                        "instead of starting one")
    parser.add_argument("--no-growth", action="store_true", help="time the demo job only")
    parser.add_argument("--sizes", type=int, nargs="+", metavar="N",
                        help="key-group counts of the growth jobs (default 100 1000 10000 30000; "
                             "--quick: 100 1000)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=None,
                        help="only these modes (default: all three)")


def _config(sizes: tuple[int, ...], fleet: int) -> str:
    lines = ['[defaults]', 'spl = "5m"', 'strategy = "milp"', "max_migrations = 8",
             "solver_time_limit_s = 5", "alpha = 1e-6", "start_date = 2026-01-01T00:00:00Z", ""]
    for i in range(1, max(fleet, 1) + 1):
        lines += [f"[jobs.{'demo' if i == 1 else f'demo{i}'}]", DEMO, ""]
    for n in sizes:
        nodes = max(8, n // 250)
        lines += [f"[jobs.kg{n}]", 'strategy = "greedy"', "max_migrations = 20",
                  f'source = {{ kind = "synthetic", operators = 4, keygroups_per_operator = {n // 4}, '
                  f"nodes = {nodes}, seed = 7, varies = 30 }}", ""]
    return "\n".join(lines)


def _stage_in_process(stage: str, job_id: str, period: str, env: dict[str, str]) -> dict[str, float]:
    """A fresh interpreter runs the stage; process start = spawn to reaching the stage module."""
    spawned = time.time()
    done = subprocess.run([sys.executable, "-m", "bench.cycle_stage", stage, job_id, period],
                          env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.time() - spawned
    line = next((x for x in done.stdout.splitlines() if x.startswith("BENCH-JSON ")), None)
    if done.returncode != 0 or line is None:
        raise SystemExit(f"bench cycle: {stage} of {job_id} failed:\n{done.stderr[-3000:]}")
    import json

    row = json.loads(line.split(" ", 1)[1])
    row["proc_start"] = row.pop("entered") - spawned
    row["wall"] = wall  # includes the interpreter's exit
    return {k: float(v) for k, v in row.items()}


def _worker(env: dict[str, str]) -> subprocess.Popen[str]:
    """A long-lived process that runs stages on request (one line in, one JSON line out)."""
    return subprocess.Popen([sys.executable, "-m", "bench.cycle_stage", "--serve"], env=env,
                            cwd=ROOT, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def _stage_in_worker(worker: subprocess.Popen[str], stage: str, job_id: str, period: str) -> dict[str, float]:
    import json

    assert worker.stdin is not None and worker.stdout is not None
    worker.stdin.write(f"{stage} {job_id} {period}\n")
    worker.stdin.flush()
    while True:
        line = worker.stdout.readline()
        if not line:
            raise SystemExit(f"bench cycle: the worker died during {stage} of {job_id}")
        if line.startswith("BENCH-JSON "):
            row = json.loads(line.split(" ", 1)[1])
            return {"proc_start": 0.0, **{k: float(v) for k, v in row.items()}}


def _cycle(mode: str, job_id: str, period: Any, env: dict[str, str],
           worker: subprocess.Popen[str] | None) -> dict[str, Any]:
    """Land, the four stages, apply: seconds per step and per layer."""
    from reconf.settings import make_source
    from schemas.config import Paths, resolve_job
    from schemas.landing import format_period_end

    paths = Paths(Path(env["RECONF_HOME"]))
    source = make_source(resolve_job(job_id, Path(env["RECONF_CONFIG"])), paths)
    stamp = format_period_end(period)
    t0 = time.perf_counter()
    source.land_period(paths.landing, period)
    row: dict[str, Any] = {"mode": mode, "job": job_id, "period_end": stamp,
                           "land": time.perf_counter() - t0}
    layers = dict.fromkeys(COLUMNS, 0.0)
    for stage in STAGES:
        r = (_stage_in_worker(worker, stage, job_id, stamp) if worker is not None
             else _stage_in_process(stage, job_id, stamp, env))
        row[stage] = r["wall"]
        for k in COLUMNS:
            layers[k] += r.get(k, 0.0)
        row[f"{stage}_layers"] = {k: round(r.get(k, 0.0), 3) for k in COLUMNS}
    t1 = time.perf_counter()
    applied = source.apply_latest(paths.published)
    row["apply"] = time.perf_counter() - t1
    row["applied"] = applied.status
    row["total"] = time.perf_counter() - t0
    row["layers"] = {k: round(v, 3) for k, v in layers.items()}
    return row


def _env(root: Path, mode: str, config: Path, remote: str | None) -> dict[str, str]:
    home = root / mode.replace("+", "-")
    env = {**os.environ, "RECONF_HOME": str(home), "RECONF_CONFIG": str(config),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
           # the stages' subprocesses start faster with C1 only (docs/operations.md)
           "RECONF_SPARK_JAVA_OPTS": os.environ.get("RECONF_SPARK_JAVA_OPTS",
                                                    "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")}
    env.pop("RECONF_SPARK_REMOTE", None)
    if mode.endswith("connect") and remote:
        env["RECONF_SPARK_REMOTE"] = remote
    return env


def _timed_cycles(mode: str, jobs: list[str], root: Path, config: Path, remote: str | None,
                  ) -> list[dict[str, Any]]:
    """Warm-up cycle (period 1) then the timed cycle (period 2) of each job, the jobs at once."""
    from datetime import UTC, datetime, timedelta

    env = _env(root, mode, config, remote)
    p1 = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=5)
    p2 = p1 + timedelta(minutes=5)

    def one(job_id: str) -> dict[str, Any]:
        worker = _worker(env) if mode.startswith("worker") else None
        try:
            _cycle(mode, job_id, p1, env, worker)
            return _cycle(mode, job_id, p2, env, worker)
        finally:
            if worker is not None and worker.stdin is not None:
                worker.stdin.close()
                worker.wait(timeout=120)

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        rows = list(pool.map(one, jobs))
    for row in rows:
        row["jobs_at_once"] = len(jobs)
        _progress(row)
    return rows


def _progress(row: dict[str, Any]) -> None:
    print(f"  {row['mode']:>15} {row['job']:>8} x{row['jobs_at_once']}: {row['total']:6.1f} s  "
          + "  ".join(f"{s} {row[s]:.1f}" for s in STAGES), file=sys.stderr, flush=True)


def start_server(root: Path) -> tuple[str, Any]:
    """A Spark Connect server on a free port (infra/spark-connect.sh): (URL, its pid record)."""
    from jobs.connect import wait_until_serving
    from reconf.procs import alive, free_port, spawn, stop

    port = free_port()
    url = f"sc://127.0.0.1:{port}"
    env = {**os.environ, "RECONF_PYTHON": sys.executable, "RECONF_HOME": str(root / "server")}
    record = spawn("spark-connect", [str(ROOT / "infra" / "spark-connect.sh"), "--port", str(port)],
                   env=env, cwd=ROOT, run_dir=root / "run", log=root / "spark-connect.log", url=url)
    if not wait_until_serving(url, 300.0, lambda: alive(record)):
        stop(record, grace_s=10)
        raise SystemExit(f"bench cycle: the Spark Connect server did not come up; see {record.log}")
    return url, record


def _verdict(value: float, target: float) -> str:
    return "beat" if value < 0.9 * target else "match" if value <= target else "miss"


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"\none cycle, land -> applied (seconds; timed period 2 after a warm-up period)\n"
          f"{'mode':>15} {'job':>8} {'jobs':>4} {'land':>5} "
          + " ".join(f"{s:>8}" for s in STAGES) + f" {'apply':>5} {'total':>6}  vs today  target")
    today = {(r["job"], r["jobs_at_once"]): r["total"] for r in rows if r["mode"] == MODES[0]}
    for r in rows:
        base = today.get((r["job"], r["jobs_at_once"]))
        ratio = f"{base / r['total']:5.1f}x" if base and r["mode"] != MODES[0] else "     -"
        target = (f"{_verdict(r['total'], TARGET_S)} (<= {TARGET_S:.0f} s)"
                  if r["job"] == "demo" and r["jobs_at_once"] == 1 else "")
        print(f"{r['mode']:>15} {r['job']:>8} {r['jobs_at_once']:>4} {r['land']:5.1f} "
              + " ".join(f"{r[s]:8.1f}" for s in STAGES)
              + f" {r['apply']:5.1f} {r['total']:6.1f}  {ratio:>8}  {target}")
    print(f"\nlayers of the demo job's cycle (seconds, summed over the four stages)\n"
          f"{'mode':>15} " + " ".join(f"{c:>10}" for c in COLUMNS))
    for r in rows:
        if r["job"] == "demo" and r["jobs_at_once"] == 1:
            print(f"{r['mode']:>15} " + " ".join(f"{r['layers'][c]:10.2f}" for c in COLUMNS))
    print(f"{'':>15} proc_start: interpreter start; spark: getting the session (JVM start or "
          "Connect handshake); other: Spark reads, pandas, Python")


def main(args: argparse.Namespace) -> int:
    from bench import write_rows

    quick = bool(args.quick)
    sizes = () if args.no_growth else tuple(args.sizes or (SIZES_QUICK if quick else SIZES_FULL))
    chosen = tuple(args.modes or MODES)
    fleet = () if args.no_growth else (FLEET_QUICK if quick else FLEET_FULL)
    root = Path(tempfile.mkdtemp(prefix="reconf-bench-cycle-"))
    config = root / "jobs.toml"
    config.write_text(_config(sizes, max(fleet, default=1)))
    remote, record = (args.remote, None) if args.remote else start_server(root)
    rows: list[dict[str, Any]] = []
    try:
        # --quick: today's path only for the demo job
        modes = tuple(m for m in chosen if not (quick and m == MODES[0]))
        for mode in chosen:
            rows += _timed_cycles(mode, ["demo"], root, config, remote)
        for n in sizes:
            for mode in modes:
                rows += _timed_cycles(mode, [f"kg{n}"], root, config, remote)
        for k in (k for k in fleet if k > 1):
            jobs = ["demo"] + [f"demo{i}" for i in range(2, k + 1)]
            for mode in (m for m in chosen if m.startswith("process")):
                rows += _timed_cycles(mode, jobs, root / f"fleet{k}", config, remote)
    except SystemExit as exc:  # a failed stage: show what was measured before it
        print(exc, file=sys.stderr)
        print_table(rows)
        write_rows(args.json, rows)
        return 1
    finally:
        if record is not None:
            from reconf.procs import stop

            stop(record, grace_s=20)
    print_table(rows)
    write_rows(args.json, rows)
    print(f"\nrows written to {args.json}")
    return 0
