"""One reconfiguration cycle end to end: the old path, Spark Connect, and the lake by delta-rs.

A cycle is: the runtime stand-in lands a period, collect, validate, plan, publish, the runtime
applies the new version. Five ways to run the four stages, side by side in one run:

- `process+jvm` (the old path): each stage in a fresh Python process with its own in-process
  Spark (a JVM per stage) reading and writing the lake, as an Airflow task ran it before Spark
  Connect;
- `process+connect`: each stage in a fresh process as a thin client of one Spark Connect server
  (`RECONF_SPARK_REMOTE`) that reads and writes the lake (`RECONF_LAKE_IO=spark`);
- `worker+connect`: the same stages in one long-lived process (imports, GE context, MLflow
  client and the Connect session warm), the floor a resident worker reaches with Spark;
- `process+cluster`, `worker+cluster`: the stages as drivers of a Spark standalone cluster
  (`RECONF_SPARK_MASTER`, `RECONF_LAKE_IO=spark`; bench/cycle/cluster.py starts one unless
  `--master` names it): the lake and collect's aggregation on the executors;
- `process+native`, `worker+native`: the default, the lake read and written by delta-rs and the
  samples aggregated by pyarrow in the stage's process (jobs/lake/delta_rs.py, jobs/lake/write.py,
  jobs/collect/native.py): no Spark at all.

Per stage: wall seconds and its layers (bench/cycle/stage.py: process start, imports, Spark
session, the concurrent reads, Delta, GE, solver, MLflow, other), and the machine's load average
when the cycle ended. Every (job, mode) gets its own RECONF_HOME; its untimed warm-up cycle
(period 1: table creation, MLflow's schema, the server's JIT) runs in one resident Connect worker
shared by all homes (the tables are the same whichever path writes them,
tests/jobs/test_connect_path.py), then period 2 is timed as the mode says; it plans from period
1's published assignment. Growth: synthetic jobs of 10^3, 10^4, 10^5 key groups (greedy strategy,
so the solver does not hide the pipeline; each key group sends to `--fanout` key groups of the
next operator, 0: to all), the growth exponent of every step fitted over them, the issue's
targets (bench/cycle/targets.py: 10^4 key groups x 100 nodes, 32,768 x 1,000, 10^5 x 1,000, by
the MILP) with match / beat / miss, and 1, 4, 16 demo-sized jobs cycled at once on the
one server, each by its own resident worker (as Airflow runs DAGs side by side): the mean
stage times, the wall until all are applied and the cycles per minute. The Connect server is
started on a free port (infra/spark-connect.sh) unless `--remote` names one, and stopped at the
end. `--quick` (a few minutes): the old path for the demo job only, sizes 10^2 and 10^3, 1 and 4
jobs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.cycle.cluster import start_cluster, start_server
from bench.cycle.jobcount import EventLogCounter, print_work
from bench.cycle.stage import STAGES, STEPS
from bench.cycle.targets import TARGETS, print_growth, print_targets, target_config

DESCRIPTION = ("one cycle land -> applied: stages with a JVM each (the old path) vs Spark Connect "
               "clients vs the lake by delta-rs")

TARGET_S = 10.0  # one demo-job cycle, land -> applied
MODES = ("process+jvm", "process+connect", "worker+connect", "process+cluster", "worker+cluster",
         "process+native", "worker+native")
ROOT = Path(__file__).resolve().parents[2]
DEMO = 'source = { kind = "synthetic", operators = 4, keygroups_per_operator = 16, nodes = 8, seed = 7, varies = 30 }'
SIZES_FULL, SIZES_QUICK = (1_000, 10_000, 100_000), (100, 1_000)
GROWTH_FANOUT = 16  # key groups of the next operator each growth job's key group sends to
FLEET_FULL, FLEET_QUICK = (1, 4, 16), (1, 4)
COLUMNS = ("proc_start", "import", "spark", "read", "delta", "ge", "solver", "mlflow", "other")
FLEET_MODE = "worker+native"
_COUNTER: EventLogCounter | None = None  # set by main: every Spark driver logs its events


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--remote", metavar="URL", help="use this Spark Connect server (sc://…) "
                        "instead of starting one")
    parser.add_argument("--master", metavar="URL", help="use this Spark standalone master "
                        "(spark://…) for the +cluster modes instead of starting one")
    parser.add_argument("--no-growth", action="store_true", help="time the demo job only")
    parser.add_argument("--sizes", type=int, nargs="+", metavar="N",
                        help="key-group counts of the growth jobs (default 100 1000 10000 30000; "
                             "--quick: 100 1000)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=None,
                        help="only these modes (default: all five)")
    parser.add_argument("--fanout", type=int, default=GROWTH_FANOUT, metavar="F",
                        help="key groups of the next operator each growth job's key group sends "
                             f"to (default {GROWTH_FANOUT}; 0: all of them, |edges| ~ units^2)")
    parser.add_argument("--targets", nargs="*", choices=[t.name for t in TARGETS], default=None,
                        metavar="NAME", help="run these targets of the issue's sizes ("
                        + ", ".join(f"{t.name}: {t.label}" for t in TARGETS)
                        + "; default: all, none with --quick; --targets alone: none)")
    parser.add_argument("--no-fleet", action="store_true", help="skip the jobs-at-once rows")


def _config(sizes: tuple[int, ...], fleet: int, *, fanout: int = GROWTH_FANOUT,
            targets: tuple[str, ...] = ()) -> str:
    lines = ['[defaults]', 'spl = "5m"', 'strategy = "milp"', "max_migrations = 8",
             "solver_time_limit_s = 5", "alpha = 1e-6", "start_date = 2026-01-01T00:00:00Z", ""]
    for i in range(1, max(fleet, 1) + 1):
        lines += [f"[jobs.{'demo' if i == 1 else f'demo{i}'}]", DEMO, ""]
    for n in sizes:
        # within the synthetic source's limits: ≤ 1000 key groups per operator, ≤ 100 nodes
        operators = max(4, -(-n // 1000))
        nodes = min(100, max(8, n // 250))
        lines += [f"[jobs.kg{n}]", 'strategy = "greedy"', "max_migrations = 20",
                  f'source = {{ kind = "synthetic", operators = {operators}, '
                  f"keygroups_per_operator = {n // operators}, nodes = {nodes}, seed = 7, "
                  f"varies = 30, fanout = {fanout} }}", ""]
    for target in TARGETS:
        if target.name in targets:
            lines += target_config(target)
    return "\n".join(lines)


def _stage_in_process(stage: str, job_id: str, period: str, env: dict[str, str]) -> dict[str, float]:
    """A fresh interpreter runs the stage; process start = spawn to reaching the stage module."""
    spawned = time.time()
    done = subprocess.run([sys.executable, "-m", "bench.cycle.stage", stage, job_id, period],
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
    return subprocess.Popen([sys.executable, "-m", "bench.cycle.stage", "--serve"], env=env,
                            cwd=ROOT, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def _stage_in_worker(worker: subprocess.Popen[str], stage: str, job_id: str, period: str,
                     home: str | None = None) -> dict[str, float]:
    import json

    assert worker.stdin is not None and worker.stdout is not None
    worker.stdin.write(f"{stage} {job_id} {period}{' ' + home if home else ''}\n")
    worker.stdin.flush()
    while True:
        line = worker.stdout.readline()
        if not line:
            raise SystemExit(f"bench cycle: the worker died during {stage} of {job_id}")
        if line.startswith("BENCH-JSON "):
            row = json.loads(line.split(" ", 1)[1])
            return {"proc_start": 0.0, **{k: float(v) for k, v in row.items()}}


def _load() -> float:
    """The 1-minute load average (shown beside every figure: the machine is shared)."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def _cycle(mode: str, job_id: str, period: Any, env: dict[str, str],
           worker: subprocess.Popen[str] | None, home: str | None = None) -> dict[str, Any]:
    """Land, the four stages, apply: seconds per step and per layer. `home`: the RECONF_HOME a
    shared worker switches to (the warm-up worker)."""
    from reconf.settings import make_source
    from schemas.config import Paths, resolve_job
    from schemas.landing import format_period_end

    paths = Paths(Path(home or env["RECONF_HOME"]))
    source = make_source(resolve_job(job_id, Path(env["RECONF_CONFIG"])), paths)
    stamp = format_period_end(period)
    t0 = time.perf_counter()
    row: dict[str, Any] = {"mode": mode, "job": job_id, "period_end": stamp,
                           "units": len(getattr(getattr(source, "spec", None), "keygroups", ()))}
    layers = dict.fromkeys(COLUMNS, 0.0)
    peak, counting = 0.0, 0.0
    counter = _COUNTER if env.get("RECONF_LAKE_IO") == "spark" else None
    if counter is not None:  # the Spark work of each stage (bench/cycle/jobcount.py), untimed
        counter.start(paths.lake)
        t0 = time.perf_counter()
    for stage in STEPS:  # the landing runs where the stages do: its memory counts too
        r = (_stage_in_worker(worker, stage, job_id, stamp, home) if worker is not None
             else _stage_in_process(stage, job_id, stamp, env))
        row[stage] = r["wall"]
        row[f"{stage}_cpu"] = r.get("cpu", float("nan"))
        peak = max(peak, r.get("peak_mib", 0.0))
        if stage == "plan":
            row["gap_pct"] = r.get("gap_pct", float("nan"))
        if stage == "land":
            continue
        if counter is not None:
            t_count = time.perf_counter()
            row.update(counter.take().row(stage))
            counting += time.perf_counter() - t_count
        for k in COLUMNS:
            layers[k] += r.get(k, 0.0)
        row[f"{stage}_layers"] = {k: round(r.get(k, 0.0), 3) for k in COLUMNS}
    row["peak_mib"] = peak
    t1 = time.perf_counter()
    applied = source.apply_latest(paths.published)
    row["apply"] = time.perf_counter() - t1
    row["applied"] = applied.status
    row["total"] = time.perf_counter() - t0 - counting
    row["layers"] = {k: round(v, 3) for k, v in layers.items()}
    row["load"] = _load()
    return row


