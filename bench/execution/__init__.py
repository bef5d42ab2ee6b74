"""`reconf bench execution`: a plan of many moves applied at once and in waves on the replay.

The anchor (Cruise Control's executor; docs/benchmarks.md, "execution"): applying every move at
once overloads the receiving nodes, which carry the moving units while their senders still do;
waves under a ceiling keep every node under it, at a bounded cost in time (never slower than
one move after another). A third run adds a state byte rate to the waves (Cruise Control's
replication throttle): no wave moves state faster than it, and applying takes at least the bytes /
the rate. The run lives in `run.py`; this module is the command line.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict
from typing import Any

DESCRIPTION = ("safe execution: a plan of many moves applied at once vs in waves under a "
               "ceiling on the replay runtime (peak node load during the move, time to apply)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--strategy", default="albic",
                        help="the strategy that makes the plan (albic: collocation, many moves)")
    parser.add_argument("--ceiling", type=float, default=95.0, metavar="PCT",
                        help="the waves' utilisation ceiling in %% of capacity (95)")
    parser.add_argument("--per-node", type=int, default=2, metavar="N",
                        help="concurrent moves per node in one wave (2)")
    parser.add_argument("--load-pct", type=float, default=70.0, metavar="PCT",
                        help="the job's mean node load before the move (70)")
    parser.add_argument("--rate", type=_rate, default=1e6, metavar="BYTES_PER_S",
                        help="the state byte rate of the rated waves (1e6: one transfer's speed "
                        "in the replay's cost model, so parallel moves share it)")


def _rate(text: str) -> float:
    """A byte rate > 0 (argparse's refusal, exit 2, names the option otherwise)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of bytes per second, got {text!r}") \
            from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}")
    return value


def verdicts(rows: list[dict[str, Any]], ceiling: float) -> list[str]:
    """match / beat / miss per anchor claim."""
    at_once = next(r for r in rows if r["variant"] == "at once")
    waves = next(r for r in rows if r["variant"] == "waves")
    out = []
    overload = at_once["peak_during_pct"] > ceiling
    out.append(f"{'match' if overload else 'miss'}: applied at once, a node peaks at "
               f"{at_once['peak_during_pct']:.1f} % during the move (ceiling {ceiling:g} %)")
    under = waves["peak_during_pct"] <= ceiling + 1e-9 and not waves["over_ceiling_waves"]
    out.append(f"{'match' if under else 'miss'}: in {waves['waves']} waves every node stays at or "
               f"under {ceiling:g} % (peak {waves['peak_during_pct']:.1f} %)")
    bound = waves["sequential_s"]
    mark = ("beat" if waves["apply_s"] <= bound / 2 else "match" if waves["apply_s"] <= bound
            else "miss")
    out.append(f"{mark}: waves take {waves['apply_s']:.2f} s vs {at_once['apply_s']:.2f} s at once; "
               f"bound: one move after another, {bound:.2f} s (beat: under half of it)")
    rated = next((r for r in rows if r["variant"] == "rated"), None)
    if rated is not None:
        rate, least = rated["rate"], rated["state_bytes"] / rated["rate"]
        held = rated["max_bytes_per_s"] <= rate and rated["apply_s"] >= least * (1 - 1e-9)
        out.append(f"{'match' if held else 'miss'}: at {rate:.3g} B/s no wave moves faster "
                   f"(fastest {rated['max_bytes_per_s']:.3g} B/s, unthrottled "
                   f"{waves['max_bytes_per_s']:.3g} B/s); applying takes {rated['apply_s']:.2f} s "
                   f"vs {waves['apply_s']:.2f} s without the rate, at least bytes / rate = "
                   f"{least:.2f} s")
    return out


def format_table(rows: list[dict[str, Any]]) -> str:
    head = (f"{'variant':<9} {'moves':>5} {'waves':>5} {'peak during %':>13} "
            f"{'start %':>7} {'target %':>8} {'apply s':>8} {'bytes':>9} {'max B/s':>9} "
            f"{'rate B/s':>9} {'after %':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        rate = "-" if r["rate"] is None else f"{r['rate']:.3g}"
        lines.append(f"{r['variant']:<9} {r['moves']:>5} {r['waves']:>5} "
                     f"{r['peak_during_pct']:>13.1f} {r['start_peak_pct']:>7.1f} "
                     f"{r['target_peak_pct']:>8.1f} {r['apply_s']:>8.3f} {r['state_bytes']:>9} "
                     f"{r['max_bytes_per_s']:>9.3g} {rate:>9} {r['after_peak_pct']:>7.1f}")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    from bench import write_rows
    from bench.execution.run import apply_schedule, prepare
    from runtime.replay.spec import ReplaySpec
    from schemas.schedule import WaveLimits

    t0 = time.perf_counter()
    nodes, per_node = (4, 2) if args.quick else (12, 5)
    spec = ReplaySpec("bench-execution", job=2, nodes=nodes, keygroups_per_node=per_node,
                      periods=6, load_pct=args.load_pct)
    setup = prepare(spec, None, 2, args.strategy)
    variants = {"at once": WaveLimits(None, None, None, None),
                "waves": WaveLimits(args.per_node, None, None, args.ceiling),
                "rated": WaveLimits(args.per_node, None, None, args.ceiling, args.rate)}
    rows = [{**asdict(apply_schedule(setup, None, name, limits)), "strategy": args.strategy,
             "ceiling_pct": args.ceiling, "nodes": nodes, **limits.to_dict()}
            for name, limits in variants.items()]
    checks = verdicts(rows, args.ceiling)
    for r in rows:
        r["verdicts"] = checks
    path = write_rows(args.json, rows)
    print(format_table(rows))
    print()
    print("\n".join(checks))
    print(f"\n{len(rows)} rows written to {path} in {time.perf_counter() - t0:.1f} s")
    return 0
