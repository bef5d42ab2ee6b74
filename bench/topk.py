"""What the top-k communication contract loses: collocation reached with k pairs per unit vs all.

The §5.3 collocation workload (placement/workloads/comm.py: a chain of operators, x = 50 % of
the key groups in one-to-one pairs, the rest spreading their rate evenly over every key group
downstream, so out() has ~units²/operators pairs) is planned for a few periods by ALBIC and
COLA twice from the same start: once on all pairs, once on what a top-k landing carries
(schemas/topk.py: each unit's k heaviest pairs plus the total of the rest). Each period the
job runs under the plan (loads include the cost of remote traffic) and the next plan starts
there. Reported per (size, strategy, k): the true collocation factor of the final allocation
(scored on all pairs), the collocation the planner saw (top-k: dropped traffic counted as
remote, a lower bound), the load distance (budget: a quarter of the units per plan), the pairs retained, and the planning seconds.
`--quick`: 20 nodes / 400 key groups, 3 periods; full: also 40 / 800, 5 periods.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

DESCRIPTION = "collocation reached with top-k communication vs all pairs (ALBIC, COLA)"

SIZES_QUICK = ((20, 400, 10),)
SIZES_FULL = ((20, 400, 10), (40, 800, 20))
KS = (0, 64, 16, 4, 1)  # 0 = all pairs
STRATEGIES = ("albic", "cola")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--periods", type=int, default=None,
                        help="plans per run (default 3 quick, 5 full)")


def _topk_state(state: Any, k: int) -> Any:
    """`state` with only each unit's k heaviest pairs and the rest as its dropped total."""
    import numpy as np

    from placement.comm import CommEdges
    from schemas.topk import heaviest_pairs

    comm = state.comm
    if k <= 0:
        return state
    scale = 1e6  # rates to integer "tuples" for the contract's tie-breaking, then back
    tuples = np.round(comm.rate * scale).astype(np.int64)
    keep, total = heaviest_pairs(comm.src, comm.dst, tuples, k)
    inter = keep & (comm.src != comm.dst)
    kept = np.bincount(comm.src[inter], weights=tuples[inter], minlength=len(total))
    units = np.asarray(comm.units, dtype=object)
    topk = CommEdges.from_columns(units[comm.src[keep]], units[comm.dst[keep]],
                                  comm.rate[keep],
                                  dropped=(units[:len(total)], (total - kept) / scale))
    return replace(state, edges=topk)


def _run(size: tuple[int, int, int], strategy: str, k: int, periods: int) -> dict[str, Any]:
    from placement import Budget, get_strategy
    from placement.metrics import collocation_factor, load_distance
    from placement.workloads.comm import comm_workload

    nodes, keygroups, operators = size
    work = comm_workload(nodes, keygroups, operators, 50.0, seed=1)
    plan_fn = get_strategy(strategy)
    assignment = dict(work.initial)
    seen = 0.0
    wall = 0.0
    retained = 0
    for _ in range(periods):
        full = work.state(assignment)
        state = _topk_state(full, k)
        retained = len(state.edges)
        started = time.perf_counter()
        plan = plan_fn(state, Budget(max_migrations=keygroups // 4), time_limit_s=10.0, seed=1)
        wall += time.perf_counter() - started
        seen = collocation_factor(state, plan.assignment)
        assignment = dict(plan.assignment)
    final = work.state(assignment)
    return {"nodes": nodes, "keygroups": keygroups, "operators": operators,
            "strategy": strategy, "k": k or "all", "pairs_all": len(final.edges),
            "pairs_retained": retained, "periods": periods,
            "collocation_true": collocation_factor(final, assignment),
            "collocation_seen": seen, "load_distance": load_distance(final, assignment),
            "max_collocation": work.max_collocation, "plan_s": wall}


def print_table(rows: list[dict[str, Any]]) -> None:
    print("\ncollocation reached, top-k communication vs all pairs (true: scored on all pairs; "
          "seen: what the planner's top-k state reports, dropped traffic as remote)")
    print(f"{'cluster':>14} {'strategy':>8} {'k':>4} {'pairs kept':>14} {'true %':>7} "
          f"{'seen %':>7} {'loss':>6} {'LD':>6} {'plan s':>7}")
    base = {(r["nodes"], r["strategy"]): r["collocation_true"] for r in rows if r["k"] == "all"}
    for r in rows:
        loss = base[(r["nodes"], r["strategy"])] - r["collocation_true"]
        print(f"{r['nodes']:>4}/{r['keygroups']:>5}/{r['operators']:>3} {r['strategy']:>8} "
              f"{r['k']!s:>4} {r['pairs_retained']:>7}/{r['pairs_all']:<6} "
              f"{r['collocation_true']:7.2f} {r['collocation_seen']:7.2f} {loss:6.2f} "
              f"{r['load_distance']:6.2f} {r['plan_s']:7.2f}")


def main(args: argparse.Namespace) -> int:
    from bench import write_rows

    quick = bool(args.quick)
    periods = args.periods or (3 if quick else 5)
    rows = [_run(size, strategy, k, periods)
            for size in (SIZES_QUICK if quick else SIZES_FULL)
            for strategy in STRATEGIES for k in KS]
    print_table(rows)
    write_rows(args.json, rows)
    print(f"\nrows written to {args.json}")
    return 0
