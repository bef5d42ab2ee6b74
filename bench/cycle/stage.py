"""One pipeline stage, timed by layer: the unit `reconf bench cycle` runs in a fresh process (as
Airflow runs a task) or in its own long-lived process (a worker).

`python -m bench.cycle.stage STAGE JOB PERIOD_END` prints one `BENCH-JSON {...}` line: seconds
per layer and when the interpreter reached this module (the parent subtracts its spawn time to
get the process start). Layers are timed by wrapping the stages' own helpers (only the outermost
wrapped call of the stage's own thread counts): `spark` = getting the session, `read` = the
stage's queries of its lake (jobs/lake: `Lake.records` / `Lake.frame`, by delta-rs unless
RECONF_LAKE_IO=spark) and its rounds of concurrent queries (jobs.lake.concurrently: the period's
tables, the starting point; GE's or MLflow's import overlaps it in a fresh process), `delta` =
table creation, commits (`Lake.replace`, by delta-rs or Spark), the plans status updates and
version look-ups, `ge` = the Great Expectations run,
`mlflow` = logging and tagging, `solver` = the plan's own wall time; `other` = what is left:
pandas, Python, the imports not overlapped. Every row also carries `peak_mib`, the process's
largest resident set so far (a worker's: over every step it ran), `cpu`, its CPU seconds in the
step (threads included: what the step costs whatever else the machine runs), the plan's `gap_pct`
(100 * (LD - bound) / LD of a plan with a certified lower bound). `land` is a step too: the
runtime stand-in lands the period in the same process (the bench's peak memory covers it).
"""

from __future__ import annotations

import time

ENTERED = time.time()

import functools  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

__all__ = ["LAYERS", "STAGES", "STEPS", "run_stage"]

STAGES = ("collect", "validate", "plan", "publish")
STEPS = ("land", *STAGES)
LAYERS = ("spark", "read", "delta", "ge", "mlflow", "solver")
_STAGE_MODULES = {"collect": "jobs.collect.stage", "validate": "jobs.validate.stage",
                  "plan": "jobs.plan.stage", "publish": "jobs.publish.stage"}
_ENGINES = (("delta_rs", "DeltaRsLake"), ("spark_sql", "SparkLake"))
# layer -> (module, function or Class.method) pairs whose calls count as that layer
_TARGETS: dict[str, tuple[tuple[str, str], ...]] = {
    "spark": (("jobs.spark.session", "get_spark"),),
    "read": (("jobs.lake.api", "concurrently"),
             *((f"jobs.lake.{m}", f"{c}.{q}") for m, c in _ENGINES for q in ("records", "frame"))),
    "delta": (("jobs.lake.api", "Lake.ensure_tables"), ("jobs.lake.api", "Lake.replace"),
              ("jobs.lake.api", "Lake.update"), ("jobs.lake.api", "Lake.table_versions"),
              *((f"jobs.lake.{m}", f"{c}.table_version") for m, c in _ENGINES)),
    "ge": (("jobs.validate.suites", "validate_stats"),),
    "mlflow": (("jobs.tracking.store", "log_cycle"), ("jobs.tracking.store", "tag_run")),
}


