"""A synthetic stream job standing in for the engine: its landing tables and its runtime.

The job's shape, names and load model (paper §5.1; with ``streams``, ROD's linear model) are in
runtime/synthetic_model.py, re-exported here.

Tuples and state: a key group at load L emits ``TUPLES_PER_LOAD_PCT_S * L`` tuples/s (so every
tuple costs 0.5 ms of CPU); op0 key groups receive as many from the source; each key group of op i
splits its output evenly over every key group of op i+1 (full partitioning), and a key group of
op i+1 receives the sum of its incoming edges. ``state_bytes = STATE_BYTES_PER_TUPLE * tuples_in``
of the period (a one-period window), reported alike in every sample. A job reading streams also
lands each stream's rate as the ``streams/`` facet dataset (`stream_table`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from runtime.apply import apply_in_waves
from runtime.execution import Execution, load_execution
from runtime.source import (
    ApplyResult,
    RuntimeState,
    load_state,
    save_state,
    write_period,
)
from runtime.synthetic_model import (
    DRIFT_FRACTION,
    MAX_CUT,
    STREAM_RATE,
    PeriodLoads,
    SyntheticSpec,
    base_loads,
    initial_assignment,
    keygroup_name,
    node_name,
    period_loads,
    stream_rates,
    true_coefficients,
)
from runtime.synthetic_queries import query_facets, query_reads
from runtime.wan_links import LinkFeed
from schemas.health import HealthReport, write_report
from schemas.landing import (
    EDGES,
    FACET_SCHEMAS,
    KEYGROUPS,
    NODES,
    SCHEMAS,
    STREAMS,
    format_period_end,
    parse_period_end,
)
from schemas.manifest import Manifest
from schemas.schedule import ScheduledMove

__all__ = [
    "DRIFT_FRACTION",
    "MAX_CUT",
    "STATE_BYTES_PER_TUPLE",
    "STREAM_RATE",
    "TUPLES_PER_LOAD_PCT_S",
    "TUPLE_BYTES",
    "PeriodLoads",
    "SyntheticJob",
    "SyntheticSpec",
    "base_loads",
    "build_tables",
    "initial_assignment",
    "keygroup_name",
    "node_name",
    "period_loads",
    "stream_rates",
    "stream_table",
    "true_coefficients",
]

TUPLES_PER_LOAD_PCT_S = 20
TUPLE_BYTES = 100
STATE_BYTES_PER_TUPLE = 64
_US = timedelta(microseconds=1)


def _split(totals: np.ndarray, parts: int) -> np.ndarray:
    """Integer split of each total into `parts` near-equal shares: shape (len(totals), parts)."""
    quotient, remainder = np.divmod(totals, parts)
    return quotient[:, None] + (np.arange(parts)[None, :] < remainder[:, None])


def build_tables(
    spec: SyntheticSpec, period_end: datetime, assignment: Mapping[str, str], nodes: Sequence[str]
) -> dict[str, pa.Table]:
    """The period's samples as tables with exactly the landing-zone schemas."""
    end = parse_period_end(format_period_end(period_end))  # whole seconds, as in the path
    kgs = spec.keygroups
    k, s = spec.keygroups_per_operator, spec.samples_per_period
    by_kg = period_loads(spec, end, assignment).keygroups
    loads = np.array([by_kg[kg] for kg in kgs])
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    start_us = (end - epoch) // _US - spec.period_s * 1_000_000
    ts = start_us + np.arange(s, dtype=np.int64) * (spec.period_s * 1_000_000 // s)

    cpu = loads * spec.period_s * 1000 / 100 / s  # per sample
    out = _split(np.rint(loads * TUPLES_PER_LOAD_PCT_S * spec.period_s).astype(np.int64), s)
    tin = out.copy()  # op0 receives from the source what it emits
    if spec.reads:  # a query population: every key group reads its sources, sends to no one
        none = np.zeros(0, dtype=np.int64)
        return _tables(spec, ts, loads, cpu, out, tin, assignment, nodes,
                       {"ts": none, "src_keygroup": [], "dst_keygroup": [], "tuples": none,
                        "bytes": none})
    if 0 < spec.fanout < k:
        return _tables(spec, ts, loads, cpu, out, tin, assignment, nodes,
                       _sparse_edges(spec, ts, out, tin))
    edge_blocks: list[np.ndarray] = []
    rotation = (np.arange(k)[None, :] - np.arange(k)[:, None]) % k  # [src, dst]
    for o in range(spec.operators - 1):
        q, r = np.divmod(out[o * k : (o + 1) * k], k)  # (src, sample)
        block = q[:, None, :] + (rotation[:, :, None] < r[:, None, :])  # (src, dst, sample)
        edge_blocks.append(block)
        tin[(o + 1) * k : (o + 2) * k] = block.sum(axis=0)
    src = np.concatenate([np.repeat(np.arange(o * k, (o + 1) * k), k)
                          for o in range(spec.operators - 1)] or [np.zeros(0, np.int64)])
    dst = np.concatenate([np.tile(np.arange((o + 1) * k, (o + 2) * k), k)
                          for o in range(spec.operators - 1)] or [np.zeros(0, np.int64)])
    per_sample = [np.concatenate([b[:, :, j].reshape(-1) for b in edge_blocks])
                  for j in range(s) if edge_blocks]  # one operator: no edges
    tuples = np.concatenate(per_sample) if edge_blocks else np.zeros(0, dtype=np.int64)
    names = pa.array(kgs, pa.string())
    edges = {
        "ts": np.repeat(ts, len(src)),
        "src_keygroup": _named(names, src, s),
        "dst_keygroup": _named(names, dst, s),
        "tuples": tuples,
        "bytes": tuples * TUPLE_BYTES,
    }
    return _tables(spec, ts, loads, cpu, out, tin, assignment, nodes, edges)


def _sparse_edges(spec: SyntheticSpec, ts: np.ndarray, out: np.ndarray, tin: np.ndarray
                  ) -> dict[str, object]:
    """The edges of a job with ``fanout = f``: key group i of op o sends to key groups
    (i + j) mod k of op o+1, j < f, its output split evenly; `tin` of op o+1 gets their sums.
    Columns are numpy arrays and Arrow strings taken by index, never per-edge Python objects."""
    k, s, f = spec.keygroups_per_operator, spec.samples_per_period, spec.fanout
    names = pa.array(spec.keygroups, pa.string())
    src_idx: list[np.ndarray] = []
    dst_idx: list[np.ndarray] = []
    blocks: list[np.ndarray] = []
    shift = np.arange(f)
    for o in range(spec.operators - 1):
        q, r = np.divmod(out[o * k : (o + 1) * k], f)  # (src, sample)
        block = q[:, None, :] + (shift[None, :, None] < r[:, None, :])  # (src, j, sample)
        dst = (np.arange(k)[:, None] + shift[None, :]) % k  # (src, j): index within op o+1
        tin[(o + 1) * k : (o + 2) * k] = 0
        for j in range(f):
            np.add.at(tin[(o + 1) * k : (o + 2) * k], dst[:, j], block[:, j, :])
        src_idx.append(np.repeat(np.arange(o * k, (o + 1) * k), f))
        dst_idx.append((o + 1) * k + dst.reshape(-1))
        blocks.append(block.reshape(k * f, s))
    src = np.concatenate(src_idx) if src_idx else np.zeros(0, dtype=np.int64)
    dst_all = np.concatenate(dst_idx) if dst_idx else np.zeros(0, dtype=np.int64)
    tuples = (np.concatenate(blocks).T.reshape(-1) if blocks else np.zeros(0, dtype=np.int64))
    return {
        "ts": np.repeat(ts, len(src)),
        "src_keygroup": _named(names, src, s),
        "dst_keygroup": _named(names, dst_all, s),
        "tuples": tuples,
        "bytes": tuples * TUPLE_BYTES,
    }


def _tables(spec: SyntheticSpec, ts: np.ndarray, loads: np.ndarray, cpu: np.ndarray,
            out: np.ndarray, tin: np.ndarray, assignment: Mapping[str, str],
            nodes: Sequence[str], edges: dict[str, object]) -> dict[str, pa.Table]:
    """The three landing tables from the per-key-group arrays and the edge columns."""
    kgs, s = spec.keygroups, spec.samples_per_period
    state = tin.sum(axis=1) * STATE_BYTES_PER_TUPLE
    n = len(kgs)
    every = np.arange(n)  # sample-major: each sample lists every key group
    keygroups = {
        "ts": np.repeat(ts, n),
        "operator": _named(pa.array([kg.split("-", 1)[0] for kg in kgs], pa.string()), every, s),
        "keygroup": _named(pa.array(kgs, pa.string()), every, s),
        "node": _named(pa.array([assignment[kg] for kg in kgs], pa.string()), every, s),
        "tuples_in": tin.T.reshape(-1),
        "tuples_out": out.T.reshape(-1),
        "cpu_ms": np.tile(cpu, s),
        "state_bytes": np.tile(state, s),
    }
    node_ids = sorted(nodes)
    node_cpu = {node: 0.0 for node in node_ids}
    for kg, c in zip(kgs, cpu, strict=True):
        node_cpu[assignment[kg]] += float(c)
    node_rows = {
        "ts": np.repeat(ts, len(node_ids)),
        "node": node_ids * s,
        "capacity": np.ones(len(node_ids) * s),
        "cpu_ms": np.tile(np.array([node_cpu[x] for x in node_ids], dtype=np.float64), s),
    }
    return {
        kind: _table(kind, cols)
        for kind, cols in ((KEYGROUPS, keygroups), (EDGES, edges), (NODES, node_rows))
    }


def stream_table(spec: SyntheticSpec, period_end: datetime) -> dict[str, pa.Table]:
    """The ``streams/`` facet dataset of a job reading streams: one row per stream, stamped at
    the period's first sample ({} when the job reads none)."""
    if not spec.streams:
        return {}
    end = parse_period_end(format_period_end(period_end))
    rates = stream_rates(spec, end)
    first = end - timedelta(seconds=spec.period_s)
    schema = FACET_SCHEMAS[STREAMS]
    columns = {"ts": [first] * len(rates), "stream": list(rates),
               "tuples_per_s": list(rates.values())}
    return {STREAMS: pa.Table.from_arrays([pa.array(columns[f.name], type=f.type)
                                           for f in schema], schema=schema)}


def _named(names: pa.Array, at: np.ndarray, samples: int) -> pa.ChunkedArray:
    """The strings `names[at]` once per sample (every sample lists the same ids): taken once
    by Arrow's kernel and repeated as chunks, so no Python string per row and no copy per
    sample (a period of 10⁵ key groups has millions of rows)."""
    return pa.chunked_array([names.take(pa.array(at, pa.int64()))] * samples, pa.string())


def _table(kind: str, columns: Mapping[str, object]) -> pa.Table:
    schema = SCHEMAS[kind]
    arrays = [column if isinstance(column := columns[f.name], pa.Array | pa.ChunkedArray)
              and column.type == f.type else pa.array(column, type=f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


class SyntheticJob:
    """The stand-in runtime: lands synthetic metrics and applies published assignments.

    State (version, nodes, assignment) persists in ``<state_root>/<job_id>/runtime.json`` so a
    restarted runtime lands the placement it was running.
    """

    #: the job has execution limits (make_source sets it): a manifest that would move units
    #: without a move schedule is refused, never applied at once (runtime/client.py)
    schedule_required = False

    def __init__(self, spec: SyntheticSpec, state_root: Path,
                 links: LinkFeed | None = None) -> None:
        self.spec = spec
        self.links = links  # a wide-area job's link measurements (runtime/wan_links.py)
        self.state_root = Path(state_root)
        state = load_state(self.state_root, spec.job_id)
        if state is None:
            state = RuntimeState(spec.job_id, None, initial_assignment(spec), spec.node_names)
            save_state(self.state_root, state)
        elif set(state.assignment) != set(spec.keygroups):
            raise ValueError(
                f"{self.state_root / spec.job_id}: runtime state was written for a different job "
                "shape (its key groups differ from the spec); delete it to restart from the initial "
                "allocation"
            )
        self._state = state

    @property
    def state(self) -> RuntimeState:
        return self._state

    @property
    def version(self) -> int | None:
        return self._state.version

    @property
    def assignment(self) -> Mapping[str, str]:
        return self._state.assignment

    def period_loads(self, period_end: datetime) -> PeriodLoads:
        return period_loads(self.spec, period_end, self._state.assignment)

    def query_facets(self, period_end: datetime) -> dict[str, pa.Table]:
        """A query population's subscriptions and sources ({} unless the spec has `reads`)."""
        spec = self.spec
        if not spec.reads:
            return {}
        reads = query_reads(len(spec.keygroups), spec.reads, spec.reads_beta, spec.seed)
        end = parse_period_end(format_period_end(period_end))
        return query_facets(reads, spec.keygroups, self._state.assignment, end, spec.period_s)

    def land_period(self, landing_root: Path, period_end: datetime) -> Path:
        tables = build_tables(self.spec, period_end, self._state.assignment, self._state.nodes)
        facets = {**stream_table(self.spec, period_end),
                  **self.query_facets(period_end),
                  **(self.links.table(period_end) if self.links is not None else {})}
        ex = load_execution(self.state_root, self.spec.job_id)
        return write_period(Path(landing_root), self.spec.job_id, period_end, tables, self._state,
                            facets=facets,
                            execution=None if ex is None else {**ex.to_dict(),
                                                               "summary": ex.summary()},
                            partial=ex is not None and ex.status in ("stopped", "failed"))

    def kill_node(self, landing_root: Path, node: str, at: datetime) -> Path:
        """`node` dies: the runtime reports it (schemas/health.py), keyed by the node and the
        instant, and returns the report's path. The stand-in keeps landing the node's units
        where they were until a published version moves them (and terminates the node)."""
        if node not in self._state.nodes:
            raise ValueError(f"job {self.spec.job_id!r} runs no node {node!r}; its nodes: "
                             f"{', '.join(self._state.nodes)}")
        stamp = at.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
        return write_report(Path(landing_root), HealthReport(
            self.spec.job_id, f"{node}-dead-{stamp}", at, (node,)))

    def apply_latest(self, published_root: Path) -> ApplyResult:
        """Apply the newest version wave by wave (runtime/apply.py); the state is saved after
        each wave, and a stop request or a unit that cannot move ends the schedule there."""
        current = self._state

        def move(moves: tuple[ScheduledMove, ...], target: Mapping[str, str],
                 nodes: tuple[str, ...]) -> tuple[tuple[str, ...], float, float]:
            return tuple(m.keygroup for m in moves), sum(m.state_bytes for m in moves), 0.0

        def keep(state: RuntimeState) -> None:
            self._state = state
            save_state(self.state_root, state)

        def describe(manifest: Manifest, execution: Execution) -> tuple[tuple[str, ...], str]:
            moved = tuple(kg for kg in self.spec.keygroups
                          if current.assignment[kg] != self._state.assignment[kg])
            return moved, (f"applied v{manifest.version} (plan {manifest.plan_id}, period "
                           f"{manifest.period_end}): {len(moved)} key group(s) moved in "
                           f"{execution.waves} wave(s)")

        return apply_in_waves(published_root, self.state_root, current, self.spec.keygroups,
                              move, keep, describe, require_schedule=self.schedule_required)
