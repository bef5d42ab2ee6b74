"""`ReplayJob`: the replay engine as a `MetricsSource` (reconf land / apply / demo use it).

Period n of the job (ending at ``start + n * period_s``) is the engine's n-th step. The runtime
survives restarts: `runtime.json` (version, nodes, assignment; runtime/source.py) and a
checkpoint of the engine (the period it reached, migration work not yet charged, and every key
group's state) under ``<state_root>/<job_id>/replay/``, written after each landed period and
each applied assignment. A period is replayed once: landing it again returns the landed
directory; asking for a later one replays the periods between (unlanded) first.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from runtime.apply import apply_in_waves
from runtime.execution import Execution, load_execution
from runtime.replay.costs import CostModel
from runtime.replay.dataflow import Dataflow, Layout
from runtime.replay.datasets import Datasets, load_datasets
from runtime.replay.engine import (
    MigrationReport,
    PeriodMetrics,
    ReplayEngine,
    calibrate_unit_ms,
)
from runtime.replay.flights import build_job
from runtime.replay.spec import ReplaySpec
from runtime.replay.state import StateStore
from runtime.source import ApplyResult, RuntimeState, load_state, save_state, write_period
from schemas.landing import (
    COMM_TOTALS,
    EDGES,
    FACET_SCHEMAS,
    KEYGROUPS,
    NODES,
    SCHEMAS,
    SUCCESS_MARKER,
    format_period_end,
    period_dir,
)
from schemas.manifest import Manifest, atomic_write_bytes
from schemas.schedule import ScheduledMove
from schemas.topk import heaviest_pairs

__all__ = ["ReplayJob", "compile_job", "initial_assignment", "landing_tables", "new_engine"]

log = logging.getLogger(__name__)
_CHECKPOINT = "checkpoint.json"
_FORMAT = 1


@functools.lru_cache(maxsize=8)
def _compiled(job: int, periods: int, window_s: int, top_k: int, kgs: int, seed: int,
              rate: tuple[float, ...] = ()) -> tuple[Dataflow, Layout]:
    flow = build_job(job, load_datasets(), periods=periods, window_s=window_s, top_k=top_k,
                     rate=rate)
    return flow, Layout.of(flow, kgs, seed)


def compile_job(spec: ReplaySpec, data: Datasets | None = None) -> tuple[Dataflow, Layout]:
    """The spec's dataflow and key-group layout (cached per process for the installed data)."""
    window_s = spec.window_hours * 3600
    if data is None:
        return _compiled(spec.job, spec.periods, window_s, spec.top_k, spec.kgs_per_operator,
                         spec.seed, spec.rate_profile)
    flow = build_job(spec.job, data, periods=spec.periods, window_s=window_s, top_k=spec.top_k,
                     rate=spec.rate_profile)
    return flow, Layout.of(flow, spec.kgs_per_operator, spec.seed)