def _env(root: Path, mode: str, config: Path, remote: str | None,
         master: str | None = None) -> dict[str, str]:
    home = root / mode.replace("+", "-")
    env = {**os.environ, "RECONF_HOME": str(home), "RECONF_CONFIG": str(config),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
           # the stages' subprocesses start faster with C1 only (docs/operations.md)
           "RECONF_SPARK_JAVA_OPTS": os.environ.get("RECONF_SPARK_JAVA_OPTS",
                                                    "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")}
    env.pop("RECONF_SPARK_REMOTE", None)
    if mode.endswith("connect") and remote:
        env["RECONF_SPARK_REMOTE"] = remote
    if mode.endswith("cluster") and master:
        env["RECONF_SPARK_MASTER"] = master
    env["RECONF_LAKE_IO"] = "native" if mode.endswith("native") else "spark"
    return env


_P1 = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=5)
_P2 = _P1 + timedelta(minutes=5)


def _timed_cycle(mode: str, job_id: str, root: Path, config: Path, remote: str | None,
                 warm: subprocess.Popen[str], master: str | None = None) -> dict[str, Any]:
    """The job's warm-up cycle (period 1), then its timed cycle (period 2) as `mode` runs the
    stages. A resident worker warms up itself (its imports, GE context, MLflow client and
    session stay warm); the per-process modes warm up in the shared warm-up worker, which
    spares the old path four JVM starts of an untimed cycle."""
    env = _env(root, mode, config, remote, master)
    worker = _worker(env) if mode.startswith("worker") else None
    try:
        if worker is not None:
            _cycle(mode, job_id, _P1, env, worker)
        else:
            _cycle("warm-up", job_id, _P1, env, warm, home=env["RECONF_HOME"])
        row = _cycle(mode, job_id, _P2, env, worker)
    finally:
        _close(worker)
    row["jobs_at_once"] = 1
    _progress(row)
    return row


