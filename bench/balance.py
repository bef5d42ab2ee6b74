"""Load-balancing benchmark: the grid of paper Figures 2–4 (synthetic workload, §5.1).

`run(quick, json_path)` plans every (cluster, max_migrations, varies, seed) cell with the MILP
(HiGHS; CBC too in the full grid) and the baselines, writes one JSON row per plan, prints a
table and returns the rows. The CLI wiring lives elsewhere.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from placement import Budget, get_strategy, synthetic_state

DESCRIPTION = "load balancing on the synthetic workload: the grid of paper Figures 2-4"

CLUSTERS = {"small": (20, 400), "medium": (40, 800), "large": (60, 1200)}
OPERATORS = 3


def _grid(quick: bool) -> dict[str, Any]:
    if quick:
        return {"clusters": ["small", "medium"], "max_migrations": [10, 20], "varies": [20, 40],
                "seeds": [1], "limits": [2.0], "milp_solvers": ["highs"]}
    return {"clusters": list(CLUSTERS), "max_migrations": [10, 20, 30], "varies": [20, 30, 40],
            "seeds": [1, 2, 3], "limits": [2.0, 10.0], "milp_solvers": ["highs", "cbc"]}


def _runs(grid: dict[str, Any]) -> list[tuple[str, str | None, float | None]]:
    runs: list[tuple[str, str | None, float | None]] = [
        ("milp", solver, limit) for solver in grid["milp_solvers"] for limit in grid["limits"]]
    return [*runs, ("flux", None, None), ("greedy", None, None)]


def run(quick: bool = True, json_path: str | Path | None = None) -> list[dict[str, Any]]:
    """Run the grid; write the rows as JSON to `json_path` (if given) and print a table."""
    grid = _grid(quick)
    rows: list[dict[str, Any]] = []
    for cluster in grid["clusters"]:
        nodes, keygroups = CLUSTERS[cluster]
        for varies in grid["varies"]:
            for seed in grid["seeds"]:
                state = synthetic_state(nodes, keygroups, OPERATORS, float(varies), seed)
                for max_migrations in grid["max_migrations"]:
                    budget = Budget(max_migrations=max_migrations)
                    for strategy, solver, limit in _runs(grid):
                        params: dict[str, Any] = {"seed": seed}
                        if strategy == "milp":
                            params.update(solver=solver, time_limit_s=limit)
                        t0 = time.perf_counter()
                        plan = get_strategy(strategy)(state, budget, **params)
                        rows.append({
                            "cluster": cluster, "nodes": nodes, "keygroups": keygroups,
                            "operators": OPERATORS, "max_migrations": max_migrations,
                            "varies": varies, "seed": seed, "strategy": strategy,
                            "solver": solver, "time_limit_s": limit,
                            "load_distance_before": plan.before.load_distance,
                            "load_distance": plan.after.load_distance,
                            "lower_bound": plan.lower_bound, "migrations": plan.migrations,
                            "status": plan.status.value, "wall_s": time.perf_counter() - t0,
                        })
    if json_path is not None:
        path = Path(json_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rows, indent=1))
    print(format_table(rows))
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """One line per plan: the cell, the strategy, LD before/after, the bound, moves, time."""
    head = (f"{'cluster':<8}{'mm':>4}{'var':>5}{'seed':>5}  {'strategy':<14}{'LD0':>8}{'LD':>8}"
            f"{'bound':>8}{'moves':>6}{'wall_s':>8}  status")
    lines = [head, "-" * len(head)]
    for r in rows:
        name = r["strategy"] + (f"-{r['solver']}@{r['time_limit_s']:g}s" if r["solver"] else "")
        bound = "" if r["lower_bound"] is None else f"{r['lower_bound']:.3f}"
        lines.append(
            f"{r['cluster']:<8}{r['max_migrations']:>4}{r['varies']:>5}{r['seed']:>5}  "
            f"{name:<14}{r['load_distance_before']:>8.3f}{r['load_distance']:>8.3f}{bound:>8}"
            f"{r['migrations']:>6}{r['wall_s']:>8.2f}  {r['status']}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options beyond --quick and --json."""


def main(args: argparse.Namespace) -> int:
    run(quick=args.quick, json_path=args.json)
    print(f"rows written to {args.json}")
    return 0
