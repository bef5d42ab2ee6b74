"""Publish and apply of one version at 10^4 … 10^6 units: wall, CPU and peak memory, each step in
a fresh process so its peak resident set is its own.

`publish`: what jobs/publish/stage.py does between reading the plans row and committing the
version row, the part that grows with units: parse the plan's JSON, hash its assignment, write
the manifest `v<N>.json`, commit the version's `assignments` rows to Delta (delta-rs). Two ways:
`streamed` is the stage's own code (the plan's arrays, the manifest written a chunk at a time:
schemas/manifest_stream.py); `whole` is the way publish wrote before (one dict per version,
`Manifest.create`, the manifest as one JSON string, `write_manifest`), kept to compare.
`apply`: what a runtime does when LATEST names a new version (runtime/client.py
`AssignmentClient.fetch_latest` then `accept`, the job's key groups known). The plan is
synthetic: units `op<i>-kg<j>` on 1,000 nodes (fewer for small jobs), 1 % of them moved in
waves of 100, as the plans row holds it. Peak memory is the step's own: the process's resident
high-water mark is reset once its input is loaded (Linux `/proc/self/clear_refs`), `peak_mib`
is the step's high-water mark and `added_mib` what it added to the process.
`--quick`: 10^3 and 10^4 units.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DESCRIPTION = "publish (manifest + assignments rows) and apply of one version at 10^4-10^6 units"

SIZES_FULL, SIZES_QUICK = (10_000, 100_000, 1_000_000), (1_000, 10_000)
VARIANTS = ("whole", "streamed")
JOB, END, PID = "big", "2026-01-01T00:05:00Z", "big@2026-01-01T00:05:00Z#1"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", type=int, nargs="+", metavar="N",
                        help="units per version (default 10000 100000 1000000; --quick: 1000 "
                             "10000)")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS),
                        help="how publish writes (default both)")


def units(n: int) -> tuple[list[str], list[str]]:
    """The synthetic job's units, sorted, and their nodes."""
    ops = 8
    keys = sorted(f"op{i % ops}-kg{i // ops:07d}" for i in range(n))
    nodes = max(1, min(1_000, n // 10))
    return keys, [f"node-{(i * 7919) % nodes:04d}" for i in range(n)]


def plan_text(n: int) -> str:
    """The plans row's JSON of a plan for `n` units (as jobs/plan/record.py records it)."""
    from schemas.manifest import assignment_checksum
    from schemas.schedule import Schedule, ScheduledMove, Wave, WaveLimits

    keys, nodes = units(n)
    assignment = dict(zip(keys, nodes, strict=True))
    moved = keys[::100]
    moves = [ScheduledMove(k, "node-x", assignment[k], 1024.0) for k in moved]
    checksum = assignment_checksum(assignment)
    waves = tuple(Wave(tuple(moves[i:i + 100]), 50.0, False) for i in range(0, len(moves), 100))
    schedule = Schedule.sealed(waves, WaveLimits(), checksum)
    return json.dumps({
        "job_id": JOB, "period_end": END, "plan_id": PID, "assignment": assignment,
        "moves": [{"keygroup": k, "src": "node-x", "dst": assignment[k], "cost": 1.0}
                  for k in moved],
        "scaling": {"nodes_to_add": ["node-x"], "nodes_to_mark": [], "nodes_to_terminate": [],
                    "reason": ""},
        "checksum": checksum, "schedule": schedule.to_dict()})


def _rss_hwm_reset() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _publish(variant: str, text: str, home: Path) -> None:
    import pyarrow as pa

    from jobs.lake import Scope
    from jobs.lake.delta_rs import DeltaRsLake
    from jobs.lake.write import conform
    from jobs.plan.attempts import check_identity
    from schemas.config import Paths
    from schemas.manifest import Manifest, ScalingSection, Schedule, write_manifest
    from schemas.tables import ASSIGNMENTS

    paths = Paths(home)
    lake = DeltaRsLake(paths)
    lake.ensure_tables()
    row = {"plan_id": PID, "mlflow_run_id": None}
    # warm-up, untimed: the lake's imports and first commit are not the version's cost
    lake.replace(ASSIGNMENTS, conform(pa.table({
        "job_id": pa.array(["warm"]), "version": pa.array([1], pa.int64()),
        "keygroup": pa.array(["k"]), "node": pa.array(["n"])}), ASSIGNMENTS),
        Scope("warm", version=1))
    if variant == "streamed":
        import jobs.publish.stage  # noqa: F401
        import schemas.manifest_stream  # noqa: F401

    def step() -> None:
        plan = json.loads(text)
        schedule = Schedule.from_dict(plan["schedule"], "bench")
        scaling = ScalingSection(tuple(plan["scaling"]["nodes_to_add"]))
        if variant == "streamed":
            from jobs.publish import stage
            from jobs.publish.version import assignment_rows
            from schemas.manifest_stream import ManifestHead

            keys, nodes = stage._plan_arrays(plan)
            del plan["assignment"]
            checksum = stage._checksum(keys, nodes)
            assert checksum is not None
            check_identity(row, plan, {}, checksum=checksum)
            head = ManifestHead.create(job_id=JOB, version=1, period_end=END, plan_id=PID,
                                       scaling=scaling, schedule=schedule)
            stage._write_version(paths, head, keys, nodes, checksum)
            rows = assignment_rows(JOB, 1, keys, nodes)
        else:  # as publish wrote before streaming (jobs/publish/stage.py at da7f064)
            check_identity(row, plan, {})
            assignment = {str(k): str(v) for k, v in plan["assignment"].items()}
            manifest = Manifest.create(job_id=JOB, version=1, period_end=END, plan_id=PID,
                                       assignment=assignment, scaling=scaling,
                                       schedule=schedule)
            write_manifest(paths.published, manifest)
            keys = sorted(assignment)
            n = len(keys)
            rows = conform(pa.table({"job_id": pa.array([JOB] * n, pa.string()),
                                     "version": pa.array([1] * n, pa.int64()),
                                     "keygroup": pa.array(keys, pa.string()),
                                     "node": pa.array([assignment[k] for k in keys],
                                                      pa.string())}), ASSIGNMENTS)
        lake.replace(ASSIGNMENTS, rows, Scope(JOB, version=1))

    _measure(step)


def _apply(n: int, home: Path) -> None:
    from runtime.client import AssignmentClient
    from schemas.config import Paths
    from schemas.manifest import write_latest

    published = Paths(home).published
    write_latest(published, JOB, 1)
    keys, nodes = units(n)
    known, on = set(keys), set(nodes)
    del keys, nodes

    def step() -> None:
        client = AssignmentClient(published, JOB)
        manifest = client.fetch_latest()
        assert manifest is not None and client.accept(
            manifest, current_version=None, known_keygroups=known, known_nodes=on)

    _measure(step)


def _measure(step: Any) -> None:
    """Run `step` once; print its wall, CPU and peak memory as one JSON line."""
    reset = _rss_hwm_reset()
    before = _status_kib("VmRSS")
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = _status_kib("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print("BENCH-JSON " + json.dumps({"wall_s": wall, "cpu_s": cpu, "peak_mib": peak / 1024,
                                      "added_mib": (peak - before) / 1024,
                                      "hwm_reset": reset}), flush=True)


