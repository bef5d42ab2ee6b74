"""Paper reproductions and performance benchmarks behind `reconf bench NAME`.

Each benchmark module offers `run(quick: bool, json_path: Path | None) -> int`: it prints a table
and writes its rows as JSON. Targets live here, never in timed tests.
"""

from __future__ import annotations

import importlib
from pathlib import Path

__all__ = ["BENCHMARKS", "run_benchmark"]

#: name -> module under bench/
BENCHMARKS = {"balance": "bench.balance"}


def run_benchmark(name: str, *, quick: bool, json_path: str | None) -> int:
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; known: {', '.join(sorted(BENCHMARKS))}")
    module = importlib.import_module(BENCHMARKS[name])
    default = Path("bench") / "results" / f"{name}{'-quick' if quick else ''}.json"
    return int(module.run(quick=quick, json_path=Path(json_path) if json_path else default))
