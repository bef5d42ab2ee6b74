"""The application's end-to-end consumer lag over a period: records produced, not yet processed.

The consumers' own `records-lag` metric (log end offset − fetch position) stays ~0 here: Kafka
Streams fetches ahead and buffers up to `buffered.records.per.partition` records per partition
before it processes them, so the metric does not see records waiting in the application. The
committed offsets trail by the commit interval instead. `LagSampler` therefore counts what the
instances report processed (`progress`: the records taken in since the period began, summed over
the instances, every 0.25 s) against what the producer wrote: once the period's slice is written
(`produced`), each sample's lag is `produced − processed`, and the period's max and mean are over
the samples from then until the slice is processed. The producer (one JVM writing the whole
slice) reports only when done, so the lag while it writes is not sampled; the sample at its end
is the backlog it left, the largest the period has when processing trails production.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from runtime.kafka_streams.cluster import Cluster, wait_for

__all__ = ["LagSampler", "run_slice"]


@dataclass
class LagSampler:
    """`with LagSampler(progress) as s: ...produce...; s.produced(n); ...wait...`: `summary()`."""

    progress: Callable[[], int]
    every_s: float = 0.25
    samples: list[tuple[float, int]] = field(default_factory=list)  # (monotonic s, processed)
    _written: tuple[float, int] | None = field(default=None, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def sample(self) -> None:
        self.samples.append((time.monotonic(), self.progress()))

    def produced(self, count: int) -> None:
        """The slice's `count` records are written now: lag samples start here."""
        self._written = (time.monotonic(), count)
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()

    def __enter__(self) -> LagSampler:
        self._thread = threading.Thread(target=self._run, name="lag-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def lags(self) -> list[int]:
        """`produced − processed` at each sample from the slice's end on (never below 0)."""
        if self._written is None:
            return []
        since, count = self._written
        return [max(0, count - done) for t, done in self.samples if t >= since]

    def summary(self) -> dict[str, float]:
        """max and mean lag (records) of the samples, and how many there were."""
        lags = self.lags()
        if not lags:
            return {"max": 0.0, "mean": 0.0, "samples": 0.0}
        return {"max": float(max(lags)), "mean": sum(lags) / len(lags), "samples": float(len(lags))}


def run_slice(cluster: Cluster, count: int, job_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Produce the period's slice of `count` flights and wait until the instances processed it:
    their snapshots then, and the period's produced count, produce + drain time and lag."""
    # per instance: a task's counters only grow on the instance that ran it, so an instance
    # killed during the period takes its counts with it and must not hold back the sum
    base_in = {n: sum(t["in"] for t in s["tasks"].values())
               for n, s in cluster.stats().items()}
    last_done: list[int] = []

    def processed(snaps: dict[str, dict[str, Any]]) -> int:
        return sum(sum(t["in"] for t in s["tasks"].values()) - base_in.get(n, 0)
                   for n, s in snaps.items())

    sampler = LagSampler(lambda: processed(cluster.stats()))
    with sampler:  # the end-to-end lag once the slice is written, until it is processed
        t0 = time.monotonic()
        produced = cluster.produce(count)
        if produced < count:  # the year is over: the next round starts
            cluster.produced = 0
            produced += cluster.produce(count - produced)
        sampler.produced(produced)

        def caught_up() -> dict[str, Any] | None:
            snaps = cluster.stats()
            done = processed(snaps)
            lag = sum(float(s.get("input_lag", 0.0)) for s in snaps.values())
            if done >= produced and lag == 0:
                return snaps
            # an instance lost mid-period may have committed records it processed (they are
            # not processed again): then every task running on the others, no lag, and no
            # progress over three polls is the period's end
            last_done[:] = [*last_done[-2:], done]
            if (set(base_in) - set(snaps) and lag == 0 and len(last_done) == 3
                    and len(set(last_done)) == 1 and cluster.reported_assignment() is not None):
                return snaps
            return None

        after = wait_for(caught_up, 300, f"job {job_id}: the period's {produced} "
                         "flights processed", every_s=0.5, logs=cluster.home / "logs")
        drain_s = time.monotonic() - t0  # produce and process the slice: the makespan
    return after, {"produced": produced, "drain_s": round(drain_s, 3),
                   "lag": sampler.summary()}
