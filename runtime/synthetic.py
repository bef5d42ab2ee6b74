"""A synthetic stream job standing in for the engine, with the load model of paper §5.1.

Names: operators ``op0``..``op<N-1>``; key groups ``op<o>-kg<kkk>`` (operator index, then the key
group's index within its operator, three digits: ``op1-kg003``); nodes ``node-<nn>`` (two digits:
``node-00``). Initial allocation: key groups in operator-major order dealt round-robin over nodes.

Load model (units: % of a reference node over the period), after §5.1 of
papers/albic-milp-madsen2016.txt:
- base load of a key group = the per-key-group mean (``mean_node_load * nodes / #keygroups``)
  adjusted by a uniform factor in [-5 %, +5 %], fixed per seed;
- each period, ``max(1, round(20 %))`` of the nodes hosting key groups drift by ``0.5 * varies``:
  half down (rounded down), the rest up. A drift is spread over a random subset of the node's key
  groups in proportion to their loads; a key group never loses more than 90 % of its load, so a
  node whose key groups cannot give up ``0.5 * varies`` drifts down by what they can.
- the drift is fresh each period and targets the nodes of the CURRENT assignment, while loads
  belong to key groups: a planner that balanced the last period finds new imbalance in the next.
With ``streams = d > 0`` the job reads d input streams ``in0``..``in<d-1>`` (ROD's linear load
model, Xing et al. 2006 §2.2) and its loads are exactly linear in their rates, with known true
coefficients (`true_coefficients`): a key group of operator o reads stream ``in<o mod d>``, and an
odd-indexed one also ``in<(o+1) mod d>`` at half the weight, scaled so that its load at the mean
rate ``STREAM_RATE`` is its base load. Each period every stream's rate is drawn uniformly in
[0.5, 1.5] × ``STREAM_RATE`` (`stream_rates`) and landed as the ``streams/`` facet dataset; the
§5.1 drift is off (``varies`` unused), so a fit over d periods recovers the coefficients exactly.
Everything is a function of (spec, period_end, current assignment) — never of wall clock or call
order — so re-landing a period gives byte-identical files.

Tuples and state: a key group at load L emits ``TUPLES_PER_LOAD_PCT_S * L`` tuples/s (so every
tuple costs 0.5 ms of CPU); op0 key groups receive as many from the source; each key group of op i
splits its output evenly over every key group of op i+1 (full partitioning), and a key group of
op i+1 receives the sum of its incoming edges. ``state_bytes = STATE_BYTES_PER_TUPLE * tuples_in``
of the period (a one-period window), reported alike in every sample.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pyarrow as pa

from runtime.client import next_state
from runtime.source import (
    ApplyResult,
    RuntimeState,
    load_state,
    save_state,
    write_period,
)
from runtime.wan_links import LinkFeed
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


DRIFT_FRACTION = 0.2
MAX_CUT = 0.9
TUPLES_PER_LOAD_PCT_S = 20
TUPLE_BYTES = 100
STREAM_RATE = 1000.0  # mean rate of an input stream, tuples/s
STATE_BYTES_PER_TUPLE = 64

_INT_FIELDS = (
    "operators",
    "keygroups_per_operator",
    "nodes",
    "seed",
    "samples_per_period",
    "period_s",
    "streams",
)
_LIMITS = {"keygroups_per_operator": 1000, "nodes": 100, "streams": 20}
_US = timedelta(microseconds=1)


def keygroup_name(operator: int, index: int) -> str:
    return f"op{operator}-kg{index:03d}"


def node_name(index: int) -> str:
    return f"node-{index:02d}"


@dataclass(frozen=True)
class SyntheticSpec:
    """Shape and load parameters of a synthetic job; validated so bad config fails at start."""

    job_id: str
    operators: int = 4
    keygroups_per_operator: int = 16
    nodes: int = 8
    mean_node_load: float = 60.0
    varies: float = 30.0
    seed: int = 7
    samples_per_period: int = 5
    period_s: int = 300
    streams: int = 0

    def __post_init__(self) -> None:
        job = self.job_id
        if not isinstance(job, str) or not job or job[0] == "." or "/" in job or "\\" in job:
            raise ValueError(f"job_id must be one path component, not hidden, got {job!r}")
        for name in _INT_FIELDS:
            value = getattr(self, name)
            low, high = (0 if name in ("seed", "streams") else 1), _LIMITS.get(name)
            if type(value) is not int or value < low or (high is not None and value > high):
                bound = f"between {low} and {high}" if high else f">= {low}"
                raise ValueError(f"{name} must be an integer {bound}, got {value!r}")
        for name, positive in (("mean_node_load", True), ("varies", False)):
            value = getattr(self, name)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or value < 0 or (positive and value == 0):
                bound = "> 0" if positive else ">= 0"
                raise ValueError(
                    f"{name} must be a finite number {bound} (% of a node), got {value!r}"
                )
            object.__setattr__(self, name, float(value))
        if self.samples_per_period > self.period_s * 1_000_000:
            raise ValueError(
                f"samples_per_period must be <= period_s * 1e6 (distinct µs timestamps), "
                f"got {self.samples_per_period}"
            )

    @classmethod
    def from_mapping(
        cls, mapping: Mapping[str, object], *, job_id: str | None = None
    ) -> SyntheticSpec:
        """Parse a config table (e.g. config/jobs.toml's ``source``); `kind`, if given, must be synthetic."""
        data = dict(mapping)
        kind = data.pop("kind", "synthetic")
        if kind != "synthetic":
            raise ValueError(
                f'source kind is {kind!r}; SyntheticSpec only reads kind = "synthetic"'
            )
        if job_id is not None:
            if data.get("job_id", job_id) != job_id:
                raise ValueError(
                    f"job_id {data['job_id']!r} in the mapping conflicts with {job_id!r}"
                )
            data["job_id"] = job_id
        allowed = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise ValueError(
                f"unknown synthetic source key(s) {unknown}; allowed: {allowed} and 'kind'"
            )
        if "job_id" not in data:
            raise ValueError("synthetic source needs a 'job_id'")
        return cls(**data)  # type: ignore[arg-type]  # types are checked in __post_init__

    @property
    def operator_names(self) -> tuple[str, ...]:
        return tuple(f"op{o}" for o in range(self.operators))

    @property
    def keygroups(self) -> tuple[str, ...]:
        """All key groups, operator-major (the order of every table row block)."""
        return tuple(
            keygroup_name(o, k)
            for o in range(self.operators)
            for k in range(self.keygroups_per_operator)
        )

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(node_name(i) for i in range(self.nodes))

    @property
    def stream_names(self) -> tuple[str, ...]:
        return tuple(f"in{k}" for k in range(self.streams))


def initial_assignment(spec: SyntheticSpec) -> dict[str, str]:
    """Round-robin: every node gets the same number of key groups (±1), of every operator."""
    names = spec.node_names
    return {kg: names[i % len(names)] for i, kg in enumerate(spec.keygroups)}


def _rng(seed: int, *parts: str) -> np.random.Generator:
    """A generator keyed by content (seed + labels), so results never depend on call order."""
    digest = hashlib.sha256("|".join([str(seed), *parts]).encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "big"))


