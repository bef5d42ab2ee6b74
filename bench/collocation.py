"""ALBIC vs COLA on the synthetic collocation workload: paper §5.3, Figures 10 and 11.

Each (cluster, maximum collocation x) runs the strategies side by side for a number of
iterations (adaptation periods). Every strategy keeps its own allocation; an iteration applies
the same load fluctuation to all (20 % of the nodes by a random ±2 %, `workload_comm.fluctuate`),
measures the cluster under the strategy's current allocation (loads include the CPU cost of
remote traffic), plans, and scores the plan on the cluster *as it runs under the new
allocation* (collocation changes the loads, so the realised load distance is what a node sees).
Iteration stops when ALBIC's (paper) collocation factor has improved by less than `EPS_COL`
points over the last `patience` iterations (the paper's "until collocation stops improving"), or
at the safety cap `max_iterations`. The strategies' trajectories are independent (each keeps its
own allocation and the fluctuation draw depends only on the cell and the iteration), so a long
run of one strategy can be compared with another run's rows (`--compare-with`).

- Figure 10: 40 nodes / 800 key groups / 20 operators, max_migrations 20, x ∈ {0,25,50,75,100}.
- Figure 11: x = 50 on 20/400/10, 40/800/20, 60/1200/30.
- `--quick`: 20/400/10, x = 50, at most 30 iterations.
Rows: cluster, max_collocation, strategy, iteration, load_distance, collocation_factor,
load_index, migrations, wall_s (+ figure, load_distance_planned, max_migrations).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from statistics import mean
from typing import Any

from bench import write_rows
from placement import Budget, get_strategy
from placement.metrics import collocation_factor, load_distance, load_index, mean_load
from placement.workloads.comm import comm_workload, fluctuate
from schemas.strategies import STRATEGIES as STRATEGY_TABLE

DESCRIPTION = "ALBIC vs COLA with collocation (synthetic, paper section 5.3, Figures 10-11)"

STRATEGIES = ("albic", "albic_many", "cola", "milp")  # the figures' comparison (default)
FIG10_CLUSTER = (40, 800, 20)
FIG10_X = (0.0, 25.0, 50.0, 75.0, 100.0)
FIG11_CLUSTERS = ((20, 400, 10), (40, 800, 20), (60, 1200, 30))
QUICK_CLUSTER = (20, 400, 10)
MAX_MIGRATIONS = 20
EPS_COL = 0.5  # collocation points: "stops improving"
MAX_ITERATIONS_FULL = 800  # safety cap; paper ALBIC needs ~450 at 40/800 with x = 100
TAIL = 5  # iterations averaged as "at convergence"


def _cells(quick: bool, figure: str) -> list[tuple[str, tuple[int, int, int], float]]:
    if quick:
        return [("quick", QUICK_CLUSTER, 50.0)]
    cells: dict[tuple[tuple[int, int, int], float], set[str]] = {}
    if figure in ("10", "all"):
        for x in FIG10_X:
            cells.setdefault((FIG10_CLUSTER, x), set()).add("10")
    if figure in ("11", "all"):
        for cluster in FIG11_CLUSTERS:
            cells.setdefault((cluster, 50.0), set()).add("11")
    return [(",".join(sorted(figs)), c, x) for (c, x), figs in cells.items()]


def run_cell(cluster: tuple[int, int, int], x: float, *, figure: str, max_iterations: int,
             patience: int, time_limit_s: float, seed: int,
             strategies: tuple[str, ...] = STRATEGIES) -> list[dict[str, Any]]:
    """All strategies on one (cluster, x) until ALBIC's collocation stops improving.

    Convergence is judged on `albic` (the paper's variant) when it runs, else on the first
    strategy given.
    """
    judge = "albic" if "albic" in strategies else strategies[0]
    nodes, keygroups, operators = cluster
    name = f"{nodes}/{keygroups}/{operators}"
    w = comm_workload(nodes, keygroups, operators, x, seed)
    warmup = mean_load(w.state(w.initial))
    node_ids = tuple(n.id for n in w.nodes)
    budget = Budget(max_migrations=MAX_MIGRATIONS)
    current = {s: (dict(w.initial), w.base_loads()) for s in strategies}
    rows: list[dict[str, Any]] = []
    history: list[float] = []
    for it in range(1, max_iterations + 1):
        for strategy in strategies:
            assignment, base = current[strategy]
            base = fluctuate(base, assignment, node_ids, random.Random(f"{seed}-{name}-{x}-{it}"))
            state = w.state(assignment, base)
            t0 = time.perf_counter()
            plan = get_strategy(strategy)(state, budget, time_limit_s=time_limit_s, seed=it)
            wall = time.perf_counter() - t0
            new = dict(plan.assignment)
            running = w.state(new, base)
            current[strategy] = (new, base)
            rows.append({
                "figure": figure, "cluster": name, "max_collocation": x,
                "strategy": strategy, "iteration": it,
                "load_distance": load_distance(running, new),
                "collocation_factor": collocation_factor(running, new),
                "load_index": load_index(running, warmup),
                "migrations": plan.migrations, "wall_s": wall,
                "load_distance_planned": plan.after.load_distance,
                "max_migrations": MAX_MIGRATIONS,
            })
            if strategy == judge:
                history.append(rows[-1]["collocation_factor"])
        if len(history) > patience and history[-1] - history[-1 - patience] < EPS_COL:
            break
    return rows


def run(quick: bool = True, json_path: str | Path | None = None, *, figure: str = "all",
        max_iterations: int | None = None, patience: int = 10, time_limit_s: float | None = None,
        seed: int = 1, strategies: tuple[str, ...] = STRATEGIES,
        compare_with: str | Path | None = None) -> list[dict[str, Any]]:
    """Run the cells; write JSON rows to `json_path`; print the tables and the targets.

    `compare_with`: rows of an earlier run (same seed); its rows of strategies not run now join
    the summary and the targets (not the JSON written).
    """
    unknown = [s for s in strategies if s not in STRATEGY_TABLE]
    if not strategies or unknown:
        raise ValueError(f"unknown strategies {unknown}; choose from "
                         f"{', '.join(sorted(STRATEGY_TABLE))}")
    earlier = _load_rows(compare_with, seed) if compare_with is not None else []
    limit = time_limit_s if time_limit_s is not None else (0.3 if quick else 0.5)
    iterations = max_iterations if max_iterations is not None else (
        30 if quick else MAX_ITERATIONS_FULL)
    rows: list[dict[str, Any]] = []
    for fig, cluster, x in _cells(quick, figure):
        t0 = time.perf_counter()
        cell = run_cell(cluster, x, figure=fig, max_iterations=iterations, patience=patience,
                        time_limit_s=limit, seed=seed, strategies=strategies)
        rows.extend(cell)
        print(f"cell {cell[0]['cluster']} x={x:g}: {cell[-1]['iteration']} iterations, "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
    if json_path is not None:
        write_rows(json_path, rows)
    cells = {(r["cluster"], r["max_collocation"]) for r in rows}
    shown = rows + [r for r in earlier if r["strategy"] not in strategies
                    and (r["cluster"], r["max_collocation"]) in cells]
    print(format_trend(rows, every=5 if quick else 25))
    print(format_summary(shown))
    print(format_targets(shown))
    return rows


def _load_rows(path: str | Path, seed: int) -> list[dict[str, Any]]:
    """An earlier run's JSON rows (a list of row objects, as `--json` writes)."""
    try:
        rows = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"--compare-with {path}: cannot read the rows ({exc}); give the JSON "
                         f"file an earlier `reconf bench collocation --json` wrote") from exc
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "strategy" in r
                                             for r in rows):
        raise ValueError(f"--compare-with {path}: not a list of benchmark rows")
    print(f"comparing with {len(rows)} rows of {path} (run with --seed {seed} for a fair match)")
    return rows


