"""collect at 10^6 .. 10^8 samples a period: pyarrow in the stage's process vs Spark.

A generator lands one period of a job of `n` edge samples (each key group sends to `--fanout`
key groups, `--per-pair` samples per pair in the period, plus one key-group and one node sample
per key group and node and sample time) by streaming record batches to Parquet, so the landing
of 10^8 samples never sits in memory. Each engine then runs the real collect stage
(jobs/collect/stage.py, the job's lock, the markers, the Delta commits) on that period in a
fresh interpreter:

- `native`: `RECONF_LAKE_IO=native`, the aggregation by pyarrow in the stage's process;
- `spark`: `RECONF_LAKE_IO=auto` with a crossover of 0 (jobs/collect/engine.py), the
  aggregation on Spark (`--master`, default local[2]; a `spark://` standalone cluster keeps the
  executors out of the driver) and the three tables written to Delta from Spark.

Per run: wall and CPU seconds of the stage (the driver's process tree, not the executors'), and
the driver's peak memory, the largest summed resident set of the stage's process and its
children (the driver JVM of an in-process Spark session) sampled every 0.2 s. The crossover
`auto` uses (jobs/collect/engine.py `SPARK_ABOVE_SAMPLES`) comes from this table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

DESCRIPTION = "collect at 10^6..10^8 samples a period: pyarrow vs Spark (time, driver memory)"

SIZES_FULL, SIZES_QUICK = (1_000_000, 10_000_000, 100_000_000), (100_000, 1_000_000)
ROOT = Path(__file__).resolve().parents[1]
PERIOD_END = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
SPL = timedelta(minutes=5)
JOB = "big"
_BATCH = 2_000_000  # rows per record batch the generator writes

_CHILD = """
import json, sys, time
from jobs.collect.stage import collect_period
from jobs.context import stage_context
from jobs.spark.session import lazy_spark
from schemas.config import Paths, resolve_job
from schemas.landing import parse_period_end
paths, config = Paths.from_env(), sys.argv[1]
job = resolve_job(sys.argv[2], config)
spark = lazy_spark(paths)
start, cpu = time.perf_counter(), time.process_time()
result = collect_period(stage_context(job, parse_period_end(sys.argv[3]), paths, spark))
print("BENCH-JSON " + json.dumps({"seconds": time.perf_counter() - start, "engine": result.engine,
                                   "rows": result.rows, "py_cpu_s": time.process_time() - cpu}))