def _close(worker: subprocess.Popen[str] | None) -> None:
    if worker is not None and worker.stdin is not None:
        worker.stdin.close()
        worker.wait(timeout=120)


def _fleet(k: int, root: Path, config: Path, remote: str | None) -> dict[str, Any]:
    """k demo-sized jobs cycled at once on the one server, one resident worker each: the mean
    of each step, the wall until every job's version is applied, cycles per minute."""
    env = _env(root / f"fleet{k}", FLEET_MODE, config, remote)
    jobs = ["demo"] + [f"demo{i}" for i in range(2, k + 1)]
    workers = {job: _worker(env) for job in jobs}
    try:
        with ThreadPoolExecutor(max_workers=k) as pool:
            # warm-up: the first job alone (it creates the tables and MLflow's schema), then the rest
            _cycle(FLEET_MODE, jobs[0], _P1, env, workers[jobs[0]])
            list(pool.map(lambda job: _cycle(FLEET_MODE, job, _P1, env, workers[job]), jobs[1:]))
            started = time.perf_counter()
            rows = list(pool.map(lambda job: _cycle(FLEET_MODE, job, _P2, env, workers[job]), jobs))
            wall = time.perf_counter() - started
    finally:
        for worker in workers.values():
            _close(worker)
    mean = {step: sum(r[step] for r in rows) / k for step in ("land", *STAGES, "apply", "total")}
    row: dict[str, Any] = {
        "mode": FLEET_MODE, "job": "demo", "jobs_at_once": k, **mean,
        "per_job_total": mean["total"], "total": wall, "cycles_per_min": 60.0 * k / wall,
        "applied": ",".join(sorted({r["applied"] for r in rows})), "load": _load(),
        "layers": {c: round(sum(r["layers"][c] for r in rows) / k, 3) for c in COLUMNS},
    }
    print(f"  {FLEET_MODE:>15} {k:>3} jobs at once: all applied after {wall:6.1f} s, "
          f"{row['cycles_per_min']:.1f} cycles/min, load {row['load']:.1f}",
          file=sys.stderr, flush=True)
    return row