class _Clock:
    """Seconds per layer; nested wrapped calls count once, in the outermost layer."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = dict.fromkeys(LAYERS, 0.0)
        self._depth = 0  # of the main thread: calls inside the stages' query threads are nested

    def wrap(self, layer: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is not threading.main_thread():
                return fn(*args, **kwargs)
            self._depth += 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.spent[layer] += time.perf_counter() - start
        timed.__wrapped_layer__ = layer  # type: ignore[attr-defined]
        return timed


_CLOCK = _Clock()


def _instrument() -> None:
    """Replace the target functions wherever a loaded `jobs` module holds them (by identity)."""
    import importlib

    originals: dict[int, tuple[str, Callable[..., Any]]] = {}
    for layer, targets in _TARGETS.items():
        for module, name in targets:
            owner: Any = importlib.import_module(module)
            if "." in name:  # a method: wrapped on its class
                cls, name = name.split(".")
                owner = getattr(owner, cls)
                fn = vars(owner)[name]
                if not hasattr(fn, "__wrapped_layer__"):
                    setattr(owner, name, _CLOCK.wrap(layer, fn))
                continue
            fn = getattr(owner, name)
            if not hasattr(fn, "__wrapped_layer__"):
                originals[id(fn)] = (layer, fn)
    for loaded_name, loaded in list(sys.modules.items()):
        if not loaded_name.startswith("jobs") or loaded is None:
            continue
        for attr, value in list(vars(loaded).items()):
            if id(value) in originals and originals[id(value)][1] is value:
                layer, fn = originals[id(value)]
                setattr(loaded, attr, _CLOCK.wrap(layer, fn))


def _peak_mib() -> float:
    """The process's largest resident set so far, MiB (Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _land(job_id: str, period_end: str) -> dict[str, float]:
    """The runtime stand-in lands the period (what `reconf land` does)."""
    import os
    from pathlib import Path

    from reconf.settings import make_source
    from schemas.config import Paths, resolve_job
    from schemas.landing import parse_period_end

    start, cpu = time.perf_counter(), time.process_time()
    paths = Paths.from_env()
    source = make_source(resolve_job(job_id, Path(os.environ["RECONF_CONFIG"])), paths)
    source.land_period(paths.landing, parse_period_end(period_end))
    wall = time.perf_counter() - start
    return {**dict.fromkeys(LAYERS, 0.0), "import": 0.0, "other": wall, "wall": wall,
            "cpu": time.process_time() - cpu, "peak_mib": _peak_mib()}


def _gap_pct(plan: Any) -> float:
    """100 * (LD - bound) / LD of a plan with a certified bound (nan without one)."""
    bound, value = plan.lower_bound, plan.after.load_distance
    if bound is None or value is None:
        return float("nan")
    return 0.0 if value <= 0 else 100.0 * max(0.0, value - bound) / value


def run_stage(stage: str, job_id: str, period_end: str) -> dict[str, float]:
    """Run one step (a stage through jobs.run, what the DAG task calls, or the landing); its
    seconds per layer, the process's peak memory and, for the plan, its certified gap."""
    import importlib

    if stage == "land":
        return _land(job_id, period_end)
    start, cpu = time.perf_counter(), time.process_time()
    importlib.import_module(_STAGE_MODULES[stage])
    import jobs.run as stages

    _instrument()
    imported = time.perf_counter()
    before = dict(_CLOCK.spent)
    solver, gap = 0.0, float("nan")
    if stage == "plan":
        planned = stages.run_plan(job_id, period_end).plan
        solver, gap = float(planned.wall_s or 0.0), _gap_pct(planned)
    else:
        getattr(stages, f"run_{stage}")(job_id, period_end)
    done = time.perf_counter()
    layers = {k: _CLOCK.spent[k] - before[k] for k in LAYERS}
    layers["solver"] = solver
    layers["import"] = imported - start
    layers["other"] = max(0.0, (done - imported) - sum(layers[k] for k in LAYERS))
    layers["wall"] = done - start
    layers["peak_mib"] = _peak_mib()
    # the process's CPU seconds (its threads included): on a shared machine wall time counts
    # the other processes' turns, CPU time only this one's
    layers["cpu"] = time.process_time() - cpu
    if stage == "plan":
        layers["gap_pct"] = gap
    return layers


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if args[:1] == ["--serve"]:  # a long-lived worker: one "STAGE JOB PERIOD [HOME]" per stage
        import os

        for line in sys.stdin:
            stage, job_id, period_end, *home = line.split()
            if home:  # one worker can serve several RECONF_HOMEs (the bench's warm-up cycles)
                os.environ["RECONF_HOME"] = home[0]
            print("BENCH-JSON " + json.dumps(run_stage(stage, job_id, period_end)), flush=True)
        return 0
    stage, job_id, period_end = args[:3]
    result: dict[str, Any] = {**run_stage(stage, job_id, period_end), "entered": ENTERED}
    print("BENCH-JSON " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
