"""Load-balancing benchmark: the grid of paper Figures 2–4 (synthetic workload, §5.1).

Cells: clusters 20 nodes / 400 key groups / 10 operators, 40/800/20 and 60/1200/30;
maxMigrations 10, 20, 30, 40; varies 10, 20, 30, 40, 50; seeds 1..3. In every cell: the MILP
with HiGHS and with CBC at time limits 1, 2, 5 and 10 s, Flux and greedy. `--quick`: 20/400 and
40/800, maxMigrations 10 and 20, varies 20 and 40, a 2 s limit, seed 1 (22 s measured on 2
shared cores).

`--heterogeneous`: the same table and targets outside the paper's grid, on overloaded clusters
where constraint (5) cannot hold (`placement/workloads/synthetic.py`): "het", the workload on nodes of
mixed capacity (`CAPACITY_MIX`: a fifth at 2.0, a fifth at 0.5, the rest 1.0, at random per
seed), and two hot spots on reference nodes, "hot1" (one node at 3.5× its share) and "hot3"
(three nodes at 2×); the three clusters, maxMigrations 10–40, varies 20, seeds 1..3, HiGHS at
2 s (`HETEROGENEOUS`; with --quick `HETEROGENEOUS_QUICK`).

One JSON row per plan (keys in `ROW_KEYS`, plus `status` and `cell`), written after every cell
(so a long run can be resumed with `--resume`); one progress line per cell on stderr with the
ETA; at the end a table (one line per cell) and the summary against the issue's targets
(`bench/balance/report.py`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench import default_json_path, write_rows

DESCRIPTION = "load balancing on the synthetic workload: the grid of paper Figures 2-4"

#: name -> (nodes, key groups, operators), paper §5.1
CLUSTERS: dict[str, tuple[int, int, int]] = {
    "20/400": (20, 400, 10), "40/800": (40, 800, 20), "60/1200": (60, 1200, 30)}
ROW_KEYS = ("cluster", "nodes", "keygroups", "operators", "max_migrations", "varies", "seed",
            "strategy", "solver", "time_limit_s", "load_distance_before", "load_distance",
            "lower_bound", "migrations", "wall_s", "scenario")
#: scenario -> how the §5.1 state is changed: None (the paper's), "het" (capacity mix) or
#: (hot nodes, load factor)
SCENARIOS: dict[str, str | tuple[int, float] | None] = {
    "uniform": None, "het": "het", "hot1": (1, 3.5), "hot3": (3, 2.0)}
FULL: dict[str, list[Any]] = {"clusters": list(CLUSTERS), "max_migrations": [10, 20, 30, 40],
        "varies": [10, 20, 30, 40, 50], "seeds": [1, 2, 3], "limits": [1.0, 2.0, 5.0, 10.0],
        "solvers": ["highs", "cbc"]}
QUICK: dict[str, list[Any]] = {"clusters": ["20/400", "40/800"], "max_migrations": [10, 20], "varies": [20, 40],
         "seeds": [1], "limits": [2.0], "solvers": ["highs", "cbc"]}
HETEROGENEOUS: dict[str, list[Any]] = {
    "clusters": list(CLUSTERS), "max_migrations": [10, 20, 30, 40], "varies": [20],
    "seeds": [1, 2, 3], "limits": [2.0], "solvers": ["highs"], "scenarios": ["het", "hot1", "hot3"]}
HETEROGENEOUS_QUICK: dict[str, list[Any]] = {
    **HETEROGENEOUS, "clusters": ["20/400", "40/800"], "max_migrations": [10, 30], "seeds": [1, 2]}
Run = tuple[str, str | None, float | None]  # (strategy, solver, time limit)


def grid(args: argparse.Namespace) -> dict[str, list[Any]]:
    """The grid of the run: --quick or the full grid, narrowed by the slicing options."""
    if getattr(args, "heterogeneous", False):
        g = dict(HETEROGENEOUS_QUICK if args.quick else HETEROGENEOUS)
    else:
        g = dict(QUICK if args.quick else FULL)
    if args.clusters:
        g["clusters"] = _names(args.clusters)
    if args.seeds:
        g["seeds"] = list(range(1, args.seeds + 1))
    if args.limits:
        g["limits"] = [float(v) for v in args.limits.split(",")]
    if args.solvers:
        g["solvers"] = args.solvers.split(",")
    if args.max_migrations:
        g["max_migrations"] = [int(v) for v in args.max_migrations.split(",")]
    if args.varies:
        g["varies"] = [int(v) for v in args.varies.split(",")]
    return g


def _names(text: str) -> list[str]:
    names = text.split(",")
    for name in names:
        if name not in CLUSTERS:
            raise SystemExit(f"bench balance: unknown cluster {name!r}; known: "
                             f"{', '.join(CLUSTERS)}")
    return names


def runs(g: dict[str, list[Any]]) -> list[Run]:
    milp: list[Run] = [("milp", s, lim) for s in g["solvers"] for lim in g["limits"]]
    return [*milp, ("flux", None, None), ("greedy", None, None)]


Cell = tuple[str, int, int, int, str]  # (cluster, varies, seed, max_migrations, scenario)


def cells(g: dict[str, list[Any]]) -> list[Cell]:
    """(cluster, varies, seed, max_migrations, scenario), in the order they run."""
    return [(c, v, s, m, sc) for sc in g.get("scenarios", ["uniform"]) for c in g["clusters"]
            for v in g["varies"] for s in g["seeds"] for m in g["max_migrations"]]


def cell_id(cluster: str, varies: int, seed: int, max_migrations: int,
            scenario: str = "uniform") -> str:
    where = "" if scenario == "uniform" else f"{scenario}|"
    return f"{where}{cluster}|v{varies}|s{seed}|m{max_migrations}"


def scenario_state(cluster: str, varies: int, seed: int, scenario: str) -> Any:
    """The §5.1 state of the cell, changed as `SCENARIOS[scenario]` says."""
    from placement.workloads.synthetic import heterogeneous, hot_spot, synthetic_state

    nodes, keygroups, operators = CLUSTERS[cluster]
    state = synthetic_state(nodes, keygroups, operators, float(varies), seed)
    change = SCENARIOS[scenario]
    if change == "het":
        return heterogeneous(state, seed)
    if isinstance(change, tuple):
        return hot_spot(state, change[0], change[1], seed)
    return state


def run_cell(cluster: str, varies: int, seed: int, max_migrations: int, scenario: str,
             plan_runs: list[Run]) -> list[dict[str, Any]]:
    """Plan one cell with every strategy of `plan_runs`; one row per plan."""
    from placement import Budget, get_strategy

    nodes, keygroups, operators = CLUSTERS[cluster]
    state = scenario_state(cluster, varies, seed, scenario)
    budget = Budget(max_migrations=max_migrations)
    rows = []
    for strategy, solver, limit in plan_runs:
        params: dict[str, Any] = {"seed": seed}
        if strategy == "milp":  # the paper's time-limited MILP: on the clock, no work budget
            params.update(solver=solver, time_limit_s=limit, node_limit=None, work_limit=None)
        t0 = time.perf_counter()
        plan = get_strategy(strategy)(state, budget, **params)
        wall = time.perf_counter() - t0
        rows.append({
            "cluster": cluster, "nodes": nodes, "keygroups": keygroups, "operators": operators,
            "max_migrations": max_migrations, "varies": varies, "seed": seed,
            "strategy": strategy, "solver": solver, "time_limit_s": limit,
            "load_distance_before": plan.before.load_distance,
            "load_distance": plan.after.load_distance, "lower_bound": plan.lower_bound,
            "migrations": plan.migrations, "wall_s": wall, "status": plan.status.value,
            "scenario": scenario, "cell": cell_id(cluster, varies, seed, max_migrations,
                                                  scenario)})
    return rows


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}h{rest // 60:02d}m" if h else f"{rest // 60}m{rest % 60:02d}s"


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run (or resume) the grid; rows go to args.json after every cell."""
    from bench.balance.report import cell_line

    g = grid(args)
    plan_runs = runs(g)
    todo = cells(g)
    path = Path(args.json) if args.json else None
    if getattr(args, "heterogeneous", False) and path == default_json_path("balance", args.quick):
        path = path.with_name(path.name.replace("balance", "balance-heterogeneous"))
        args.json = path  # the paper's grid keeps its own file
    rows: list[dict[str, Any]] = []
    if args.resume and path is not None and path.exists():
        rows = json.loads(path.read_text())
    done = {r["cell"] for r in rows if "cell" in r}
    pending = [c for c in todo if cell_id(*c) not in done]
    per_cell = sum(lim for _, _, lim in plan_runs if lim) * 1.05 + 0.5  # first ETA guess
    print(f"bench balance: {len(todo)} cells x {len(plan_runs)} plans "
          f"({len(todo) - len(pending)} already in {path}); estimated "
          f"{_clock(per_cell * len(pending))}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    for i, cell in enumerate(pending, 1):
        new = run_cell(*cell, plan_runs)
        rows = [r for r in rows if r.get("cell") != cell_id(*cell)] + new
        if path is not None:
            write_rows(path, rows)
        spent = time.perf_counter() - started
        eta = spent / i * (len(pending) - i)
        print(f"[{i}/{len(pending)}] {cell_line(new)}  elapsed {_clock(spent)}, "
              f"ETA {_clock(eta)}", file=sys.stderr, flush=True)
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Slicing options (default: the whole grid), and --resume."""
    parser.add_argument("--resume", action="store_true",
                        help="keep the cells already in the JSON file and run only the rest")
    parser.add_argument("--clusters", help=f"comma list of {', '.join(CLUSTERS)}")
    parser.add_argument("--seeds", type=int, help="run seeds 1..N (full grid: 3)")
    parser.add_argument("--limits", help="comma list of MILP time limits in s (full: 1,2,5,10)")
    parser.add_argument("--solvers", help="comma list of MILP solvers (default highs,cbc)")
    parser.add_argument("--max-migrations", help="comma list (full: 10,20,30,40)")
    parser.add_argument("--varies", help="comma list (full: 10,20,30,40,50)")
    parser.add_argument("--heterogeneous", action="store_true",
                        help="overloaded clusters instead of the paper's grid: a capacity mix "
                        "(a fifth of the nodes at 2.0, a fifth at 0.5) and hot spots (one node "
                        "at 3.5x, three at 2x its share); HiGHS at 2 s, seeds 1..3")


def main(args: argparse.Namespace) -> int:
    from bench.balance.report import format_table, summary

    t0 = time.perf_counter()
    rows = run(args)
    print(format_table(rows))
    print()
    print(summary(rows))
    print(f"\n{len(rows)} rows written to {args.json} in {time.perf_counter() - t0:.1f} s")
    return 0