def _progress(row: dict[str, Any]) -> None:
    print(f"  {row['mode']:>15} {row['job']:>8}: {row['total']:6.1f} s  "
          + "  ".join(f"{s} {row[s]:.1f}" for s in STEPS)
          + f"  peak {row.get('peak_mib', 0.0):.0f} MiB  load {row['load']:.1f}",
          file=sys.stderr, flush=True)


def _verdict(value: float, target: float) -> str:
    return "beat" if value < 0.9 * target else "match" if value <= target else "miss"


def print_table(rows: list[dict[str, Any]]) -> None:
    """The cycles of single jobs (modes side by side, the ratio against the old path and the
    target), their layers, then the jobs-at-once rows."""
    single = [r for r in rows if r["jobs_at_once"] == 1 and "cycles_per_min" not in r]
    print(f"\none cycle, land -> applied (seconds; timed period 2 after a warm-up period; load: "
          f"1-min load average of the 2-core machine at the cycle's end)\n"
          f"{'mode':>15} {'job':>8} {'land':>5} " + " ".join(f"{s:>8}" for s in STAGES)
          + f" {'apply':>5} {'total':>6} {'load':>5}  vs old  target (its own limit; growth jobs "
            f"have none)")
    old = {r["job"]: r["total"] for r in single if r["mode"] == MODES[0]}
    limits = {"demo": TARGET_S, **{t.name: t.cycle_s for t in TARGETS}}
    for r in single:
        base = old.get(r["job"])
        ratio = f"{base / r['total']:5.1f}x" if base and r["mode"] != MODES[0] else "     -"
        print(f"{r['mode']:>15} {r['job']:>8} {r['land']:5.1f} "
              + " ".join(f"{r[s]:8.1f}" for s in STAGES)
              + f" {r['apply']:5.1f} {r['total']:6.1f} {r['load']:5.1f}  {ratio:>6}  "
              + (f"{_verdict(r['total'], limit)} (<= {limit:g} s)"
                 if (limit := limits.get(r["job"])) is not None else "-"))
    print(f"\nlayers (seconds, summed over the four stages)\n{'mode':>15} {'job':>8} "
          + " ".join(f"{c:>10}" for c in COLUMNS))
    for r in single:
        print(f"{r['mode']:>15} {r['job']:>8} " + " ".join(f"{r['layers'][c]:10.2f}" for c in COLUMNS))
    print(f"{'':>24} proc_start: interpreter start; spark: getting the session (JVM start or "
          "Connect handshake); read: the stage's concurrent reads (GE/MLflow imports overlap "
          "them); other: pandas, Python, imports")
    print_work(single)
    fleet = [r for r in rows if "cycles_per_min" in r]
    if fleet:
        print(f"\njobs cycled at once on the machine ({FLEET_MODE}, demo-sized jobs;"
              " stage columns: mean over the jobs)\n"
              f"{'jobs':>4} " + " ".join(f"{s:>8}" for s in STAGES)
              + f" {'cycle/job':>9} {'all applied':>11} {'cycles/min':>10} {'load':>5}")
        for r in fleet:
            print(f"{r['jobs_at_once']:>4} " + " ".join(f"{r[s]:8.1f}" for s in STAGES)
                  + f" {r['per_job_total']:9.1f} {r['total']:11.1f} {r['cycles_per_min']:10.1f}"
                  f" {r['load']:5.1f}")


