"""A Kafka Streams job's configuration (config/jobs.toml ``source = { kind = "kafka-streams", … }``).

Validated when the job is loaded (settings.make_source), so a wrong value fails before a JVM
starts: one line naming the key, exit 2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["KStreamsSpec"]


@dataclass(frozen=True)
class KStreamsSpec:
    """`nodes` instances (node-00 …), each one JVM; the input topic has `partitions` partitions,
    so the job's units are the tasks 0_0 … 0_<partitions-1>. Each landed period first produces
    the next `records_per_period` flights. `capacities`: per node (default 1.0 each).
    `load_pct`: the mean node load the first period is scaled to (one calibration factor, as the
    replay engine does), so loads are in the planner's usual range whatever the machine's speed.
    `followup_ms`: the assignor's follow-up rebalance delay. `default_assignor`: run Kafka
    Streams' own assignor instead of ReconfTaskAssignor (the benchmark's baseline). `load_metric`:
    what a task's load is measured by (stats.py): its records in, or its measured processing
    time. `wave_poll_ms`: while a wave of a move schedule runs, how often the assignor checks that
    its tasks run (a follow-up rebalance each time, at most every `followup_ms`); `wave_timeout_ms`: a wave whose tasks do not
    all run by then fails (runtime/kafka_streams/waves.py).

    Under load (runtime/kafka_streams/loaded.py): `cost_us` > 0 gives each instance a known
    capacity (µs a record waits at capacity 1.0, divided by the node's capacity); `rate` > 0
    feeds the job an open-loop stream of that many records/s (`keys`: "routes" or "zipf") instead
    of a slice per period, and a landed period is `period_wall_s` of wall time since the last;
    `hot_spot_period` n > 0 shifts the heaviest keys from the job's n-th landed period on."""

    job_id: str
    period_s: int = 300
    nodes: int = 3
    partitions: int = 12
    records_per_period: int = 20000
    capacities: tuple[float, ...] = ()
    load_pct: float = 60.0
    followup_ms: int = 3000
    apply_timeout_s: float = 90.0
    default_assignor: bool = False
    load_metric: str = "records"
    wave_poll_ms: int = 1000
    wave_timeout_ms: int = 120_000
    cost_us: float = 0.0
    rate: float = 0.0
    keys: str = "routes"
    period_wall_s: float = 20.0
    hot_spot_period: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.nodes <= 16:
            raise ValueError(f"nodes must be 1..16 (one JVM each), got {self.nodes}")
        if not self.nodes <= self.partitions <= 256:
            raise ValueError(f"partitions must be between nodes ({self.nodes}) and 256, "
                             f"got {self.partitions}")
        if self.records_per_period < 1:
            raise ValueError(f"records_per_period must be >= 1, got {self.records_per_period}")
        caps = tuple(float(c) for c in self.capacities)
        if caps and (len(caps) != self.nodes or min(caps) <= 0):
            raise ValueError(f"capacities must list {self.nodes} positive numbers, got {caps}")
        object.__setattr__(self, "capacities", caps or (1.0,) * self.nodes)
        if not 0 < self.load_pct <= 100:
            raise ValueError(f"load_pct must be in (0, 100], got {self.load_pct}")
        if self.load_metric not in ("records", "processing_time"):
            raise ValueError(f'load_metric must be "records" or "processing_time", '
                             f"got {self.load_metric!r}")
        if self.followup_ms < 500:
            raise ValueError(f"followup_ms must be >= 500, got {self.followup_ms}")
        if self.wave_poll_ms < 200:
            raise ValueError(f"wave_poll_ms must be >= 200, got {self.wave_poll_ms}")
        if self.wave_timeout_ms < 1:
            raise ValueError(f"wave_timeout_ms must be >= 1, got {self.wave_timeout_ms}")
        if self.cost_us < 0 or self.rate < 0 or self.hot_spot_period < 0:
            raise ValueError(f"cost_us, rate and hot_spot_period must be >= 0, got "
                             f"{self.cost_us}, {self.rate}, {self.hot_spot_period}")
        if self.rate > 0 and self.period_wall_s < 5:
            raise ValueError(f"period_wall_s must be >= 5 under load, got {self.period_wall_s}")
        if self.keys not in ("routes", "zipf"):
            raise ValueError(f'keys must be "routes" or "zipf", got {self.keys!r}')

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any], *, job_id: str) -> KStreamsSpec:
        data = dict(mapping)
        kind = data.pop("kind", "kafka-streams")
        if kind != "kafka-streams":
            raise ValueError(f'source kind is {kind!r}; KStreamsSpec reads kind = "kafka-streams"')
        data.pop("start", None)
        allowed = [f.name for f in fields(cls) if f.name != "job_id"]
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise ValueError(f"unknown kafka-streams source key(s) {unknown}; allowed: {allowed} "
                             "and 'kind'")
        if "capacities" in data:
            data["capacities"] = tuple(data["capacities"])
        return cls(job_id=job_id, **data)

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(f"node-{i:02d}" for i in range(self.nodes))

    def capacity(self, node: str) -> float:
        return self.capacities[self.node_names.index(node)] if node in self.node_names else 1.0
