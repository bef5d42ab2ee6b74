"""SPRAWL (Mei 2015) reproduction: §6.3 wide-area placement, §6.4 constrained placement, the
§6.2 EC2 run as a cost-model simulation, and (`--speed`) the issue's speed checks.

Experiments (bench/sprawl/wan.py, bench/sprawl/constrained.py) and targets with their verdicts
(bench/sprawl/report.py). `--quick`: one 1,550-node network with 3 queries per size, 2 trials
per connectivity, 40 single queries per constraint set on an 8-node cluster, the §6.4.2 run on
3 × 3 sites with a 10-failure stop, and the §6.2 simulation with 100 queries. Full: 5 networks
× 10 queries per size, 10 trials, 5 × 200 single queries on 10 nodes, §6.4.2 on 3 × 4 sites
until 20 failures in a row, and the 10-operator exhaustive search of Table 6.4 measured.
`--thesis-size`: the full run with the thesis's 1,000 queries per §6.4.1 trial and 20 queries
per size and network in §6.3.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from bench import write_rows

DESCRIPTION = "SPRAWL (Mei 2015): WAN DP placement, constraints, sharing; thesis §6.2-6.4"

QUICK: dict[str, Any] = {"networks": 1, "per_size": 3, "trials": 2, "per_trial": 4,
                         "c_trials": 1, "c_queries": 40, "c_size": 8, "mq_scale": 12.0,
                         "mq_size": 3, "mq_stop": 10, "cloud": 100, "shared": 1000,
                         "measure_10": False}
FULL: dict[str, Any] = {"networks": 5, "per_size": 10, "trials": 10, "per_trial": 8,
                        "c_trials": 5, "c_queries": 200, "c_size": 10, "mq_scale": 48.0,
                        "mq_size": 4, "mq_stop": 20, "cloud": 100, "shared": 1000,
                        "measure_10": True}
#: `--thesis-size`: the thesis's own counts where FULL is smaller (§6.4.1: 1,000 queries per
#: trial; §6.3: 20 queries per size and network)
THESIS: dict[str, Any] = {**FULL, "per_size": 20, "c_queries": 1000}
SECTIONS = ("wan", "connectivity", "single", "runtimes", "multi", "cloud")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plot", type=Path, default=None, metavar="PATH",
                        help="write the figure (Figures 6-2, 6-3, §6.4.2, §6.2) as a PNG")
    parser.add_argument("--speed", action="store_true",
                        help="also the speed checks: Algorithm 1 on 1,550 nodes, the distributed "
                        "DP's work per domain, 1,000 queries placed with sharing")
    parser.add_argument("--thesis-size", action="store_true",
                        help="the thesis's sizes where the full run is smaller (§6.4.1: 5 × "
                        "1,000 queries; §6.3: 20 queries per size on each of 5 networks)")
    parser.add_argument("--cost-space", default="vivaldi",
                        choices=("vivaldi", "vivaldi2", "mds3"),
                        help="SBON relaxation's cost space: Vivaldi's 2-D coordinates from its "
                        "decentralised algorithm (default), the minimum of Vivaldi's energy "
                        "computed centrally (vivaldi2), or the 3-D classical MDS of the first pass")
    parser.add_argument("--only", default=None,
                        help=f"comma list of sections to run ({', '.join(SECTIONS)})")


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    from bench.sprawl.constrained import cloud, multi_query, runtimes, single_query
    from bench.sprawl.wan import connectivity, speed, wan

    cfg = THESIS if getattr(args, "thesis_size", False) else QUICK if args.quick else FULL
    space = getattr(args, "cost_space", "vivaldi")
    only = set(args.only.split(",")) if getattr(args, "only", None) else set(SECTIONS)
    if bad := only - set(SECTIONS):
        raise SystemExit(f"--only: unknown sections {sorted(bad)}; choose from {SECTIONS}")
    steps = {
        "wan": lambda: wan(cfg["networks"], cfg["per_size"], space=space),
        "connectivity": lambda: connectivity(cfg["trials"], cfg["per_trial"], space=space),
        "single": lambda: single_query(cfg["c_trials"], cfg["c_queries"], cfg["c_size"]),
        "runtimes": lambda: runtimes(cfg["measure_10"]),
        "multi": lambda: multi_query(cfg["mq_scale"], cfg["mq_size"], cfg["mq_stop"]),
        "cloud": lambda: cloud(cfg["cloud"]),
    }
    rows: list[dict[str, Any]] = []
    for name in SECTIONS:
        if name in only:
            t0 = time.perf_counter()
            rows.extend(steps[name]())
            print(f"[sprawl] {name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr,
                  flush=True)
    if getattr(args, "speed", False):
        t0 = time.perf_counter()
        rows.extend(speed(cfg["shared"]))
        print(f"[sprawl] speed: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return rows


def format_table(found: list[tuple[str, str, str, str]]) -> str:
    width = max((len(t[0]) for t in found), default=10)
    lines = [f"{'target':<{width}}  {'thesis':<26}  verdict  ours"]
    lines += [f"{what:<{width}}  {paper:<26}  {verdict:<7}  {ours}"
              for what, paper, ours, verdict in found]
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    from bench.sprawl.report import plot, targets

    t0 = time.perf_counter()
    rows = run(args)
    found = targets(rows)
    print(format_table(found))
    counts = {v: sum(1 for t in found if t[3] == v) for v in ("match", "beat", "miss")}
    print(f"\n{counts['match']} match, {counts['beat']} beat, {counts['miss']} miss")
    write_rows(args.json, rows)
    print(f"{len(rows)} rows written to {args.json} in {time.perf_counter() - t0:.1f} s")
    if args.plot is not None:
        plot(rows, Path(args.plot))
        print(f"figure written to {args.plot}")
    return 0
