"""The synthetic stream job's shape and load model (paper §5.1; ROD's linear model with streams).

Names: operators ``op0``..``op<N-1>``; key groups ``op<o>-kg<kkk>`` (operator index, then the key
group's index within its operator, three digits: ``op1-kg003``); nodes ``node-<nn>`` (at least two
digits: ``node-00``; up to 1,000 nodes). Initial allocation: key groups in operator-major order
dealt round-robin over nodes.

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
With ``ramp_periods = P`` (≥ 6) the rates also follow a load ramp and bursts (ROD Fig. 18 in
spirit): each rate is further multiplied by the replay's ramp profile (1x, up to 2.5x, down to
0.6x over P periods, repeating; `ramp_factor`) and, with probability 0.2 per stream and period,
by a burst ×U[1.5, 3]; the loads stay exactly linear in the rates.
Everything is a function of (spec, period_end, current assignment) — never of wall clock or call
order — so re-landing a period gives byte-identical files. The landing tables and the runtime
itself are in runtime/synthetic.py.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from functools import cached_property
from types import MappingProxyType

import numpy as np

from schemas.landing import format_period_end

__all__ = [
    "BURST",
    "BURST_P",
    "DRIFT_FRACTION",
    "MAX_CUT",
    "STREAM_RATE",
    "PeriodLoads",
    "SyntheticSpec",
    "base_loads",
    "initial_assignment",
    "keygroup_name",
    "node_name",
    "period_loads",
    "ramp_factor",
    "stream_rates",
    "true_coefficients",
]


DRIFT_FRACTION = 0.2
MAX_CUT = 0.9
STREAM_RATE = 1000.0  # mean rate of an input stream, tuples/s
BURST_P, BURST = 0.2, (1.5, 3.0)  # with a ramp: a stream bursts w.p. 0.2 per period, ×U[1.5, 3]

_INT_FIELDS = (
    "operators",
    "keygroups_per_operator",
    "nodes",
    "seed",
    "samples_per_period",
    "period_s",
    "streams",
    "ramp_periods",
    "fanout",
    "reads",
)
_LIMITS = {"keygroups_per_operator": 1000, "nodes": 1000, "streams": 20, "reads": 10}


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
    ramp_periods: int = 0
    #: key groups of the next operator each key group sends to (0: all of them, the full
    #: partitioning); with f > 0 the edges of a period are O(units * f), not O(units^2)
    fanout: int = 0
    #: with d > 0 every key group is a query reading d sources (Herding, Zong et al. 2015 §2,
    #: runtime/synthetic_queries.py): the job lands subscriptions and sources, and no edges
    reads: int = 0
    #: the sources' popularity exponent β of Herding's §6.1 generator (with `reads`)
    reads_beta: float = 2.0

    def __post_init__(self) -> None:
        job = self.job_id
        if not isinstance(job, str) or not job or job[0] == "." or "/" in job or "\\" in job:
            raise ValueError(f"job_id must be one path component, not hidden, got {job!r}")
        for name in _INT_FIELDS:
            value = getattr(self, name)
            low, high = (0 if name in ("seed", "streams", "ramp_periods", "fanout", "reads")
                         else 1), _LIMITS.get(name)
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
        beta = self.reads_beta
        if (not isinstance(beta, (int, float)) or isinstance(beta, bool)
                or not math.isfinite(beta) or not 0.5 <= beta <= 10):
            raise ValueError(f"reads_beta must be a number between 0.5 and 10 (the sources' "
                             f"popularity exponent), got {beta!r}")
        object.__setattr__(self, "reads_beta", float(beta))
        if self.reads and (self.streams or self.fanout):
            raise ValueError(f"reads = {self.reads} makes every key group a query that sends "
                             "to no one: it takes neither streams nor fanout; set them to 0")
        if self.ramp_periods and (self.ramp_periods < 6 or not self.streams):
            raise ValueError(f"ramp_periods must be 0 (no ramp) or >= 6 on a job with streams "
                             f"> 0, got ramp_periods = {self.ramp_periods}, streams = "
                             f"{self.streams}")
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

    @cached_property
    def keygroups(self) -> tuple[str, ...]:
        """All key groups, operator-major (the order of every table row block); built once per
        spec (a period reads them several times, 10⁵ names at real sizes)."""
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


def ramp_factor(spec: SyntheticSpec, period_end: datetime) -> float:
    """The ramp's common factor for the period ending at `period_end` (1 without a ramp): the
    replay's `ramp_profile` over ``ramp_periods`` periods, repeating; the period whose end is
    ``period_s`` after a multiple of ``ramp_periods * period_s`` since the epoch is its first."""
    from runtime.replay.spec import ramp_profile

    if not spec.ramp_periods:
        return 1.0
    index = int(period_end.timestamp()) // spec.period_s - 1
    return ramp_profile(spec.ramp_periods)[index % spec.ramp_periods]


def stream_rates(spec: SyntheticSpec, period_end: datetime) -> dict[str, float]:
    """Each input stream's rate over the period ending at `period_end`, tuples/s; with a ramp,
    times `ramp_factor` and, with probability BURST_P per stream, a burst ×U[1.5, 3]."""
    rng = _rng(spec.seed, "streams", format_period_end(period_end))
    factors = rng.uniform(0.5, 1.5, size=spec.streams)
    if spec.ramp_periods:
        bursts = np.where(rng.random(spec.streams) < BURST_P,
                          rng.uniform(*BURST, size=spec.streams), 1.0)
        factors = factors * bursts * ramp_factor(spec, period_end)
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
            # grow a cut until it can give up delta: a running sum (left to right, as `sum`
            # adds), so a node of m key groups costs O(m), not O(m²)
            end, running = size, sum(loads[kg] for kg in order[:size])
            while down and MAX_CUT * running < delta and end < len(order):
                running += loads[order[end]]
                end += 1
            subset = order[:end]
            total = sum(loads[kg] for kg in subset)
            change = -min(delta, MAX_CUT * total) if down else delta
            for kg in subset:
                loads[kg] += change * loads[kg] / total
            drift[node] = change
    return PeriodLoads(MappingProxyType(loads), MappingProxyType(drift))