def _groups(rows: list[dict[str, Any]]) -> dict[tuple[str, float], dict[str, list[dict[str, Any]]]]:
    out: dict[tuple[str, float], dict[str, list[dict[str, Any]]]] = {}
    for r in rows:
        out.setdefault((r["cluster"], r["max_collocation"]), {}).setdefault(
            r["strategy"], []).append(r)
    return out


def format_trend(rows: list[dict[str, Any]], every: int) -> str:
    """LD / collocation / load index per strategy at every `every`-th iteration and the last."""
    lines = []
    for (cluster, x), by in _groups(rows).items():
        last = max(r["iteration"] for r in rows if r["cluster"] == cluster
                   and r["max_collocation"] == x)
        its = sorted({1, last, *range(every, last + 1, every)})
        lines.append(f"\n{cluster}, max collocation {x:g}: LD / collocation % / load index %")
        lines.append(f"{'iter':>5}  " + "".join(f"{s:>24}" for s in by))
        for it in its:
            cells = []
            for s in by:
                r = next(r for r in by[s] if r["iteration"] == it)
                cells.append(f"{r['load_distance']:6.2f} /{r['collocation_factor']:6.1f} /"
                             f"{r['load_index']:6.1f}")
            lines.append(f"{it:>5}  " + "".join(f"{c:>24}" for c in cells))
    return "\n".join(lines)


