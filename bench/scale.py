"""Scale benchmark: the MILP and Flux on 1 000 nodes × 32 768 key groups (Flink's largest count).

The synthetic workload of paper §5.1 (`placement.workloads.synthetic`) with varies 50 and maxMigrations
300; 16 operators of 2 048 key groups each (operators only shape the communication edges, which
load balancing ignores). Each strategy runs in a fresh process (multiprocessing, spawn), which
builds the cluster state and plans it, so its peak RSS (`resource.getrusage`, ru_maxrss) is its
own: interpreter, imports, the state and the planner together.

Targets (paper §5.1): a plan in ≤ 60 s wall, ≤ 4 GiB peak memory, load distance ≤ Flux's.
`--quick` gives the MILP 10 s instead of 30 s.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import sys
import time
from typing import Any

from bench import write_rows

DESCRIPTION = "the MILP and Flux at 1000 nodes x 32768 key groups: wall time, peak RSS, LD"

NODES, KEYGROUPS, OPERATORS = 1000, 32768, 16
VARIES, MAX_MIGRATIONS = 50.0, 300
TARGET_WALL_S, TARGET_RSS_MIB = 60.0, 4096.0


def _peak_rss_mib() -> float:
    """This process's peak resident set size in MiB (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def plan_once(strategy: str, params: dict[str, Any], seed: int, nodes: int, keygroups: int
              ) -> dict[str, Any]:
    """Build the state and plan it (run in a child process); one result row."""
    from placement import Budget, get_strategy, synthetic_state

    t0 = time.perf_counter()
    state = synthetic_state(nodes, keygroups, OPERATORS, VARIES, seed)
    build_s = time.perf_counter() - t0
    rss_state = _peak_rss_mib()
    t1 = time.perf_counter()
    plan = get_strategy(strategy)(state, Budget(max_migrations=MAX_MIGRATIONS), seed=seed,
                                  **params)
    wall = time.perf_counter() - t1
    return {
        "strategy": strategy, "solver": params.get("solver"),
        "time_limit_s": params.get("time_limit_s"), "nodes": nodes, "keygroups": keygroups,
        "operators": OPERATORS, "varies": VARIES, "max_migrations": MAX_MIGRATIONS,
        "seed": seed, "load_distance_before": plan.before.load_distance,
        "load_distance": plan.after.load_distance, "lower_bound": plan.lower_bound,
        "migrations": plan.migrations, "wall_s": wall, "state_build_s": build_s,
        "peak_rss_mib": _peak_rss_mib(), "rss_after_state_mib": rss_state,
        "status": plan.status.value, "message": plan.message,
    }


def _child(queue: Any, *args: Any) -> None:
    queue.put(plan_once(*args))


def run_isolated(strategy: str, params: dict[str, Any], seed: int, nodes: int = NODES,
                 keygroups: int = KEYGROUPS) -> dict[str, Any]:
    """`plan_once` in a fresh spawned process, so that its peak RSS is its own."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue, strategy, params, seed, nodes, keygroups))
    proc.start()
    row: dict[str, Any] = queue.get()
    proc.join()
    return row


def targets(rows: list[dict[str, Any]]) -> list[str]:
    """The three targets per seed: wall, peak RSS, LD against Flux's."""
    lines = []
    for seed in sorted({r["seed"] for r in rows}):
        flux = next((r for r in rows if r["seed"] == seed and r["strategy"] == "flux"), None)
        for r in rows:
            if r["seed"] != seed or r["strategy"] != "milp":
                continue
            ok_wall = r["wall_s"] <= TARGET_WALL_S
            ok_rss = r["peak_rss_mib"] <= TARGET_RSS_MIB
            lines.append(f"seed {seed}: plan in <= {TARGET_WALL_S:g} s: "
                         f"{'yes' if ok_wall else 'NO'} ({r['wall_s']:.1f} s); peak <= 4 GiB: "
                         f"{'yes' if ok_rss else 'NO'} ({r['peak_rss_mib']:.0f} MiB)")
            if flux is not None:
                ok = r["load_distance"] <= flux["load_distance"] + 1e-9
                lines.append(f"seed {seed}: LD <= Flux's: {'yes' if ok else 'NO'} "
                             f"(MILP {r['load_distance']:.3f}, Flux {flux['load_distance']:.3f},"
                             f" lower bound {r['lower_bound']:.3f})")
    return lines


def format_table(rows: list[dict[str, Any]]) -> str:
    head = (f"{'strategy':<16}{'seed':>5}{'LD0':>9}{'LD':>9}{'bound':>9}{'moves':>7}"
            f"{'wall_s':>8}{'peak MiB':>10}  status")
    lines = [head, "-" * len(head)]
    for r in rows:
        name = r["strategy"] + (f"-{r['solver']}@{r['time_limit_s']:g}s" if r["solver"] else "")
        bound = "" if r["lower_bound"] is None else f"{r['lower_bound']:.3f}"
        lines.append(f"{name:<16}{r['seed']:>5}{r['load_distance_before']:>9.3f}"
                     f"{r['load_distance']:>9.3f}{bound:>9}{r['migrations']:>7}"
                     f"{r['wall_s']:>8.2f}{r['peak_rss_mib']:>10.0f}  {r['status']}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--time-limit", type=float,
                        help="the MILP's time limit in s (default 30, --quick 10)")
    parser.add_argument("--solver", default="highs", help="the MILP's solver (highs or cbc)")
    parser.add_argument("--seeds", type=int, default=1, help="run seeds 1..N (default 1)")


def main(args: argparse.Namespace) -> int:
    limit = args.time_limit or (10.0 if args.quick else 30.0)
    rows = []
    for seed in range(1, args.seeds + 1):
        for strategy, params in (("flux", {}),
                                 ("milp", {"solver": args.solver, "time_limit_s": limit,
                                           # the paper's time-limited MILP: on the clock
                                           "node_limit": None, "work_limit": None})):
            row = run_isolated(strategy, params, seed)
            rows.append(row)
            print(f"seed {seed} {strategy}: LD {row['load_distance']:.3f} in "
                  f"{row['wall_s']:.1f} s, peak {row['peak_rss_mib']:.0f} MiB",
                  file=sys.stderr, flush=True)
    write_rows(args.json, rows)
    print(format_table(rows))
    print()
    print("\n".join(["Targets (paper §5.1):", *targets(rows)]))
    print(f"\n{len(rows)} rows written to {args.json}")
    return 0