def initial_assignment(spec: ReplaySpec, layout: Layout) -> dict[str, str]:
    """Key group i of the o-th operator on node (i // keygroups_per_node + o) mod nodes.

    Every node gets the same number of key groups of every operator, and key groups with the
    same index (the one-to-one pairs) sit on different nodes: the paper's worst start.
    """
    names = spec.node_names
    k = layout.kgs_per_operator
    return {kg: names[((gid % k) // spec.keygroups_per_node + gid // k) % spec.nodes]
            for gid, kg in enumerate(layout.names)}


def new_engine(spec: ReplaySpec, *, data: Datasets | None = None, costs: CostModel | None = None,
               assignment: Mapping[str, str] | None = None,
               nodes: Sequence[str] | None = None, cursor: int = 0,
               pending: Mapping[str, float] | None = None,
               pending_report: MigrationReport | None = None) -> ReplayEngine:
    """An engine for `spec`, its CPU unit calibrated on the initial allocation (see engine.py);
    `assignment`, `nodes`, `cursor` and `pending*` restore a running one."""
    flow, layout = compile_job(spec, data)
    start = initial_assignment(spec, layout)
    varies = bool(spec.capacities or spec.capacity_changes)
    capacity = spec.capacity_at(cursor + 1) if varies else None
    probe = ReplayEngine(flow, layout, assignment=start, nodes=spec.node_names, unit_ms=1.0,
                         period_s=spec.period_s, costs=costs,
                         capacity=spec.capacity_at(1) if varies else None)
    return ReplayEngine(
        flow, layout, assignment=assignment or start, nodes=nodes or spec.node_names,
        unit_ms=calibrate_unit_ms(probe, spec.load_pct), period_s=spec.period_s, costs=costs,
        routing=spec.routing, operator_routing=spec.operator_routing, epsilon=spec.epsilon,
        aggregate_every=spec.aggregate_every, cursor=cursor, pending=pending,
        pending_report=pending_report,
        capacity=capacity, capacity_at=spec.capacity_at if varies else None)


def _table(kind: str, columns: Mapping[str, object]) -> pa.Table:
    schema = SCHEMAS[kind]
    return pa.Table.from_arrays([pa.array(columns[f.name], type=f.type) for f in schema],
                                schema=schema)


def landing_tables(m: PeriodMetrics, layout: Layout, period_end: datetime, period_s: float,
                   top_k: int = 0) -> dict[str, pa.Table]:
    """One sample per key group, edge and node, stamped at the period's start. With `top_k`
    > 0 each unit lands only its `top_k` heaviest outgoing pairs (schemas/topk.py) and, when
    any unit had more, every unit's total in comm_totals/."""
    ts = period_end.astimezone(UTC) - timedelta(seconds=period_s)
    names = np.array(layout.names, dtype=object)
    keep, total = heaviest_pairs(m.edge_src, m.edge_dst, m.edge_tuples, top_k)
    extra: dict[str, pa.Table] = {}
    if not keep.all():
        units = np.flatnonzero(np.bincount(m.edge_src[m.edge_src != m.edge_dst],
                                           minlength=len(total)) > 0)
        extra[COMM_TOTALS] = pa.Table.from_arrays(
            [pa.array([ts] * len(units), FACET_SCHEMAS[COMM_TOTALS].field("ts").type),
             pa.array(names[units].tolist(), pa.string()), pa.array(total[units], pa.int64())],
            schema=FACET_SCHEMAS[COMM_TOTALS])
        m = replace(m, edge_src=m.edge_src[keep], edge_dst=m.edge_dst[keep],
                    edge_tuples=m.edge_tuples[keep], edge_bytes=m.edge_bytes[keep])
    n, e = layout.size, len(m.edge_src)
    return {**extra,
        KEYGROUPS: _table(KEYGROUPS, {
            "ts": [ts] * n, "operator": [layout.operator_name(g) for g in range(n)],
            "keygroup": list(layout.names), "node": list(m.kg_node),
            "tuples_in": m.tuples_in, "tuples_out": m.tuples_out, "cpu_ms": m.kg_cpu_ms,
            "state_bytes": m.state_bytes}),
        EDGES: _table(EDGES, {
            "ts": [ts] * e, "src_keygroup": names[m.edge_src].tolist(),
            "dst_keygroup": names[m.edge_dst].tolist(), "tuples": m.edge_tuples,
            "bytes": m.edge_bytes}),
        NODES: _table(NODES, {
            "ts": [ts] * len(m.nodes), "node": list(m.nodes), "capacity": m.capacity,
            "cpu_ms": m.node_cpu_ms}),
    }


class ReplayJob:
    """The replay runtime of one job: lands periods, applies published assignments."""

    #: the job has execution limits (make_source sets it): a manifest that would move units
    #: without a move schedule is refused, never applied at once (runtime/client.py)
    schedule_required = False

    def __init__(self, spec: ReplaySpec, state_root: Path, *, data: Datasets | None = None,
                 costs: CostModel | None = None) -> None:
        self.spec = spec
        self.state_root = Path(state_root)
        self.dir = self.state_root / spec.job_id / "replay"
        self._data, self._costs = data, costs
        flow, layout = compile_job(spec, data)
        for reason, count in flow.skipped.items():
            log.info("job %s: %d input rows skipped: %s", spec.job_id, count, reason)
        state = load_state(self.state_root, spec.job_id)
        if state is None:
            state = RuntimeState(spec.job_id, None, initial_assignment(spec, layout),
                                 spec.node_names)
            save_state(self.state_root, state)
        elif set(state.assignment) != set(layout.names):
            raise ValueError(
                f"{self.state_root / spec.job_id}: runtime state was written for a different job "
                "shape (its key groups differ from the spec); delete that directory to restart "
                "from the initial allocation")
        self._state = state
        self.engine = self._restore(state)
        self.last_migration = MigrationReport()
        #: the last schedule this runtime executed (or resumed), for its period report
        self.execution: Execution | None = load_execution(self.state_root, spec.job_id)

    @property
    def state(self) -> RuntimeState:
        return self._state

    @property
    def skipped(self) -> Mapping[str, int]:
        """Input rows skipped for a missing key or value, by reason."""
        return self.engine.flow.skipped

    def _restore(self, state: RuntimeState) -> ReplayEngine:
        path = self.dir / _CHECKPOINT
        if not path.is_file():
            return new_engine(self.spec, data=self._data, costs=self._costs,
                              assignment=state.assignment, nodes=state.nodes)
        fix = f"delete {self.state_root / self.spec.job_id} to replay from the start"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if doc.get("format") != _FORMAT or doc.get("fingerprint") != self.spec.fingerprint():
                raise ValueError("written for another replay configuration")
            table = pq.read_table(self.dir / doc["state_file"])
            snapshot = {c: table.column(c).to_numpy() for c in table.column_names}
            report = MigrationReport(tuple(doc["pending_moved"]), int(doc["pending_bytes"]),
                                     float(doc["pending_pause_s"]), float(doc["pending_units"]))
            cursor, pending = int(doc["cursor"]), {str(k): float(v) for k, v in
                                                   doc["pending"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{path}: unusable replay checkpoint ({exc}); {fix}") from None
        engine = new_engine(self.spec, data=self._data, costs=self._costs,
                            assignment=state.assignment, nodes=state.nodes, cursor=cursor,
                            pending=pending, pending_report=report)
        engine.store = StateStore.restore(
            snapshot, [state.assignment[k] for k in engine.layout.names])
        return engine

    def _checkpoint(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        pending, report = self.engine.pending
        name = f"state-{self.engine.cursor:06d}-{self._state.version or 0}.parquet"
        pq.write_table(pa.table(self.engine.store.snapshot()), self.dir / name)
        doc = {"format": _FORMAT, "job_id": self.spec.job_id,
               "fingerprint": self.spec.fingerprint(), "cursor": self.engine.cursor,
               "pending": pending, "pending_moved": list(report.moved),
               "pending_bytes": report.state_bytes, "pending_pause_s": report.pause_s,
               "pending_units": report.units, "state_file": name}
        atomic_write_bytes(self.dir / _CHECKPOINT, (json.dumps(doc, indent=1) + "\n").encode())
        for old in self.dir.glob("state-*.parquet"):
            if old.name != name:
                old.unlink(missing_ok=True)

    def land_period(self, landing_root: Path, period_end: datetime) -> Path:
        n = self.spec.period_index(period_end)
        target = period_dir(Path(landing_root), self.spec.job_id, period_end)
        if n <= self.engine.cursor:
            if (target / SUCCESS_MARKER).is_file():
                return target
            raise ValueError(
                f"period {format_period_end(period_end)} (#{n}) of job {self.spec.job_id} was "
                f"already replayed (the runtime is at #{self.engine.cursor}) and its landing "
                f"directory is gone; a replay cannot go back: delete "
                f"{self.state_root / self.spec.job_id} to replay from the start")
        while self.engine.cursor < n - 1:
            self.engine.step()  # periods nobody asked for run, unlanded
        metrics = self.engine.step()
        tables = landing_tables(metrics, self.engine.layout, period_end, self.spec.period_s,
                                self.spec.comm_top_k)
        ex = self.execution
        facets = {kind: tables.pop(kind) for kind in list(tables) if kind in FACET_SCHEMAS}
        where = write_period(Path(landing_root), self.spec.job_id, period_end, tables, self._state,
                             facets=facets, execution=None if ex is None else {**ex.to_dict(),
                                                                "summary": ex.summary()},
                             partial=ex is not None and ex.status in ("stopped", "failed"))
        self._checkpoint()
        return where

    def apply_latest(self, published_root: Path) -> ApplyResult:
        """Apply the newest published version wave by wave (runtime/apply.py): one wave's units
        migrate together, the runtime's state is saved after each, and a stop request or a unit
        that cannot move ends the schedule between waves with the partial assignment."""
        reports: list[MigrationReport] = []

        def move(moves: tuple[ScheduledMove, ...], target: Mapping[str, str],
                 nodes: tuple[str, ...]) -> tuple[tuple[str, ...], float, float]:
            report = self.engine.migrate(target, nodes)
            reports.append(report)
            return report.moved, float(report.state_bytes), report.max_pause_s

        def keep(state: RuntimeState) -> None:
            self._state = state
            save_state(self.state_root, state)
            self._checkpoint()

        def recorded(execution: Execution) -> None:
            self.execution = execution

        def describe(manifest: Manifest, execution: Execution) -> tuple[tuple[str, ...], str]:
            moved = tuple(kg for r in reports for kg in r.moved)
            self.last_migration = MigrationReport(
                moved, sum(r.state_bytes for r in reports), sum(r.pause_s for r in reports),
                sum(r.units for r in reports), max((r.max_pause_s for r in reports), default=0.0))
            return moved, (
                f"applied v{manifest.version} (plan {manifest.plan_id}, period "
                f"{manifest.period_end}) in {execution.waves} wave(s): {len(moved)} key group(s) "
                f"moved by direct state migration, {self.last_migration.state_bytes} state bytes, "
                f"{execution.seconds:.2f} s of waves")

        return apply_in_waves(published_root, self.state_root, self._state,
                              self.engine.layout.names, move, keep, describe,
                              require_schedule=self.schedule_required, recorded=recorded)
