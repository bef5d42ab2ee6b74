"""One execution experiment: the same plan applied at once and in waves, measured on the replay.

The replay engine runs the job's first periods on its initial allocation; a strategy plans from
the last period's measured loads (each key group's CPU in % of a reference node, its state
bytes, its traffic); then the plan is applied to a fresh engine in the same position under each
variant's limits, wave by wave through `ReplayEngine.migrate` (real state bytes, the cost model's
pauses), and the engine runs the next period on the target.

Measures (docs/benchmarks.md, "execution"):
- peak node load during the move: per wave, each node's measured load of the units it holds
  plus the units arriving in the wave (a moving unit counts on both ends while it moves,
  placement/waves.py), in % of the node's capacity; the highest over waves and nodes;
- time to apply: the waves one after another, the moves of a wave in parallel, so the sum over
  waves of the longest pause in each (runtime/replay/costs.py); under a byte rate R each wave
  lasts at least its bytes / R (runtime/execution.py `paced_seconds`, the replay's simulated
  clock);
- the fastest wave's state byte rate (its bytes / its duration);
- the peak node load of the period after the move (migration CPU included), as measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from placement.model import Budget, ClusterState, Edge, KeyGroup, Node, Plan
from placement.waves import plan_waves, utilisation
from runtime.execution import paced_seconds
from runtime.replay.datasets import Datasets
from runtime.replay.engine import PeriodMetrics, ReplayEngine
from runtime.replay.source import new_engine
from runtime.replay.spec import ReplaySpec
from schemas.schedule import Schedule, WaveLimits, apply_waves

__all__ = ["Outcome", "Setup", "apply_schedule", "measured_state", "prepare"]


@dataclass(frozen=True)
class Setup:
    """The replayed job, its warm-up, and the plan made at the end of the warm-up."""

    spec: ReplaySpec
    warmup: int
    state: ClusterState
    plan: Plan


@dataclass(frozen=True)
class Outcome:
    variant: str
    moves: int
    waves: int
    over_ceiling_waves: int
    peak_during_pct: float
    start_peak_pct: float
    target_peak_pct: float
    apply_s: float
    sequential_s: float
    state_bytes: int
    after_peak_pct: float
    max_bytes_per_s: float = 0.0
    rate: float | None = None


def _engine(spec: ReplaySpec, data: Datasets | None, warmup: int) -> tuple[ReplayEngine,
                                                                          PeriodMetrics]:
    engine = new_engine(spec, data=data)
    last = engine.step()
    for _ in range(warmup - 1):
        last = engine.step()
    return engine, last


def measured_state(engine: ReplayEngine, m: PeriodMetrics) -> ClusterState:
    """The planner's model of the measured period: loads in % of a reference node."""
    period_ms = engine.period_s * 1000.0
    names = engine.layout.names
    units = tuple(KeyGroup(kg, engine.layout.operator_name(g), float(m.kg_cpu_ms[g]) / period_ms
                           * 100.0, state_bytes=float(m.state_bytes[g]),
                           migration_cost=1e-6 * float(m.state_bytes[g]))
                  for g, kg in enumerate(names))
    nodes = tuple(Node(n, float(c)) for n, c in zip(m.nodes, m.capacity, strict=True))
    edges = tuple(Edge(names[int(s)], names[int(d)], float(t)) for s, d, t in
                  zip(m.edge_src, m.edge_dst, m.edge_tuples, strict=True) if s != d)
    return ClusterState(nodes, units, dict(engine.assignment), edges)


def prepare(spec: ReplaySpec, data: Datasets | None, warmup: int, strategy: str) -> Setup:
    from placement.registry import get_strategy

    engine, last = _engine(spec, data, warmup)
    state = measured_state(engine, last)
    plan = get_strategy(strategy)(state, Budget(max_migrations=len(state.keygroups)))
    return Setup(spec, warmup, state, plan)


def _peak_during(state: ClusterState, schedule: Schedule) -> float:
    units = {k.id: k.load for k in state.keygroups}
    cap = {n.id: n.capacity for n in state.nodes}
    at = dict(state.assignment)
    peak = 0.0
    for wave in schedule.waves:
        load = {n: u * cap[n] for n, u in utilisation(state, at).items()}
        for mv in wave.moves:
            load[mv.dst] += units[mv.keygroup]
        peak = max(peak, max(load[n] / cap[n] for n in cap))
        at = apply_waves(at, (wave,))
    return peak


def apply_schedule(setup: Setup, data: Datasets | None, variant: str,
                   limits: WaveLimits) -> Outcome:
    """Apply the setup's plan under `limits` to a fresh engine at the same period; measure."""
    state, plan = setup.state, setup.plan
    schedule = plan_waves(state, plan.moves, limits, plan.assignment)
    engine, _ = _engine(setup.spec, data, setup.warmup)
    nodes = engine.nodes
    at = dict(engine.assignment)
    apply_s = sequential = fastest = 0.0
    moved_bytes = 0
    rate = limits.max_bytes_per_second
    for wave in schedule.waves:
        at = apply_waves(at, (wave,))
        report = engine.migrate(at, nodes)
        seconds = paced_seconds(report.max_pause_s, report.state_bytes, rate)
        apply_s += seconds
        sequential += report.pause_s
        moved_bytes += report.state_bytes
        if seconds > 0:
            fastest = max(fastest, report.state_bytes / seconds)
    after = engine.step()
    after_util = after.node_cpu_ms / (after.capacity * engine.period_s * 1000.0) * 100.0
    base = utilisation(state, state.assignment)
    target = utilisation(state, plan.assignment)
    return Outcome(variant, len(plan.moves), len(schedule.waves),
                   sum(w.over_ceiling for w in schedule.waves), _peak_during(state, schedule),
                   max(base.values()), max(target.values()), apply_s, sequential,
                   int(moved_bytes), float(np.max(after_util)), fastest, rate)