def _child(argv: list[str]) -> None:
    what, variant, n, home = argv[0], argv[1], int(argv[2]), Path(argv[3])
    if what == "publish":
        _publish(variant, (home / "plan.json").read_text(encoding="utf-8"), home)
    else:
        _apply(n, home)


def _run_child(what: str, variant: str, n: int, home: Path) -> dict[str, Any]:
    env = {**os.environ, "RECONF_HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "bench.publish", what, variant, str(n),
                           str(home)], capture_output=True, text=True, env=env, check=False)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("BENCH-JSON ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"bench publish: the {what} step ({variant}, {n} units) failed:\n"
                           f"{done.stderr[-2000:]}")
    return dict(json.loads(line.removeprefix("BENCH-JSON ")))


def main(args: argparse.Namespace) -> int:
    from bench import write_rows

    sizes = args.sizes or (SIZES_QUICK if args.quick else SIZES_FULL)
    variants = getattr(args, "variants", None) or list(VARIANTS)
    rows: list[dict[str, Any]] = []
    print(f"{'units':>9} {'variant':>9} | {'publish s':>9} {'cpu s':>6} {'peak MiB':>8} "
          f"{'added':>6} | {'apply s':>7} {'cpu s':>6} {'peak MiB':>8} {'added':>6} | "
          f"{'manifest MB':>11}")
    with tempfile.TemporaryDirectory(prefix="reconf-bench-publish-") as tmp:
        for n in sizes:
            text = plan_text(n)
            for variant in variants:
                home = Path(tmp) / f"{n}-{variant}"
                home.mkdir()
                (home / "plan.json").write_text(text, encoding="utf-8")
                pub = _run_child("publish", variant, n, home)
                app = _run_child("apply", variant, n, home)
                size = (home / "published" / JOB / "v1.json").stat().st_size / 1e6
                rows.append({"units": n, "variant": variant, "manifest_mb": size,
                             "load_1min": os.getloadavg()[0],
                             **{f"publish_{k}": v for k, v in pub.items()},
                             **{f"apply_{k}": v for k, v in app.items()}})
                print(f"{n:>9,} {variant:>9} | {pub['wall_s']:9.2f} {pub['cpu_s']:6.2f} "
                      f"{pub['peak_mib']:8.0f} {pub['added_mib']:6.0f} | {app['wall_s']:7.2f} "
                      f"{app['cpu_s']:6.2f} {app['peak_mib']:8.0f} {app['added_mib']:6.0f} | "
                      f"{size:11.1f}", flush=True)
    write_rows(args.json, rows)
    return 0


if __name__ == "__main__":
    _child(sys.argv[1:])