"""


@dataclass(frozen=True)
class Landed:
    """A generated period: its directory and what it holds."""

    where: Path
    edge_samples: int
    samples: int  # every kind
    pairs: int
    keygroups: int


def land_streamed(landing: Path, job_id: str, period_end: datetime, edge_samples: int, *,
                  fanout: int = 16, per_pair: int = 60, nodes: int = 100, seed: int = 7
                  ) -> Landed:
    """Land one period of about `edge_samples` edge samples (rounded up to whole pairs), batch by
    batch through `pyarrow.parquet.ParquetWriter`, and `_SUCCESS` last (schemas/landing.py)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from schemas.landing import EDGES, KEYGROUPS, NODES, SCHEMAS, SUCCESS_MARKER, period_dir

    pairs = -(-edge_samples // per_pair)
    count = max(fanout + 1, -(-pairs // fanout))
    pairs = count * fanout
    names = pa.array([f"kg{k:07d}" for k in range(count)])
    node_names = pa.array([f"node-{k:03d}" for k in range(nodes)])
    rng = np.random.default_rng(seed)
    start_us = int((period_end - SPL).timestamp() * 1_000_000)
    step_us = int(SPL.total_seconds() * 1_000_000) // per_pair
    final = period_dir(landing, job_id, period_end)
    where = final.with_name("." + final.name)  # hidden until complete, as runtime/source.py does

    def ts(rows: Any, per_sample: int) -> pa.Array:
        return pa.array(start_us + (rows // per_sample) * step_us + step_us // 2,
                        type=SCHEMAS[EDGES].field("ts").type)

    def stream(kind: str, total: int, batch: Any) -> None:
        (where / kind).mkdir(parents=True, exist_ok=True)
        with pq.ParquetWriter(where / kind / "part-0.parquet", SCHEMAS[kind]) as out:
            for lo in range(0, total, _BATCH):
                rows = np.arange(lo, min(total, lo + _BATCH), dtype=np.int64)
                out.write_table(pa.table(batch(rows), schema=SCHEMAS[kind]))

    def edges(rows: Any) -> list[Any]:
        pair = rows % pairs
        src = pair // fanout
        dst = (src + 1 + (pair % fanout) * max(1, count // fanout)) % count
        tuples = rng.integers(1, 1000, len(rows))
        return [ts(rows, pairs), pc.take(names, pa.array(src)), pc.take(names, pa.array(dst)),
                pa.array(tuples), pa.array(tuples * 64)]

    def keygroups(rows: Any) -> list[Any]:
        k = rows % count
        tuples = rng.integers(1, 1000, len(rows))
        return [ts(rows, count), pc.take(pa.array(["op0", "op1"]), pa.array(k % 2)),
                pc.take(names, pa.array(k)), pc.take(node_names, pa.array(k % nodes)),
                pa.array(tuples), pa.array(tuples), pa.array(rng.random(len(rows)) * 50.0),
                pa.array(tuples * 100)]

    def node_rows(rows: Any) -> list[Any]:
        return [ts(rows, nodes), pc.take(node_names, pa.array(rows % nodes)),
                pa.array(np.ones(len(rows))), pa.array(rng.random(len(rows)) * 1000.0)]

    stream(EDGES, pairs * per_pair, edges)
    stream(KEYGROUPS, count * per_pair, keygroups)
    stream(NODES, nodes * per_pair, node_rows)
    (where / SUCCESS_MARKER).write_text("")
    where.rename(final)
    total = (pairs + count + nodes) * per_pair
    return Landed(final, pairs * per_pair, total, pairs, count)


def _config(fanout: int) -> str:
    return "\n".join([
        "[defaults]", 'spl = "5m"', 'strategy = "greedy"', "start_date = 2026-01-01T00:00:00Z", "",
        f"[jobs.{JOB}]", 'source = { kind = "synthetic", operators = 2, keygroups_per_operator '
        f"= 10, nodes = 8, seed = 7, fanout = {fanout} }}", ""])


def _tree(pid: int) -> list[Any]:
    """The process `pid` and its descendants (the driver JVM of an in-process session)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        return [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _sample(pid: int, cpu: dict[int, float]) -> int:
    """The tree's summed resident set now; each process's CPU seconds so far into `cpu`."""
    import psutil

    rss = 0
    for p in _tree(pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            rss += p.memory_info().rss
            times = p.cpu_times()
            cpu[p.pid] = times.user + times.system
    return rss


def run_engine(engine: str, home: Path, config: Path, master: str | None) -> dict[str, Any]:
    """The collect stage on the landed period in a fresh interpreter, watched for memory."""
    env = {**os.environ, "RECONF_HOME": str(home), "RECONF_CONFIG": str(config),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    env.pop("RECONF_SPARK_REMOTE", None)
    if engine == "native":
        env["RECONF_LAKE_IO"] = "native"
    else:
        env.update(RECONF_LAKE_IO="auto", RECONF_COLLECT_SPARK_ABOVE="0")
        env.setdefault("RECONF_SPARK_DRIVER_MEMORY", "1g")
        if master:
            env["RECONF_SPARK_MASTER"] = master
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(config), JOB,
                              PERIOD_END.strftime("%Y-%m-%dT%H:%M:%SZ")], env=env, cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak, cpu = [0], dict[int, float]()

    def watch() -> None:
        while child.poll() is None:
            peak[0] = max(peak[0], _sample(child.pid, cpu))
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out, err = child.communicate()
    watcher.join()
    line = next((x for x in out.splitlines() if x.startswith("BENCH-JSON ")), None)
    if child.returncode != 0 or line is None:
        raise SystemExit(f"bench collect-spark: {engine} failed:\n{err[-3000:]}")
    got = json.loads(line.split(" ", 1)[1])
    got.update(peak_mib=peak[0] / 2**20, cpu_s=sum(cpu.values()))
    return dict(got)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", type=float, nargs="+", default=None, metavar="N",
                        help="edge samples per period (default 1e6 1e7 1e8; --quick: 1e5 1e6)")
    parser.add_argument("--engines", nargs="+", choices=("native", "spark"),
                        default=["native", "spark"],
                        help="which engines run collect on each landed period: native (pyarrow "
                             "in the stage's process), spark (default both)")
    parser.add_argument("--native-max", type=float, default=None, metavar="N",
                        help="skip the native engine above N edge samples (where one process "
                             "cannot hold the period)")
    parser.add_argument("--master", default=None, help="Spark master for the spark engine "
                        "(spark://host:port of infra/spark-cluster.sh; default local[2])")
    parser.add_argument("--fanout", type=int, default=16,
                        help="key groups each key group sends to (default 16)")
    parser.add_argument("--per-pair", type=int, default=60, help="samples per pair a period")


def main(args: argparse.Namespace) -> int:
    from bench import default_json_path, write_rows

    sizes = [int(s) for s in (args.sizes or (SIZES_QUICK if args.quick else SIZES_FULL))]
    rows: list[dict[str, Any]] = []
    print(f"{'edge samples':>12} {'samples':>11} {'pairs':>9} {'engine':>7} {'seconds':>8} "
          f"{'cpu s':>7} {'samples/s':>10} {'peak MiB':>8}  land s", flush=True)
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="bench-collect-spark-") as tmp:
            config = Path(tmp) / "jobs.toml"
            config.write_text(_config(args.fanout))
            t0 = time.perf_counter()
            landed = land_streamed(Path(tmp) / "landing", JOB, PERIOD_END, n,
                                   fanout=args.fanout, per_pair=args.per_pair)
            land_s = time.perf_counter() - t0
            for engine in args.engines:
                if engine == "native" and args.native_max and n > args.native_max:
                    continue
                home = Path(tmp) / engine
                home.mkdir()
                (home / "landing").symlink_to(Path(tmp) / "landing")
                got = run_engine(engine, home, config, args.master)
                row = {"edge_samples": landed.edge_samples, "samples": landed.samples,
                       "pairs": landed.pairs, "keygroups": landed.keygroups, "engine": engine,
                       "chosen": got["engine"], "seconds": got["seconds"],
                       "cpu_s": got["cpu_s"], "peak_mib": got["peak_mib"],
                       "samples_per_s": landed.samples / got["seconds"], "land_s": land_s,
                       "rows": got["rows"], "master": args.master or "local[2]",
                       "load": os.getloadavg()[0]}
                rows.append(row)
                print(f"{landed.edge_samples:>12} {landed.samples:>11} {landed.pairs:>9} "
                      f"{engine:>7} {row['seconds']:>8.1f} {row['cpu_s']:>7.1f} "
                      f"{row['samples_per_s']:>10.0f} {row['peak_mib']:>8.0f}  {land_s:.1f}",
                      flush=True)
    path = write_rows(args.json or default_json_path("collect-spark", args.quick), rows)
    print(f"rows: {path}")
    return 0
