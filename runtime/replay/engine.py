"""The replay engine: one period at a time, data through key groups placed on nodes.

A step of period p: route every stream's rows of p (each operator's policy, routing.py: key
grouping by default), count tuples and the bytes that cross nodes, fold the tuples into the key
groups' state (held per node, state.py), close the windows that end with p (partials of split
keys merge into the key's principal key group, top-k operators emit to their successor, results
go to the sink), and
price it all with the cost model. Migration work of the assignment applied before p is charged
to p. The data set replays in rounds: period n is period n % P of round n // P.

Everything is a function of the data, the seed and the assignments applied: no clocks, no
unordered iteration, so the same run twice gives identical metrics.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from runtime.replay.costs import CostModel, Traffic, keygroup_units, node_units
from runtime.replay.dataflow import Dataflow, Layout, Operator, Stream
from runtime.replay.routing import OperatorRouting
from runtime.replay.state import StateStore

__all__ = ["MigrationReport", "PeriodMetrics", "ReplayEngine", "Routing", "calibrate_unit_ms"]

#: a routing policy's name (runtime/routing/: kg, sg, pkg, potc_msg, ch, chbl, porc, or the
#: aliases key, shuffle, potc)
Routing = str


@dataclass(frozen=True)
class MigrationReport:
    """What one applied assignment moved: key groups, state bytes, summed pause, CPU units, and
    the longest single pause (the time of a wave whose moves run in parallel)."""

    moved: tuple[str, ...] = ()
    state_bytes: int = 0
    pause_s: float = 0.0
    units: float = 0.0
    max_pause_s: float = 0.0


@dataclass(frozen=True, eq=False)
class PeriodMetrics:
    """One period as measured (arrays by global key-group id / by `nodes` order)."""

    index: int
    nodes: tuple[str, ...]
    capacity: np.ndarray
    node_cpu_ms: np.ndarray
    kg_node: tuple[str, ...]
    kg_cpu_ms: np.ndarray
    tuples_in: np.ndarray
    tuples_out: np.ndarray
    state_bytes: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_tuples: np.ndarray
    edge_bytes: np.ndarray
    migration: MigrationReport = field(default_factory=MigrationReport)
    #: distinct keys of stateful operators each node received (the memory metric of Nasir et al.)
    node_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: partial state entries merged into their key's principal key group at window end
    merged: int = 0


@dataclass
class _Period:
    """Mutable accumulators of one step."""

    traffic: Traffic
    edges: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    keys: list[np.ndarray] = field(default_factory=list)
    merged: int = 0


def _bincount(values: np.ndarray, size: int, weights: np.ndarray | None = None) -> np.ndarray:
    out = np.bincount(values, weights=weights, minlength=size)
    return out if weights is not None else out.astype(np.int64)


class ReplayEngine:
    """Runs a compiled `Dataflow` period by period on an assignment of its key groups."""

    def __init__(
        self,
        flow: Dataflow,
        layout: Layout,
        *,
        assignment: Mapping[str, str],
        nodes: Sequence[str],
        unit_ms: float,
        period_s: float,
        costs: CostModel | None = None,
        routing: Routing = "key",
        operator_routing: Mapping[str, str] | None = None,
        epsilon: float = 0.01,
        capacity: Mapping[str, float] | None = None,
        store: StateStore | None = None,
        cursor: int = 0,
        pending: Mapping[str, float] | None = None,
        pending_report: MigrationReport | None = None,
        capacity_at: Callable[[int], Mapping[str, float]] | None = None,
        aggregate_every: int = 0,
    ) -> None:
        self.router = OperatorRouting(flow, layout, routing, operator_routing, epsilon=epsilon)
        #: periodic aggregation (§5.3): every k-th period split partials of open windows merge
        self.aggregate_every = int(aggregate_every)
        self._key_router = OperatorRouting(flow, layout, "key")
        if not np.isfinite(unit_ms) or unit_ms <= 0:
            raise ValueError(f"unit_ms must be a finite number > 0, got {unit_ms!r}")
        self.flow, self.layout, self.routing = flow, layout, routing
        self.costs = costs or CostModel()
        self.unit_ms, self.period_s = float(unit_ms), float(period_s)
        self.capacity = dict(capacity or {})
        #: capacities by job period (1-based), applied before each step (capacity changes)
        self.capacity_at = capacity_at
        self.cursor = cursor
        self.store = store or StateStore()
        self.results: dict[str, dict[tuple[int, int], tuple[float, float]]] = {
            op.name: {} for op in flow.operators if op.stateful}
        self._pending = dict(pending or {})
        self._pending_report = pending_report or MigrationReport()
        self._proc = np.repeat([op.proc_units for op in flow.operators], layout.kgs_per_operator)
        self._entry_bytes = np.repeat([op.entry_bytes for op in flow.operators],
                                      layout.kgs_per_operator)
        self._gid = {name: i for i, name in enumerate(layout.names)}
        sizes = [len(flow.keys[op.name]) for op in flow.operators]
        self._key_offset = dict(zip(layout.operator_names,
                                    np.cumsum([0, *sizes[:-1]]).tolist(), strict=True))
        self._key_space = max(1, sum(sizes))
        self._set(assignment, nodes)

    # --- placement ---------------------------------------------------------------------------

    def _set(self, assignment: Mapping[str, str], nodes: Sequence[str]) -> None:
        missing = [kg for kg in self.layout.names if kg not in assignment]
        if missing or len(assignment) != self.layout.size:
            raise ValueError(f"assignment must place exactly the job's key groups; missing "
                             f"{missing[:5]}")
        self.nodes = tuple(sorted(set(nodes)))
        stray = sorted({assignment[kg] for kg in self.layout.names} - set(self.nodes))
        if stray:
            raise ValueError(f"assignment uses unknown node(s) {stray[:5]}")
        self.assignment = {kg: assignment[kg] for kg in self.layout.names}
        self._placement = [self.assignment[kg] for kg in self.layout.names]
        index = {n: i for i, n in enumerate(self.nodes)}
        self._node_idx = np.array([index[n] for n in self._placement], dtype=np.int64)

    def migrate(self, assignment: Mapping[str, str], nodes: Sequence[str]) -> MigrationReport:
        """Direct state migration to `assignment`; its work and pauses count in the next period."""
        old = dict(self.assignment)
        self._set(assignment, nodes)
        moved = tuple(kg for kg in self.layout.names if old[kg] != self.assignment[kg])
        total_bytes, pause, units, longest = 0, 0.0, 0.0, 0.0
        for kg in moved:
            gid = self._gid[kg]
            state_bytes = self.store.entries(gid) * int(self._entry_bytes[gid])
            self.store.migrate(gid, old[kg], self.assignment[kg])
            cost = self.costs.migration(state_bytes)
            self._pending[old[kg]] = self._pending.get(old[kg], 0.0) + cost.src_units
            dst = self.assignment[kg]
            self._pending[dst] = self._pending.get(dst, 0.0) + cost.dst_units
            total_bytes += state_bytes
            pause += cost.pause_s
            longest = max(longest, cost.pause_s)
            units += cost.src_units + cost.dst_units
        prev = self._pending_report
        report = MigrationReport(prev.moved + moved, prev.state_bytes + total_bytes,
                                 prev.pause_s + pause, prev.units + units,
                                 max(prev.max_pause_s, longest))
        self._pending_report = report
        return MigrationReport(moved, total_bytes, pause, units, longest)

    @property
    def pending(self) -> tuple[dict[str, float], MigrationReport]:
        """Migration work not yet charged to a period (for checkpoints)."""
        return dict(self._pending), self._pending_report

    # --- one period --------------------------------------------------------------------------

    def _route(self, s: Stream, rows: slice, router: OperatorRouting) -> np.ndarray:
        return router.route(s.dst, s.key[rows])

    def _send(self, acc: _Period, src: np.ndarray | None, dst: np.ndarray, nbytes: np.ndarray,
              *, merged: bool = False) -> None:
        """Count tuples from `src` (None = a source) to `dst` key groups, `nbytes` each."""
        t, size = acc.traffic, self.layout.size
        cnt = _bincount(dst, size)
        t.tuples_in[:] += cnt
        (t.merged if merged else t.processed)[:] += cnt
        if src is None:
            t.remote_in_bytes[:] += _bincount(dst, size, nbytes).astype(np.int64)
            return
        t.tuples_out[:] += _bincount(src, size)
        remote = self._node_idx[src] != self._node_idx[dst]
        t.remote_out_bytes[:] += _bincount(src[remote], size, nbytes[remote]).astype(np.int64)
        t.remote_in_bytes[:] += _bincount(dst[remote], size, nbytes[remote]).astype(np.int64)
        acc.edges.append((src, dst, nbytes))

    def _streams(self, p: int, router: OperatorRouting,
                 acc: _Period) -> list[tuple[Stream, slice, np.ndarray]]:
        """Route and count every stream's rows of period p; (stream, rows, dst gids) each."""
        actual: dict[str, tuple[int, np.ndarray]] = {}
        out = []
        for s in self.flow.streams:
            rows = s.rows(p)
            dst = self.layout.offset[s.dst] + self._route(s, rows, router)
            if self.flow.operator(s.dst).stateful:
                acc.keys.append(self._node_idx[dst] * self._key_space
                                + self._key_offset[s.dst] + s.key[rows])
            actual[s.name] = (rows.start, dst)
            nbytes = np.full(len(dst), s.tuple_bytes, dtype=np.int64)
            src = None
            if s.parent is not None and s.parent_row is not None:
                start, parent_dst = actual[s.parent]
                src = parent_dst[s.parent_row[rows] - start]
            self._send(acc, src, dst, nbytes)
            out.append((s, rows, dst))
        return out

    def traffic_units(self, p: int, routing: str = "key") -> float:
        """CPU units of period p's stream traffic alone (no state, no windows): calibration."""
        acc = _Period(Traffic.zeros(self.layout.size), [])
        self._streams(p, self._key_router if routing in ("key", "kg") else self.router, acc)
        return float(keygroup_units(self._proc, acc.traffic, self.costs).sum())

    def step(self) -> PeriodMetrics:
        """Process the next period on the current assignment; its metrics."""
        flow, size = self.flow, self.layout.size
        n, P, W = self.cursor, flow.periods, flow.windows_per_round
        p, rnd = n % P, n // P
        if self.capacity_at is not None:
            self.capacity = dict(self.capacity_at(n + 1))
        acc = _Period(Traffic.zeros(size), [])
        for s, rows, dst in self._streams(p, self.router, acc):
            if flow.operator(s.dst).stateful:
                self._fold(dst, rnd * W + s.window[rows], s.entry[rows], s.value[rows])
        periodic = self.aggregate_every > 0 and (n + 1) % self.aggregate_every == 0
        for op in flow.operators:
            if op.stateful:
                if periodic and self.router.splits(op.name):
                    self._aggregate(op, acc)
                self._close(op, p, rnd, acc)
        units = keygroup_units(self._proc, acc.traffic, self.costs)
        extra = np.array([self._pending.get(node, 0.0) for node in self.nodes])
        node_total = node_units(units, self._node_idx, len(self.nodes), extra)
        metrics = self._metrics(n, acc, units, node_total)
        self._pending, self._pending_report = {}, MigrationReport()
        self.cursor += 1
        return metrics

    def _fold(self, gids: np.ndarray, windows: np.ndarray, entries: np.ndarray,
              values: np.ndarray) -> None:
        """Aggregate the rows per (key group, window, entry) and add them to the state."""
        if len(gids) == 0:
            return
        table = np.stack([gids, windows, entries])
        uniq, inverse = np.unique(table, axis=1, return_inverse=True)
        inverse = inverse.reshape(-1)
        sums = np.bincount(inverse, weights=values, minlength=uniq.shape[1])
        counts = np.bincount(inverse, minlength=uniq.shape[1]).astype(np.float64)
        self.store.update(self._placement, uniq[0], uniq[1], uniq[2], sums, counts)

    def _close(self, op: Operator, p: int, rnd: int, acc: _Period) -> None:
        """End the windows of `op` that close with period p: merge, emit, hand to the sink."""
        W, last = self.flow.windows_per_round, p == self.flow.periods - 1
        close = self.flow.window_close

        def closed(w: int) -> bool:
            return last or w // W < rnd or (op.window == "tumbling" and int(close[w % W]) <= p)

        base, k = self.layout.offset[op.name], self.layout.kgs_per_operator
        popped = {gid: self.store.pop_windows(gid, closed) for gid in range(base, base + k)}
        if self.router.splits(op.name):
            self._merge(op, popped, acc)
        sink = self.results[op.name]
        for gid in range(base, base + k):
            for w, cells in popped[gid].items():
                for e, (total, count) in cells.items():
                    old = sink.get((w, e), (0.0, 0.0))
                    sink[(w, e)] = (old[0] + total, old[1] + count)
        if op.top_k and op.emit_to is not None:
            self._emit_top_k(op, popped, acc)

    def _aggregate(self, op: Operator, acc: _Period) -> None:
        """Periodic aggregation (Nasir et al. §5.3): the partials of split keys in windows still
        open move to their principal key group now (counted as merge work), not at window end."""
        base, k = self.layout.offset[op.name], self.layout.kgs_per_operator
        popped = {gid: self.store.pop_windows(gid, lambda w: True) for gid in range(base, base + k)}
        self._merge(op, popped, acc)
        for gid, windows in popped.items():
            for w, cells in windows.items():
                for e, (total, count) in cells.items():
                    self.store.add(gid, self._placement[gid], w, e, total, count)

    def _merge(self, op: Operator, popped: dict[int, dict[int, dict[int, list[float]]]],
               acc: _Period) -> None:
        """Each partial entry held away from its key's principal key group is sent there."""
        base, primary = self.layout.offset[op.name], self.router.home(op.name)
        src: list[int] = []
        dst: list[int] = []
        for gid in sorted(popped):
            for w, cells in popped[gid].items():
                for e in sorted(cells):
                    home = base + int(primary[e])
                    if home == gid:
                        continue
                    total, count = cells.pop(e)
                    cell = popped[home].setdefault(w, {}).setdefault(e, [0.0, 0.0])
                    cell[0] += total
                    cell[1] += count
                    src.append(gid)
                    dst.append(home)
        if src:
            s, d = np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)
            acc.merged += len(s)
            self._send(acc, s, d, np.full(len(s), op.entry_bytes, dtype=np.int64), merged=True)

    def _emit_top_k(self, op: Operator, popped: dict[int, dict[int, dict[int, list[float]]]],
                    acc: _Period) -> None:
        """Each key group sends its k largest sums per closed window to `op.emit_to`."""
        assert op.emit_to is not None
        target = self.layout.primary[op.emit_to]
        base_to, W = self.layout.offset[op.emit_to], self.flow.windows_per_round
        rows: list[tuple[int, int, int, int, float]] = []
        for gid in sorted(popped):
            for w in sorted(popped[gid]):
                cells = popped[gid][w]
                best = heapq.nsmallest(op.top_k, ((-cell[0], e) for e, cell in cells.items()))
                rows += [(gid, base_to + int(target[w % W]), w, e, -neg) for neg, e in best]
        if not rows:
            return
        src, dst, win, ent = (np.array([r[i] for r in rows], dtype=np.int64) for i in range(4))
        self._send(acc, src, dst, np.full(len(rows), op.emit_bytes, dtype=np.int64))
        self._fold(dst, win, ent, np.array([r[4] for r in rows]))

    def _metrics(self, n: int, acc: _Period, units: np.ndarray, node_total: np.ndarray) -> PeriodMetrics:
        size = self.layout.size
        if acc.edges:
            src = np.concatenate([e[0] for e in acc.edges])
            dst = np.concatenate([e[1] for e in acc.edges])
            nbytes = np.concatenate([e[2] for e in acc.edges])
            flat, inverse = np.unique(src * size + dst, return_inverse=True)
            tuples = np.bincount(inverse).astype(np.int64)
            total_bytes = np.bincount(inverse, weights=nbytes).astype(np.int64)
        else:
            flat = tuples = total_bytes = np.zeros(0, dtype=np.int64)
        state = np.array([self.store.entries(g) for g in range(size)], dtype=np.int64)
        return PeriodMetrics(
            index=n,
            nodes=self.nodes,
            capacity=np.array([self.capacity.get(x, 1.0) for x in self.nodes]),
            node_cpu_ms=node_total * self.unit_ms,
            kg_node=tuple(self._placement),
            kg_cpu_ms=units * self.unit_ms,
            tuples_in=acc.traffic.tuples_in.copy(),
            tuples_out=acc.traffic.tuples_out.copy(),
            state_bytes=state * self._entry_bytes,
            edge_src=flat // size,
            edge_dst=flat % size,
            edge_tuples=tuples,
            edge_bytes=total_bytes,
            migration=self._pending_report,
            node_keys=self._node_keys(acc),
            merged=acc.merged,
        )

    def _node_keys(self, acc: _Period) -> np.ndarray:
        """Distinct (operator, key) pairs each node received in the period."""
        n = len(self.nodes)
        if not acc.keys:
            return np.zeros(n, dtype=np.int64)
        flat = np.unique(np.concatenate(acc.keys))
        return np.bincount(flat // self._key_space, minlength=n).astype(np.int64)

    # --- inspection --------------------------------------------------------------------------

    def state_sums(self, operator: str) -> dict[str, float]:
        """Live state of `operator` summed per entry key (all windows): for checks and tests."""
        base, k = self.layout.offset[operator], self.layout.kgs_per_operator
        table = self.flow.keys[operator]
        out: dict[str, float] = {}
        for gid, _w, e, total, _c in self.store.items():
            if base <= gid < base + k:
                out[table[e]] = out.get(table[e], 0.0) + total
        return out


def calibrate_unit_ms(engine: ReplayEngine, load_pct: float) -> float:
    """CPU-ms per unit so that period 0 on the engine's assignment, with key grouping, uses
    `load_pct` % of the cluster (stream traffic only: windows and migrations come on top)."""
    units = engine.traffic_units(0, "key")
    if units <= 0:
        raise ValueError("the first period carries no traffic; cannot calibrate the load")
    capacity = sum(engine.capacity.get(n, 1.0) for n in engine.nodes)
    return load_pct / 100.0 * engine.period_s * 1000.0 * capacity / units