def base_loads(spec: SyntheticSpec) -> dict[str, float]:
    kgs = spec.keygroups
    mean = spec.mean_node_load * spec.nodes / len(kgs)
    factors = _rng(spec.seed, "base").uniform(-0.05, 0.05, size=len(kgs))
    return {kg: float(mean * (1.0 + f)) for kg, f in zip(kgs, factors, strict=True)}


def true_coefficients(spec: SyntheticSpec) -> dict[str, dict[str, float]]:
    """l_jk (% of a node per tuple/s) of every key group on every stream (module doc); {} when
    the job reads no streams."""
    if not spec.streams:
        return {}
    base, names = base_loads(spec), spec.stream_names
    out: dict[str, dict[str, float]] = {}
    for o in range(spec.operators):
        for i in range(spec.keygroups_per_operator):
            kg = keygroup_name(o, i)
            weights = dict.fromkeys(names, 0.0)
            weights[names[o % spec.streams]] += 1.0
            if i % 2 and spec.streams > 1:
                weights[names[(o + 1) % spec.streams]] += 0.5
            total = sum(weights.values())
            out[kg] = {k: base[kg] * w / total / STREAM_RATE for k, w in weights.items()}
    return out


def stream_rates(spec: SyntheticSpec, period_end: datetime) -> dict[str, float]:
    """Each input stream's rate over the period ending at `period_end`, tuples/s."""
    rng = _rng(spec.seed, "streams", format_period_end(period_end))
    factors = rng.uniform(0.5, 1.5, size=spec.streams)
    return {k: float(STREAM_RATE * f) for k, f in zip(spec.stream_names, factors, strict=True)}


@dataclass(frozen=True)
class PeriodLoads:
    """Key-group loads of one period, and the drift applied per node (for tests and debugging)."""

    keygroups: Mapping[str, float]
    drift: Mapping[str, float]


