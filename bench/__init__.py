"""Paper reproductions and performance benchmarks behind `reconf bench NAME`.

A benchmark module offers:
- `DESCRIPTION: str`, shown by `reconf bench --help`;
- `add_arguments(parser)`, its own options (the CLI adds `--quick` and `--json PATH` to all);
- `main(args) -> int`, which prints a table and writes its rows as JSON to `args.json`.
Targets live in the benchmarks, never in timed tests. Modules import heavy things lazily.

A benchmark of one module is `bench/<name>.py`; one of several is a package `bench/<name>/`
whose `__init__` is the benchmark (the three names above) and whose other modules are its parts:
`kit` (shared machinery), `sim` / `workload` (simulators, generators), `report` / `figures`
(tables, plots, paper targets), and one module per scenario (`closed_loop/ramp.py`, …).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["BENCHMARKS", "default_json_path", "write_rows"]

#: name -> module under bench/ (register a new benchmark here)
BENCHMARKS: dict[str, str] = {
    "balance": "bench.balance",
    "scale": "bench.scale",
    "collocation": "bench.collocation",
    "closed-loop": "bench.closed_loop",
    "scale-in": "bench.scale_in",
    "fleet": "bench.fleet",
    "cycle": "bench.cycle",
    "rod": "bench.rod",
    "sprawl": "bench.sprawl",
    "herding": "bench.herding",
    "consistent-grouping": "bench.consistent_grouping",
    "collect-native": "bench.collect_native",
    "collect-spark": "bench.collect_spark",
    "kafka-streams": "bench.kafka_streams",
    "kafka-load": "bench.kafka_load",
    "execution": "bench.execution",
    "stability": "bench.stability",
    "topk": "bench.topk",
    "whatif": "bench.whatif",
    "publish": "bench.publish",
    "live": "bench.live",
    "soak": "bench.soak",
}


def default_json_path(name: str, quick: bool) -> Path:
    return Path("bench") / "results" / f"{name}{'-quick' if quick else ''}.json"


def write_rows(path: str | Path, rows: Sequence[dict[str, Any]]) -> Path:
    """Write a benchmark's JSON rows atomically (temporary file, then rename): a crash or a
    Ctrl-C never leaves a truncated result file behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(list(rows), indent=1))
    os.replace(tmp, path)
    return path
