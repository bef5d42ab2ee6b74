"""A replay job's configuration (config/jobs.toml ``source = { kind = "replay", ... }``).

Validated when the job is loaded, so a wrong value fails before any period runs. `period_s` and
`start` come from the job's `spl` and `start_date` (settings.make_source passes them): period n
of the replay ends at ``start + n * period_s``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from runtime.replay.capacity import CapacityChange, capacity_at, check_capacities, check_changes
from runtime.routing import SPLITTING, canonical, check_epsilon
from schemas.landing import format_period_end, parse_period_end
from schemas.topk import DEFAULT_TOP_K

__all__ = [
    "DEFAULT_KEYGROUPS_PER_NODE",
    "DEFAULT_WINDOW_HOURS",
    "JOB_OPERATORS",
    "ReplaySpec",
    "check_job_fields",
    "ramp_profile",
]

#: key groups per operator per node, by job: 5 as in the paper's Job 2 (20 nodes -> 100 per
#: operator, also Job 1's 100); Job 4 has 7 operators, so 3 keeps planning affordable.
DEFAULT_KEYGROUPS_PER_NODE = {1: 5, 2: 5, 3: 5, 4: 3}
#: tumbling window (event-time hours), by job: Job 1's top-k is per week, so about one window
#: closes per period of the default compression (a day window would put seven windows' top-k
#: candidates, ~a quarter of the input volume, on seven global key groups every period);
#: Job 4's store writes once a day.
DEFAULT_WINDOW_HOURS = {1: 168, 2: 24, 3: 24, 4: 24}
#: each job's operators, and which of them are mergeable (flights.py; a test keeps this in step),
#: so that `operator_routing` is checked when the config loads
JOB_OPERATORS: dict[int, dict[str, bool]] = {
    1: {"geohash": False, "topk": True, "global": False},
    2: {"extract": False, "sumdelay": True},
    3: {"extract": False, "sumdelay": True, "routedelay": True},
    4: {"extract": False, "sumdelay": True, "routedelay": True, "rainscore": False,
        "join": False, "courier": True, "store": False},
}
def check_job_fields(spec: object, ints: Mapping[str, tuple[int, int]]) -> None:
    """A replay source's `job_id` is one path component (not hidden), and each of its integer
    fields named in `ints` lies in its (low, high) range (ValueError otherwise)."""
    job = getattr(spec, "job_id", None)
    if not isinstance(job, str) or not job or job[0] == "." or "/" in job or "\\" in job:
        raise ValueError(f"job_id must be one path component, not hidden, got {job!r}")
    for name, (low, high) in ints.items():
        value = getattr(spec, name)
        if type(value) is not int or not low <= value <= high:
            raise ValueError(f"{name} must be an integer between {low} and {high}, "
                             f"got {value!r}")


_INTS = {"job": (1, 4), "nodes": (1, 200),
         "periods": (1, 100_000), "period_s": (1, 86_400 * 365), "seed": (0, 2**31 - 1),
         "top_k": (1, 1000), "aggregate_every": (0, 100_000), "comm_top_k": (0, 100_000)}


@dataclass(frozen=True)
class ReplaySpec:
    """One replayed job: which paper job, the cluster, the compression, routing and load."""

    job_id: str
    job: int
    nodes: int = 20
    keygroups_per_node: int = 0  # 0 = the job's default (DEFAULT_KEYGROUPS_PER_NODE)
    periods: int = 52  # the data set (one year) is compressed into this many periods
    #: routing policy of the mergeable operators (runtime/routing/): kg (alias key), sg, pkg
    #: (alias potc, the old name), potc_msg, ch, chbl, porc; the others keep key grouping
    routing: str = "key"
    load_pct: float = 60.0  # mean node load of the initial allocation in the first period
    period_s: int = 300
    start: datetime = datetime(2026, 1, 1, tzinfo=UTC)
    seed: int = 1
    top_k: int = 10
    window_hours: int = 0  # 0 = the job's default (DEFAULT_WINDOW_HOURS)
    #: flights per period in proportion to these multipliers, one per period (a load ramp);
    #: empty = the same number of flights in every period
    rate_profile: tuple[float, ...] = ()
    #: capacity weight per node (node-00 first; empty = all 1.0) and changes from a period on
    #: (runtime/replay/capacity.py)
    capacities: tuple[float, ...] = ()
    capacity_changes: tuple[CapacityChange, ...] = ()
    #: a routing policy per operator name, over `routing` (checked against the job's operators
    #: when the engine is built: a splitting policy needs a mergeable operator)
    operator_routing: Mapping[str, str] = field(default_factory=dict, hash=False)
    #: ε of PORC and CH-BL: a key group takes a tuple while its count is below ⌈(1+ε)t/b⌉
    epsilon: float = 0.01
    #: periodic aggregation (Nasir et al. §5.3): every this many periods the partials of split
    #: keys' open windows also move to their principal key group (0 = only at window end)
    aggregate_every: int = 0
    #: the heaviest outgoing pairs each unit lands (schemas/topk.py), with the total of all its
    #: pairs in comm_totals/; a unit with at most this many pairs lands them all; 0 = all pairs
    comm_top_k: int = DEFAULT_TOP_K

    def __post_init__(self) -> None:
        check_job_fields(self, _INTS)
        kpn = self.keygroups_per_node
        if type(kpn) is not int or not 0 <= kpn <= 50:
            raise ValueError(f"keygroups_per_node must be an integer between 1 and 50 "
                             f"(0 = the job's default), got {kpn!r}")
        if kpn == 0:
            object.__setattr__(self, "keygroups_per_node", DEFAULT_KEYGROUPS_PER_NODE[self.job])
        hours = self.window_hours
        if type(hours) is not int or not 0 <= hours <= 24 * 366:
            raise ValueError(f"window_hours must be an integer between 1 and {24 * 366} "
                             f"(0 = the job's default), got {hours!r}")
        if hours == 0:
            object.__setattr__(self, "window_hours", DEFAULT_WINDOW_HOURS[self.job])
        canonical(self.routing)  # ValueError naming the policies
        ops = self.operator_routing
        if not isinstance(ops, Mapping) or not all(isinstance(k, str) for k in ops):
            raise ValueError(f"operator_routing must map operator names to routing policies, "
                             f"got {ops!r}")
        known = JOB_OPERATORS[self.job]
        for name, policy in ops.items():
            try:
                pol = canonical(policy)
            except ValueError as exc:
                raise ValueError(f"operator_routing.{name}: {exc}") from None
            if name not in known:
                raise ValueError(f"operator_routing names operator {name!r}, which job "
                                 f"{self.job} does not have; its operators: {list(known)}")
            if pol in SPLITTING and not known[name]:
                raise ValueError(f"operator_routing.{name}: {name!r} is not mergeable, so "
                                 f"{pol!r} (which splits a key over key groups) cannot route "
                                 "it; use 'kg' or 'ch'")
        object.__setattr__(self, "operator_routing", MappingProxyType(dict(ops)))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        load = self.load_pct
        if isinstance(load, bool) or not isinstance(load, int | float) or not (
            math.isfinite(load) and 0 < load <= 1000
        ):
            raise ValueError(f"load_pct must be a number in (0, 1000], got {load!r}")
        object.__setattr__(self, "load_pct", float(load))
        rate = self.rate_profile
        if not isinstance(rate, list | tuple) or (rate and (
                len(rate) != self.periods or any(
                    isinstance(r, bool) or not isinstance(r, int | float)
                    or not (math.isfinite(r) and 0 < r <= 100) for r in rate))):
            raise ValueError(f"rate_profile must be empty or hold one multiplier in (0, 100] per "
                             f"period ({self.periods}), got {rate!r}")
        object.__setattr__(self, "rate_profile", tuple(float(r) for r in rate))
        object.__setattr__(self, "capacities",
                           check_capacities(self.capacities, self.nodes, "capacities"))
        object.__setattr__(self, "capacity_changes", check_changes(
            self.capacity_changes, self.nodes, self.periods, "capacity_changes"))
        start = self.start
        if isinstance(start, str):
            start = parse_period_end(start)
        if not isinstance(start, datetime) or start.tzinfo is None:
            raise ValueError(f"start must be a date-time with a zone, got {self.start!r}")
        object.__setattr__(self, "start", start.astimezone(UTC))

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, object], *, job_id: str | None = None) -> ReplaySpec:
        """Parse a config table; `kind`, if given, must be "replay"; unknown keys are refused."""
        data = dict(mapping)
        kind = data.pop("kind", "replay")
        if kind != "replay":
            raise ValueError(f'source kind is {kind!r}; ReplaySpec only reads kind = "replay"')
        if job_id is not None:
            if data.get("job_id", job_id) != job_id:
                raise ValueError(f"job_id {data['job_id']!r} conflicts with {job_id!r}")
            data["job_id"] = job_id
        allowed = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise ValueError(f"unknown replay source key(s) {unknown}; allowed: {allowed} "
                             "and 'kind'")
        for needed in ("job_id", "job"):
            if needed not in data:
                raise ValueError(f"replay source needs {needed!r} (job = 1, 2, 3 or 4)")
        return cls(**data)  # type: ignore[arg-type]  # checked in __post_init__

    @property
    def kgs_per_operator(self) -> int:
        return self.nodes * self.keygroups_per_node

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(f"node-{i:02d}" for i in range(self.nodes))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["start"] = format_period_end(self.start)
        out["rate_profile"] = list(self.rate_profile)
        out["capacities"] = list(self.capacities)
        out["capacity_changes"] = [{"period": p, "capacities": list(c)}
                                   for p, c in self.capacity_changes]
        out["operator_routing"] = dict(self.operator_routing)
        return out

    def fingerprint(self) -> str:
        """Identifies everything that shapes the replay (a checkpoint must match it)."""
        body = {k: v for k, v in self.to_dict().items() if k != "job_id"}
        if not body["rate_profile"]:
            del body["rate_profile"]  # a constant rate fingerprints as before the profile existed
        for key in ("capacities", "capacity_changes"):  # likewise homogeneous nodes
            if not body[key]:
                del body[key]
        if not body["operator_routing"]:
            del body["operator_routing"]  # likewise the routing options, at their defaults
        if body["epsilon"] == 0.01:
            del body["epsilon"]
        if body["aggregate_every"] == 0:
            del body["aggregate_every"]
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]

    def capacity_at(self, period: int) -> dict[str, float]:
        """Each node's capacity weight in job period `period` (1-based)."""
        return capacity_at(self.node_names, self.capacities, self.capacity_changes, period)

    def period_index(self, period_end: datetime) -> int:
        """n >= 1 such that period_end = start + n * period_s; ValueError otherwise."""
        end = parse_period_end(format_period_end(period_end))
        seconds = (end - self.start).total_seconds()
        n, rest = divmod(seconds, self.period_s)
        if rest or n < 1:
            raise ValueError(
                f"period end {format_period_end(end)} is not start + n * {self.period_s} s for "
                f"some n >= 1 (start {format_period_end(self.start)}); pick a period boundary")
        return int(n)


def ramp_profile(periods: int, *, peak: float = 2.5, low: float = 0.6) -> tuple[float, ...]:
    """A load ramp over `periods` periods: 1x for the first sixth, up linearly to `peak` by the
    middle, down to `low` by five sixths, then `low` (deterministic; a `rate_profile`)."""
    if periods < 6:
        raise ValueError(f"a ramp needs at least 6 periods, got {periods}")
    xs = [0.0, periods / 6, periods / 2, periods * 5 / 6, float(periods)]
    ys = [1.0, 1.0, peak, low, low]
    out = []
    for p in range(periods):
        x = p + 0.5
        i = max(j for j in range(len(xs) - 1) if xs[j] <= x)
        out.append(round(ys[i] + (ys[i + 1] - ys[i]) * (x - xs[i]) / (xs[i + 1] - xs[i]), 4))
    return tuple(out)
