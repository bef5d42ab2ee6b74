"""Measure how far one period travels through the plan stage, and how many signatures carry it.

Two figures the architecture notes quote (docs/architecture.md, "One period through plan"):

- **walk**: the tiny job's period P1 is landed, collected and validated in a scratch RECONF_HOME;
  then `jobs.run.run_plan` runs under a profiler that records every call, in the project's
  packages, of a function one of whose arguments carries the period end (the datetime itself,
  its ISO stamp, or a value whose ``end`` / ``period_end`` attribute is it). Printed: the stops
  (calls), the modules visited, and the returns (a stop in a module already visited earlier,
  not the one just before); once for every call, once for the stages' own functions (without the
  lake engine's SQL building, dataclass-made code, the period value's accessors and the stamp's
  formatting).
- **signatures**: functions (by AST, in jobs/) whose parameters include a job (``job`` or
  ``job_id``) and ``period_end``; and those whose first two parameters are ``spark, paths``.

Run: ``.venv/bin/python tools/period_walk.py [--signatures-only [--root <checkout>]]`` (the walk
starts Spark: ~1 min).
"""

from __future__ import annotations

import ast
import os
import sys
import tempfile
import threading
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("jobs", "schemas", "placement", "reconf")


def signatures(root: Path = ROOT / "jobs") -> tuple[list[str], list[str]]:
    """(module doc)"""
    """(functions taking a job and period_end, functions taking spark, paths first)."""
    by_period, by_spark = [], []
    for file in sorted(root.rglob("*.py")):
        tree = ast.parse(file.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            names = [a.arg for a in (*node.args.posonlyargs, *node.args.args,
                                     *node.args.kwonlyargs)]
            where = f"{file.relative_to(root.parent)}:{node.lineno} {node.name}"
            if "period_end" in names and ({"job", "job_id"} & set(names)):
                by_period.append(where)
            if names[:2] == ["spark", "paths"]:
                by_spark.append(where)
    return by_period, by_spark


def _carries(value: Any, end: datetime, stamp: str) -> bool:
    try:
        if isinstance(value, datetime):
            return value == end
        if isinstance(value, str):
            return value == stamp
        for attr in ("end", "period_end"):
            got = getattr(value, attr, None)
            if isinstance(got, datetime | str) and got in (end, stamp):
                return True
    except Exception:  # a value whose attributes raise carries nothing we can see
        return False
    return False


def walk() -> list[tuple[str, str]]:
    """The (module, function) stops of one `run_plan` of the tiny job's first period."""
    sys.path.insert(0, str(ROOT / "tests" / "jobs"))
    from pipeline_kit import CONFIG, JOB_ID, P1, land

    from schemas.landing import format_period_end

    scratch = Path(tempfile.mkdtemp(prefix="period-walk-"))
    (scratch / "jobs.toml").write_text(CONFIG)
    os.environ["RECONF_HOME"] = str(scratch / "home")
    os.environ["RECONF_CONFIG"] = str(scratch / "jobs.toml")
    from jobs.run import run_collect, run_plan, run_validate
    from schemas.config import Paths, resolve_job

    paths = Paths.from_env()
    land(paths, P1, resolve_job(JOB_ID))
    print(run_collect(JOB_ID, P1))
    print(run_validate(JOB_ID, P1))
    stamp = format_period_end(P1)
    stops: list[tuple[str, str]] = []
    lock = threading.Lock()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = str(frame.f_globals.get("__name__", ""))
        name = frame.f_code.co_name
        if module.split(".")[0] not in PACKAGES or name.startswith("<"):
            return
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount
        values = [frame.f_locals.get(v) for v in code.co_varnames[:count]]
        if any(_carries(v, P1, stamp) for v in values):
            with lock:
                stops.append((module, code.co_qualname))

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        print(run_plan(JOB_ID, P1).summary())
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return stops


def main() -> None:
    root = Path(sys.argv[sys.argv.index("--root") + 1]) if "--root" in sys.argv else ROOT
    by_period, by_spark = signatures(root / "jobs")
    print(f"functions in jobs/ taking a job and period_end: {len(by_period)}")
    print(f"functions in jobs/ taking (spark, paths, ...): {len(by_spark)}")
    if "--signatures-only" in sys.argv:
        for line in by_period:
            print("  ", line)
        return
    stops = walk()
    own = [(m, f) for m, f in stops if not _engine_or_accessor(m, f)]
    for label, walked in (("walk of one period through plan", stops),
                          ("  the stages' own functions", own)):
        print(f"{label}: {len(walked)} stops in {len(set(m for m, _ in walked))} modules, "
              f"{_returns([m for m, _ in walked])} returns to a module already left")
    for module, name in stops:
        print(f"   {module}.{name}")


def _returns(modules: list[str]) -> int:
    seen: list[str] = []
    returns = 0
    for module in modules:
        if seen and module != seen[-1] and module in seen:
            returns += 1
        if not seen or module != seen[-1]:
            seen.append(module)
    return returns


def _engine_or_accessor(module: str, name: str) -> bool:
    """The lake engine's SQL building (jobs/lake), dataclass-made code, the period value's own
    accessors and the stamp's formatting: stops of the values, not of the stages."""
    return (module.startswith("jobs.lake") or "__create_fn__" in name
            or name.startswith(("StageContext.", "Scope.")) or name == "format_period_end")


if __name__ == "__main__":
    main()