def period_loads(
    spec: SyntheticSpec, period_end: datetime, assignment: Mapping[str, str]
) -> PeriodLoads:
    """Base loads plus this period's §5.1 drift on the nodes `assignment` uses (see module doc);
    for a job reading streams, the linear load of this period's rates."""
    if spec.streams:
        rates = stream_rates(spec, period_end)
        linear = {kg: sum(c * rates[k] for k, c in row.items())
                  for kg, row in true_coefficients(spec).items()}
        return PeriodLoads(MappingProxyType(linear), MappingProxyType({}))
    loads = base_loads(spec)
    by_node: dict[str, list[str]] = {}
    for kg in sorted(assignment):
        by_node.setdefault(assignment[kg], []).append(kg)
    hosted = sorted(by_node)
    drift: dict[str, float] = {}
    if spec.varies > 0 and hosted:
        rng = _rng(spec.seed, "period", format_period_end(period_end))
        count = max(1, int(DRIFT_FRACTION * len(hosted) + 0.5))
        chosen = [hosted[int(i)] for i in rng.permutation(len(hosted))[:count]]
        delta = 0.5 * spec.varies
        for rank, node in enumerate(chosen):
            kgs = by_node[node]
            order = [kgs[int(i)] for i in rng.permutation(len(kgs))]
            size = int(rng.integers(1, len(kgs) + 1))
            down = rank < count // 2
            subset = order[:size]
            while (
                down
                and MAX_CUT * sum(loads[kg] for kg in subset) < delta
                and len(subset) < len(order)
            ):
                subset = order[: len(subset) + 1]
            total = sum(loads[kg] for kg in subset)
            change = -min(delta, MAX_CUT * total) if down else delta
            for kg in subset:
                loads[kg] += change * loads[kg] / total
            drift[node] = change
    return PeriodLoads(MappingProxyType(loads), MappingProxyType(drift))


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
    edge_blocks: list[np.ndarray] = []
    rotation = (np.arange(k)[None, :] - np.arange(k)[:, None]) % k  # [src, dst]
    for o in range(spec.operators - 1):
        q, r = np.divmod(out[o * k : (o + 1) * k], k)  # (src, sample)
        block = q[:, None, :] + (rotation[:, :, None] < r[:, None, :])  # (src, dst, sample)
        edge_blocks.append(block)
        tin[(o + 1) * k : (o + 2) * k] = block.sum(axis=0)
    state = tin.sum(axis=1) * STATE_BYTES_PER_TUPLE

    n = len(kgs)
    kg_ops = [kg.split("-", 1)[0] for kg in kgs]
    kg_nodes = [assignment[kg] for kg in kgs]
    keygroups = {
        "ts": np.repeat(ts, n),
        "operator": kg_ops * s,
        "keygroup": list(kgs) * s,
        "node": kg_nodes * s,
        "tuples_in": tin.T.reshape(-1),
        "tuples_out": out.T.reshape(-1),
        "cpu_ms": np.tile(cpu, s),
        "state_bytes": np.tile(state, s),
    }
    src: list[str] = []
    dst: list[str] = []
    for o in range(spec.operators - 1):
        srcs, dsts = kgs[o * k : (o + 1) * k], kgs[(o + 1) * k : (o + 2) * k]
        src += [a for a in srcs for _ in dsts]
        dst += list(dsts) * k
    per_sample = [np.concatenate([b[:, :, j].reshape(-1) for b in edge_blocks]) for j in range(s)]
    tuples = np.concatenate(per_sample) if edge_blocks else np.zeros(0, dtype=np.int64)
    edges = {
        "ts": np.repeat(ts, len(src)),
        "src_keygroup": src * s,
        "dst_keygroup": dst * s,
        "tuples": tuples,
        "bytes": tuples * TUPLE_BYTES,
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


def _table(kind: str, columns: Mapping[str, object]) -> pa.Table:
    schema = SCHEMAS[kind]
    arrays = [pa.array(columns[f.name], type=f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


class SyntheticJob:
    """The stand-in runtime: lands synthetic metrics and applies published assignments.

    State (version, nodes, assignment) persists in ``<state_root>/<job_id>/runtime.json`` so a
    restarted runtime lands the placement it was running.
    """

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

    def land_period(self, landing_root: Path, period_end: datetime) -> Path:
        tables = build_tables(self.spec, period_end, self._state.assignment, self._state.nodes)
        facets = {**stream_table(self.spec, period_end),
                  **(self.links.table(period_end) if self.links is not None else {})}
        return write_period(Path(landing_root), self.spec.job_id, period_end, tables, self._state,
                            facets=facets)

    def apply_latest(self, published_root: Path) -> ApplyResult:
        current = self._state
        outcome = next_state(published_root, current, self.spec.keygroups)
        if isinstance(outcome, ApplyResult):
            return outcome
        manifest, new = outcome
        save_state(self.state_root, new)
        self._state = new
        moved = tuple(
            kg for kg in self.spec.keygroups if current.assignment[kg] != new.assignment[kg]
        )
        return ApplyResult(
            "applied",
            new.version,
            f"applied v{manifest.version} (plan {manifest.plan_id}, period {manifest.period_end}): "
            f"{len(moved)} key group(s) moved",
            moved,
        )
