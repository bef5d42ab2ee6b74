"""collect's aggregation without Spark (jobs/collect/native.py) on the cycle's growth jobs.

Lands one period of a synthetic job of 10^2 .. 10^4 key groups (the shapes of `reconf bench
cycle`'s growth jobs: at 10^4 key groups, 45 million edge samples of 9 million pairs), then times
`collect_frames` on it in a fresh interpreter, which also reports its peak memory. The target is
Spark's `collect` on the same period (docs/benchmarks.md: 180 s at 10^4 key groups).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

DESCRIPTION = "collect's aggregation with pyarrow (no Spark): time and peak memory by job size"

SIZES_FULL, SIZES_QUICK = (100, 1_000, 10_000), (100, 1_000)
SPARK_S = {10_000: 180.0}  # Spark's collect at that size (docs/benchmarks.md, "cycle")

_CHILD = """
import json, resource, sys, time
from datetime import timedelta
from pathlib import Path
from jobs.collect.native import collect_frames
from schemas.landing import EDGES, KEYGROUPS, NODES, parse_period_end
landed, job_id, period_end = Path(sys.argv[1]), sys.argv[2], parse_period_end(sys.argv[3])
class Job:
    spl = timedelta(seconds=300)
Job.job_id = job_id
files = {k: sorted((landed / k).glob("*.parquet")) for k in (KEYGROUPS, EDGES, NODES)}
usage = resource.getrusage(resource.RUSAGE_SELF)
before, cpu = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
start = time.perf_counter()
frames = collect_frames(Job, period_end, files, {}, landed)
seconds = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": seconds, "groups": frames.groups, "rss_before_mb": before / 1024,
                  "cpu_s": usage.ru_utime + usage.ru_stime - cpu,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help="key-group counts (default 100 1000 10000; --quick: 100 1000)")


def _land(n: int, root: Path) -> tuple[Path, str, int]:
    """One period of the growth job of `n` key groups; its directory, id and edge samples."""
    from datetime import UTC, datetime

    from runtime.synthetic import SyntheticJob, SyntheticSpec

    operators = max(4, -(-n // 1000))
    spec = SyntheticSpec(f"kg{n}", operators=operators, keygroups_per_operator=n // operators,
                         nodes=min(100, max(8, n // 250)), seed=7, varies=30)
    period_end = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    where = SyntheticJob(spec, root / "state").land_period(root / "landing", period_end)
    k = spec.keygroups_per_operator
    return where, spec.job_id, (operators - 1) * k * k * spec.samples_per_period


def main(args: argparse.Namespace) -> int:
    from bench import default_json_path, write_rows

    sizes = tuple(args.sizes or (SIZES_QUICK if args.quick else SIZES_FULL))
    rows: list[dict[str, Any]] = []
    root = Path(__file__).resolve().parents[1]
    print(f"{'key groups':>10} {'edge samples':>12} {'pairs':>10} {'seconds':>8} "
          f"{'cpu s':>7} {'samples/s':>10} {'peak MB':>8}  target")
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="bench-collect-") as tmp:
            where, job_id, samples = _land(n, Path(tmp))
            done = subprocess.run([sys.executable, "-c", _CHILD, str(where), job_id,
                                   "2026-01-01T00:05:00Z"], cwd=root, capture_output=True,
                                  text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"bench collect-native: {n} key groups failed:\n{done.stderr[-3000:]}")
        got = json.loads(done.stdout.strip().splitlines()[-1])
        spark = SPARK_S.get(n)
        verdict = "" if spark is None else (
            f"Spark {spark:.0f} s: {'beat' if got['seconds'] < spark else 'miss'}")
        row = {"keygroups": n, "edge_samples": samples, "pairs": got["groups"]["edges"],
               "seconds": got["seconds"], "cpu_s": got["cpu_s"], "samples_per_s": samples / got["seconds"],
               "peak_rss_mb": got["peak_rss_mb"], "rss_before_mb": got["rss_before_mb"],
               "spark_s": spark}
        rows.append(row)
        print(f"{n:>10} {samples:>12} {row['pairs']:>10} {row['seconds']:>8.2f} {row['cpu_s']:>7.2f} "
              f"{row['samples_per_s']:>10.0f} {row['peak_rss_mb']:>8.0f}  {verdict}")
    path = write_rows(args.json or default_json_path("collect-native", args.quick), rows)
    print(f"rows: {path}")
    return 0
