"""`reconf bench stability`: the closed loop on the replayed flights data with noisy loads, with
and without the stability policy (placement/stability.py).

The anchor (the Flink autoscaler's utilisation band and stabilisation interval; its users'
">20 rescales a day"; Helix and Pulsar users' oscillation reports): measured loads wobble
from one period to the next, and a balancer that chases each period's optimum moves units back
and forth. Each period the replay lands real data (runtime/replay), the loads the planner sees
are multiplied by a seeded factor in [1 − noise, 1 + noise], the strategy plans, and the plan
is published and applied; "plain" plans as today, "stable" applies the band and the cooldown.
The noise is real and of two kinds, both multiplicative and drawn afresh each period: each
unit's load × U(1 − noise, 1 + noise), and each node's × U(1 − node_noise, 1 + node_noise) for
every unit on it (a noisy neighbour, a GC pause, a co-located job: the planner cannot tell it
from the unit's own load). The node factor is what makes a balancer oscillate: a unit shed by a
node that looked hot lands on one that looks hot next period and is shed back.
Measured: moves per period, units moved back onto a node they left within 3 periods, and the
true (noise-free) load distance. Targets (docs/benchmarks.md): ≥ 5× fewer moves back (judged
only when the plain loop moves at least MIN_EVIDENCE units back), mean LD within 10 % of
plain's.
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

DESCRIPTION = ("stable plans: the closed loop on replayed data with noisy loads, with and "
               "without the no-op band and the cooldown (moves, moves back, load distance)")

WINDOW = 3  # "moved back within 3 periods"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--strategy", default="greedy", help="the planner (greedy)")
    parser.add_argument("--noise", type=float, default=0.3, metavar="F",
                        help="each unit's measured load is its true load × U(1−F, 1+F) (0.3)")
    parser.add_argument("--node-noise", type=float, default=0.5, metavar="F",
                        help="each node's measured load is × U(1−F, 1+F) too, one factor per "
                             "node and period, for every unit on it (0.5)")
    parser.add_argument("--band", type=float, default=2.0, metavar="LD",
                        help="the stable variant's no-op band in percentage points (2)")
    parser.add_argument("--cooldown", type=int, default=3, metavar="N",
                        help="the stable variant's cooldown in periods (3)")
    parser.add_argument("--budget", type=int, default=10, help="migrations per period (10)")


def run_variant(args: argparse.Namespace, workdir: Path, stable: bool, periods: int
                ) -> dict[str, Any]:
    """One variant's closed loop: its totals."""
    from bench.closed_loop.kit import periods as landed_periods
    from bench.closed_loop.kit import publish_and_apply
    from placement.metrics import load_distance
    from placement.model import Budget, ClusterState
    from placement.registry import get_strategy
    from placement.stability import Stability, oscillations, stabilise
    from runtime.replay.source import ReplayJob
    from runtime.replay.spec import ReplaySpec
    from schemas.config import JobConfig

    name = "stable" if stable else "plain"
    job_id = f"stability-{name}"
    spec = ReplaySpec(job_id, job=1, nodes=6 if args.quick else 12, periods=periods)
    config = JobConfig(job_id, spl=timedelta(seconds=spec.period_s), strategy=args.strategy)
    runtime = ReplayJob(spec, workdir / name / "runtime")
    policy = Stability(args.band, args.cooldown) if stable else Stability()
    rng = random.Random(11)
    history: list[list[tuple[str, str, str]]] = []
    version, moves, back, lds = 0, 0, 0, []
    for period in landed_periods(runtime, spec, config, workdir / name / "landing", periods):
        true: ClusterState = period.state
        node = {n.id: rng.uniform(1 - args.node_noise, 1 + args.node_noise) for n in true.nodes}
        noisy = replace(true, keygroups=tuple(
            replace(k, load=k.load * rng.uniform(1 - args.noise, 1 + args.noise)
                    * node[true.assignment[k.id]])
            for k in true.keygroups))
        plan = get_strategy(args.strategy)(noisy, Budget(max_migrations=args.budget),
                                           time_limit_s=2.0)
        plan = stabilise(noisy, plan, policy, history)
        step = [(m.keygroup, m.src, m.dst) for m in plan.moves]
        window = history[-WINDOW:]
        back += oscillations([*window, step]) - oscillations(window)
        history.append(step)
        moves += len(step)
        lds.append(load_distance(true, plan.assignment))
        version = publish_and_apply(runtime, workdir / name / "published", job_id, version,
                                    period, plan, args.strategy)
    return {"variant": name, "strategy": args.strategy, "periods": periods,
            "noise": args.noise, "node_noise": args.node_noise, "band": policy.band, "cooldown": policy.cooldown,
            "moves": moves, "moves_per_period": moves / periods, "moved_back": back,
            "mean_ld": sum(lds) / len(lds), "final_ld": lds[-1]}


#: the fewest moves back the plain loop must make for the "≥ 5× fewer" verdict to mean anything
MIN_EVIDENCE = 10


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    """match / miss per target; "inconclusive" when the plain loop moved fewer than
    MIN_EVIDENCE units back (then 5× fewer rests on a handful of moves)."""
    plain = next(r for r in rows if r["variant"] == "plain")
    stable = next(r for r in rows if r["variant"] == "stable")
    fewer = stable["moved_back"] * 5 <= plain["moved_back"]
    word = ("inconclusive" if plain["moved_back"] < MIN_EVIDENCE
            else "match" if fewer else "miss")
    out = [f"{word}: moves back {plain['moved_back']} -> {stable['moved_back']} (target: ≥ 5× "
           f"fewer; evidence needs ≥ {MIN_EVIDENCE} in plain)"]
    near = stable["mean_ld"] <= 1.1 * plain["mean_ld"]
    out.append(f"{'match' if near else 'miss'}: mean LD {plain['mean_ld']:.2f} -> "
               f"{stable['mean_ld']:.2f} (target: within 10 %)")
    out.append(f"(moves per period {plain['moves_per_period']:.2f} -> "
               f"{stable['moves_per_period']:.2f}; not a target)")
    return out


def main(args: argparse.Namespace) -> int:
    import tempfile

    from bench import write_rows

    t0 = time.perf_counter()
    periods = 6 if args.quick else 24
    with tempfile.TemporaryDirectory(prefix="bench-stability-") as tmp:
        rows = [run_variant(args, Path(tmp), stable, periods) for stable in (False, True)]
    checks = verdicts(rows)
    for r in rows:
        r["verdicts"] = checks
    path = write_rows(args.json, rows)
    print(f"{'variant':<7} {'moves':>5} {'per period':>10} {'moved back':>10} {'mean LD':>8} "
          f"{'final LD':>8}")
    for r in rows:
        print(f"{r['variant']:<7} {r['moves']:>5} {r['moves_per_period']:>10.2f} "
              f"{r['moved_back']:>10} {r['mean_ld']:>8.2f} {r['final_ld']:>8.2f}")
    print()
    print("\n".join(checks))
    print(f"\n{len(rows)} rows written to {path} in {time.perf_counter() - t0:.1f} s")
    return 0
