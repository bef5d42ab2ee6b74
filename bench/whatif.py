"""The what-if of one period, timed per shadow: does every applicable strategy plan within its
per-shadow budget?

Input: a period's what-if input (jobs/whatif/input.py: the `ClusterState` the plan in force was
made on, its budget, solver time limit, shadow time budget and shadows), the file the plan stage
writes under `$RECONF_HOME/whatif/<job>/`. `--input PATH` names it; without it the newest
`whatif/t32k/*.json` a `reconf bench cycle … --targets t32k` run left under the temporary
directory is used (the issue's 32,768 key groups x 1,000 nodes).

The shadows run as the what-if stage runs them (jobs/whatif/shadow.py `run_shadows`: worker
subprocesses side by side, each stopped at its cap, its share of the budget left), with the
stage's budget (0.9 x the input's shadow time budget: a tenth is kept for logging). Per shadow:
status, wall seconds, its cap and solver time limit, the plan's load distance after and
migrations, and the verdict: `match` when it planned within its cap, `miss` otherwise. No
MLflow, no lake: the shadows alone.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DESCRIPTION = "the what-if of one period (default: the t32k target's), each shadow timed against its budget"

STAGE_SHARE = 0.9  # of the input's shadow time budget, as jobs/whatif/stage.py `run_whatif`


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", metavar="PATH", type=Path,
                        help="a what-if input file (default: the newest t32k one a `reconf bench "
                             "cycle --targets t32k` run left under the temporary directory)")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="worker processes (default as the stage: min(cores, 4))")
    parser.add_argument("--budget", type=float, default=None, metavar="S",
                        help="the shadows' wall budget in seconds (default: 0.9 x the input's "
                             "shadow_time_budget_s, as the stage)")
    parser.add_argument("--only", nargs="+", metavar="STRATEGY",
                        help="only these of the input's shadows")


def newest_t32k_input() -> Path | None:
    """The newest t32k what-if input a cycle bench run left (bench/cycle keeps its homes)."""
    pattern = os.path.join(tempfile.gettempdir(), "reconf-bench-cycle-*", "*", "whatif",
                           "t32k", "*.json")
    found = sorted(glob.glob(pattern), key=os.path.getmtime)
    return Path(found[-1]) if found else None


def _refuse(what: str, fix: str) -> int:
    print(f"bench whatif: {what}; {fix}", file=sys.stderr)
    return 2


def main(args: argparse.Namespace) -> int:
    from bench import write_rows
    from jobs.whatif.codec import decode
    from jobs.whatif.input import WhatIfInput
    from jobs.whatif.shadow import (
        ShadowStatus,
        ShadowTask,
        run_shadows,
        shadow_state,
        worker_count,
    )

    path = args.input or newest_t32k_input()
    if path is None:
        return _refuse("no what-if input given and none of the t32k target found",
                       "run `reconf bench cycle --sizes 1000 --modes worker+native --no-fleet "
                       "--targets t32k` first, or pass --input PATH")
    t0 = time.perf_counter()
    try:
        data = decode(Path(path).read_bytes(), {WhatIfInput.__name__: WhatIfInput})
    except (OSError, ValueError) as exc:
        return _refuse(f"{path} is not a readable what-if input ({exc})",
                       "pass the JSON file the plan stage wrote under $RECONF_HOME/whatif/<job>/")
    if not isinstance(data, WhatIfInput):
        return _refuse(f"{path} holds no what-if input",
                       "pass the JSON file the plan stage wrote under $RECONF_HOME/whatif/<job>/")
    read_s = time.perf_counter() - t0
    shadows = [(n, p) for n, p in data.shadows if not args.only or n in args.only]
    unknown = sorted(set(args.only or ()) - {n for n, _ in data.shadows})
    if unknown or not shadows:
        return _refuse(f"--only names {', '.join(unknown) or 'nothing'} not among the input's "
                       f"shadows", f"choose from {', '.join(n for n, _ in data.shadows)}")
    budget = STAGE_SHARE * data.time_budget_s if args.budget is None else args.budget
    tasks = [ShadowTask(n, p, shadow_state(data.state, n), data.budget, data.time_limit_s)
             for n, p in shadows]
    workers = worker_count(len(tasks), args.workers)
    size = f"{len(data.state.keygroups):,} units x {len(data.state.nodes):,} nodes"
    print(f"what-if of {data.job_id} @ {data.period_end} ({size}, in force {data.strategy}): "
          f"{len(tasks)} shadows on {workers} workers, budget {budget:g} s, solver limit "
          f"{data.time_limit_s} s; input read in {read_s:.1f} s", flush=True)
    t0 = time.perf_counter()
    outcomes = run_shadows(tasks, budget, workers=workers)
    wall = time.perf_counter() - t0
    load = os.getloadavg()[0]
    rows: list[dict[str, Any]] = []
    for o in outcomes:
        plan = o.plan
        rows.append({
            "job": data.job_id, "period_end": data.period_end, "units": len(data.state.keygroups),
            "nodes": len(data.state.nodes), "strategy": o.strategy, "status": o.status,
            "wall_s": round(o.wall_s, 3), "cap_s": None if o.budget_s is None else round(o.budget_s, 3),
            "time_limit_s": o.time_limit_s,
            "ld_after": None if plan is None else round(plan.after.load_distance, 4),
            "migrations": None if plan is None else plan.migrations,
            "verdict": "match" if o.status == ShadowStatus.PLANNED and (
                o.budget_s is None or o.wall_s <= o.budget_s) else "miss",
            "message": o.message[:200], "whatif_wall_s": round(wall, 3), "budget_s": budget,
            "workers": workers, "load": round(load, 2),
        })
    print(f"{'strategy':<20} {'status':<10} {'wall s':>7} {'cap s':>7} {'limit s':>7} "
          f"{'LD after':>9} {'moves':>6}  verdict")
    for r in rows:
        cap = "" if r["cap_s"] is None else f"{r['cap_s']:.1f}"
        limit = "" if r["time_limit_s"] is None else f"{r['time_limit_s']:.1f}"
        ld = "" if r["ld_after"] is None else f"{r['ld_after']:.3f}"
        moves = "" if r["migrations"] is None else str(r["migrations"])
        print(f"{r['strategy']:<20} {r['status']:<10} {r['wall_s']:>7.1f} {cap:>7} {limit:>7} "
              f"{ld:>9} {moves:>6}  {r['verdict']}")
    met = sum(r["verdict"] == "match" for r in rows)
    print(f"{met} of {len(rows)} shadows planned within their budget; the what-if took "
          f"{wall:.1f} s of its {budget:g} s (load {load:.1f})")
    print(f"wrote {write_rows(args.json, rows)}")
    return 0