def main(args: argparse.Namespace) -> int:
    from bench import write_rows

    quick = bool(args.quick)
    sizes = () if args.no_growth else tuple(args.sizes or (SIZES_QUICK if quick else SIZES_FULL))
    chosen = tuple(args.modes or MODES)
    fleet = () if args.no_growth or args.no_fleet else (FLEET_QUICK if quick else FLEET_FULL)
    targets = tuple(args.targets if args.targets is not None
                    else () if quick or args.no_growth else (t.name for t in TARGETS))
    root = Path(tempfile.mkdtemp(prefix="reconf-bench-cycle-"))
    global _COUNTER
    (root / "events").mkdir()  # the Spark drivers started below inherit it (jobs/spark/conf.py)
    os.environ["RECONF_SPARK_EVENT_LOG"] = str(root / "events")
    _COUNTER = EventLogCounter(root / "events")
    config = root / "jobs.toml"
    config.write_text(_config(sizes, max(fleet, default=1), fanout=args.fanout, targets=targets))
    connect = any(mode.endswith("connect") for mode in chosen)
    remote, record = (args.remote, None) if args.remote or not connect else start_server(root)
    on_cluster = any(mode.endswith("cluster") for mode in chosen)
    cluster = None if args.master or not on_cluster else start_cluster(root)
    master = args.master or (cluster.url if cluster else None)
    print(f"bench cycle: server {remote}, cluster {master}, work in {root}, load {_load():.1f}",
          file=sys.stderr,
          flush=True)
    rows: list[dict[str, Any]] = []
    warm = _worker(_env(root, "worker+connect" if remote else "worker+native", config, remote))
    try:
        # the old path at every size only in the full run (a JVM per stage is minutes a cycle)
        sized = tuple(m for m in chosen if not (quick and m == MODES[0]))
        for job, modes in [("demo", chosen), *((f"kg{n}", sized) for n in sizes),
                           *((name, sized) for name in targets)]:
            for mode in modes:
                rows.append(_timed_cycle(mode, job, root, config, remote, warm, master))
        _close(warm)
        for k in fleet:
            if FLEET_MODE in chosen:
                rows.append(_fleet(k, root, config, remote))
    except SystemExit as exc:  # a failed stage: show what was measured before it
        print(exc, file=sys.stderr)
        print_table(rows)
        write_rows(args.json, [*rows, _summary(rows)])
        return 1
    finally:
        _close(warm)
        if cluster is not None:
            cluster.stop()
        if record is not None:
            from runtime.procs import stop

            stop(record, grace_s=20)
    print_table(rows)
    write_rows(args.json, [*rows, _summary(rows)])
    print(f"\nrows written to {args.json}")
    return 0


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The targets' verdicts and the growth exponents (printed, and the JSON's last row)."""
    return {"mode": "summary", "job": "", "jobs_at_once": 0, "targets": print_targets(rows),
            "growth": print_growth(rows), "load": _load(),
            "machine": f"{os.cpu_count()} cores, shared (load: 1-min load average at the end)"}
