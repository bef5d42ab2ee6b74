"""The closed loop's period, once: land -> aggregate -> ClusterState -> (plan) -> publish -> apply.

`bench/closed_loop/` (steady input, one strategy at a time) and `bench/closed_loop/ramp.py`
(a load ramp with Algorithm 1) differ only in how they plan; both drive the replay engine through
`periods` and hand their plan to `publish_and_apply`. The strategy-name helpers both command
lines share live here too, so neither bench imports the other's internals.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemas.strategies import STRATEGIES as STRATEGY_TABLE

if TYPE_CHECKING:
    from placement.model import ClusterState, Plan
    from runtime.replay.source import ReplayJob
    from runtime.replay.spec import ReplaySpec
    from runtime.source import MetricsSource
    from schemas.config import JobConfig

__all__ = ["BUDGET", "NO_PLANNER", "STRATEGIES", "Period", "available", "landed_rows",
           "merge_tuples", "parse_strategies", "periods", "publish_and_apply", "system_load"]

NO_PLANNER = ("potc", "none")
#: every registered strategy (schemas/strategies.py), and the two runs without a planner
STRATEGIES = (*sorted(STRATEGY_TABLE), *NO_PLANNER)
BUDGET = {1: 13, 2: 10, 3: 10, 4: 10}  # migrations per period, as in the paper


def parse_strategies(raw: list[str] | None, job: int) -> list[str]:
    """`--strategy` values (repeated or comma-separated); the paper's defaults per job."""
    if not raw:
        return ["milp", "flux", "potc"] if job == 1 else ["albic", "cola"]
    names = [n.strip() for item in raw for n in item.split(",") if n.strip()]
    unknown = sorted(set(names) - set(STRATEGIES))
    if unknown:
        raise ValueError(f"unknown strategy {unknown}; choose from {', '.join(STRATEGIES)}")
    return list(dict.fromkeys(names))


def available(names: list[str]) -> tuple[list[str], list[str]]:
    """(runnable, missing): planners must be in the placement registry."""
    from placement.registry import strategy_names

    known = set(strategy_names())
    ok = [n for n in names if n in NO_PLANNER or n in known]
    return ok, [n for n in names if n not in ok]


def landed_rows(where: Path, period_ms: float) -> tuple[list[dict[str, Any]], ...]:
    """The period landed at `where` (``<landing>/<job>/period_end=<end>``), aggregated by collect's
    own aggregation (jobs/collect/native.py, its refusals included): (key groups, nodes, edges)
    rows, each in its table's key order as the plan stage reads them."""
    from jobs.collect.native import collect_frames
    from schemas.config import JobConfig
    from schemas.landing import EDGES, KEYGROUPS, NODES, parse_period_end
    from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS

    job = JobConfig(where.parent.name, spl=timedelta(milliseconds=period_ms))
    end = parse_period_end(where.name.partition("=")[2])
    files = {kind: sorted((where / kind).glob("*.parquet")) for kind in (KEYGROUPS, EDGES, NODES)}
    tables = collect_frames(job, end, files, {}, where).tables
    return tuple(tables[t.name].sort_by([(k, "ascending") for k in t.key]).to_pylist()
                 for t in (KEYGROUP_STATS, NODE_STATS, COMM_STATS))


def system_load(nodes: list[dict[str, Any]], period_ms: float) -> float:
    cap = sum(float(n["capacity"]) for n in nodes)
    return 100.0 * sum(float(n["cpu_ms"]) for n in nodes) / (cap * period_ms)


def merge_tuples(edges: list[dict[str, Any]]) -> int:
    """Tuples between key groups of one operator: PoTC's partial-state merges."""
    return int(sum(e["tuples"] for e in edges
                   if e["src_keygroup"].split("-kg")[0] == e["dst_keygroup"].split("-kg")[0]))


@dataclass
class Period:
    """One landed period as the planner sees it, and its JSON row (filled in by the caller)."""

    n: int
    end: datetime
    state: ClusterState
    nodes: list[dict[str, Any]]
    row: dict[str, Any]
    started: float  # perf_counter() when the period began (before landing)


def periods(runtime: ReplayJob, spec: ReplaySpec, config: JobConfig, landing: Path, count: int,
            *, prepare: Callable[[ClusterState], ClusterState] | None = None
            ) -> Iterator[Period]:
    """Land each period, aggregate it, and describe it as the runtime lived it: the migrations
    applied at its start and the load they and the data caused. `prepare` adjusts the state
    (e.g. set B) before the metrics are taken."""
    from jobs.plan.stage import build_state
    from placement.metrics import collocation_factor, load_distance

    period_ms = spec.period_s * 1000.0
    baseline = None
    for n in range(1, count + 1):
        started = time.perf_counter()
        applied = runtime.last_migration
        end = spec.start + timedelta(seconds=n * spec.period_s)
        kg_rows, node_rows, edge_rows = landed_rows(runtime.land_period(landing, end), period_ms)
        state = build_state(config, kg_rows, node_rows, edge_rows, dict(runtime.state.assignment))
        if prepare is not None:
            state = prepare(state)
        load = system_load(node_rows, period_ms)
        baseline = baseline or load
        row = {
            "period": n,
            "collocation_factor": collocation_factor(state, state.assignment),
            "load_distance": load_distance(state, state.assignment),
            "load_index": 100.0 * load / baseline,
            "migrations": len(applied.moved), "migration_pause_s": applied.pause_s,
            "system_load_pct": load, "migration_state_bytes": applied.state_bytes,
            "merge_tuples": merge_tuples(edge_rows),
        }
        runtime.last_migration = type(applied)()
        yield Period(n, end, state, node_rows, row, started)


def publish_and_apply(runtime: MetricsSource, published: Path, job_id: str, version: int,
                      period: Period, plan: Plan, strategy: str) -> int:
    """Publish `plan` as the next version if it changes anything, and let the runtime apply it
    through the assignment client; the version now current."""
    from schemas.manifest import Manifest, ScalingSection, write_latest, write_manifest

    act = plan.scaling
    if not (plan.moves or act.nodes_to_add or act.nodes_to_terminate):
        return version
    version += 1
    write_manifest(published, Manifest.create(
        job_id=job_id, version=version, period_end=period.end, plan_id=f"{job_id}@{period.n}",
        assignment=plan.assignment, scaling=ScalingSection(
            act.nodes_to_add, act.nodes_to_mark, act.nodes_to_terminate, act.reason)))
    write_latest(published, job_id, version)
    result = runtime.apply_latest(published)
    if result.refused:
        raise RuntimeError(f"{strategy}: the runtime refused its plan: {result.reason}")
    return version