def _tail(rs: list[dict[str, Any]], key: str) -> float:
    return mean(r[key] for r in rs[-TAIL:])


def format_summary(rows: list[dict[str, Any]]) -> str:
    head = (f"{'cluster':<12}{'x':>5}  {'strategy':<12}{'iters':>6}{'LD':>8}{'coll%':>8}"
            f"{'LI%':>8}{'mig/it':>8}{'max mig':>8}{'wall_s':>8}")
    lines = ["", f"at convergence (mean of the last {TAIL} iterations)", head, "-" * len(head)]
    for (cluster, x), by in _groups(rows).items():
        for s, rs in by.items():
            lines.append(
                f"{cluster:<12}{x:>5g}  {s:<12}{len(rs):>6}{_tail(rs, 'load_distance'):>8.2f}"
                f"{_tail(rs, 'collocation_factor'):>8.1f}{_tail(rs, 'load_index'):>8.1f}"
                f"{mean(r['migrations'] for r in rs):>8.1f}{max(r['migrations'] for r in rs):>8}"
                f"{mean(r['wall_s'] for r in rs):>8.2f}")
    return "\n".join(lines)


def _verdict(ok: bool, beat: bool = False) -> str:
    return "beat" if ok and beat else ("match" if ok else "MISS")


def format_targets(rows: list[dict[str, Any]]) -> str:
    """The paper's claims per cell: LD below COLA's, collocation >= COLA's, migrations."""
    lines = ["", "targets (paper §5.3), per cell and ALBIC variant:"]
    for (cluster, x), by in _groups(rows).items():
        if "cola" not in by:
            continue
        cola = by["cola"]
        c_ld, c_col = _tail(cola, "load_distance"), _tail(cola, "collocation_factor")
        c_mig = mean(r["migrations"] for r in cola)
        for s in ("albic", "albic_many"):
            if s not in by:
                continue
            rs = by[s]
            ld, col = _tail(rs, "load_distance"), _tail(rs, "collocation_factor")
            max_mig = max(r["migrations"] for r in rs)
            lines.append(
                f"{cluster} x={x:g} {s}: LD {ld:.2f} < COLA {c_ld:.2f}? "
                f"{_verdict(ld < c_ld, ld < 0.5 * c_ld)}; collocation {col:.1f} >= COLA "
                f"{c_col:.1f} (±1)? {_verdict(col >= c_col - 1.0, col > c_col + 1.0)}; "
                f"migrations <= {MAX_MIGRATIONS}/iteration (max {max_mig})? "
                f"{_verdict(max_mig <= MAX_MIGRATIONS)}; COLA far more ({c_mig:.0f}/iteration, "
                f">= 5x)? {_verdict(c_mig >= 5 * MAX_MIGRATIONS)}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--figure", choices=("10", "11", "all"), default="all",
                        help="full run only: which figure's cells (default all)")
    parser.add_argument("--max-iterations", type=int, default=None,
                        help="safety cap on iterations per cell (default 30 quick, "
                             f"{MAX_ITERATIONS_FULL} full); a cell normally stops when ALBIC's "
                             "collocation stops improving")
    parser.add_argument("--patience", type=int, default=10,
                        help="stop when ALBIC's collocation gained < 0.5 points in this many "
                             "iterations (default 10)")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="solver time limit per plan in s (default 0.3 quick, 0.5 full)")
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of the workload and its fluctuations (default 1; "
                             "--compare-with rows match only the same seed)")
    parser.add_argument("--strategies", default=",".join(STRATEGIES),
                        help=f"comma-separated, of {','.join(sorted(STRATEGY_TABLE))} (default "
                        f"{','.join(STRATEGIES)})")
    parser.add_argument("--compare-with", metavar="PATH", default=None,
                        help="JSON rows of an earlier run: its other strategies join the "
                             "summary and targets (e.g. run only albic longer, compare with "
                             "the earlier COLA rows)")


def main(args: argparse.Namespace) -> int:
    run(quick=args.quick, json_path=args.json, figure=args.figure,
        max_iterations=args.max_iterations, patience=args.patience,
        time_limit_s=args.time_limit, seed=args.seed,
        strategies=tuple(s.strip() for s in args.strategies.split(",") if s.strip()),
        compare_with=args.compare_with)
    print(f"rows written to {args.json}")
    return 0
