"""The application's consumer lag while a period's slice is produced and processed.

Each instance reports `input_lag`: the sum over its input partitions of the consumer's
`records-lag` metric (log end offset − position, the records it has not read yet). Summed over the
instances it is the application's end-to-end input lag; `LagSampler` samples it from the
instances' snapshots on a thread for the whole period — from the first record produced until the
slice is processed — so the period's max and mean include the lag built up while producing.
A partition whose task is between instances (a restore, a rebalance) has no lag metric for that
while: the lag counts the records waiting at the instances that read them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

__all__ = ["LagSampler"]


@dataclass
class LagSampler:
    """`with LagSampler(cluster.stats): ...` samples the summed input lag every `every_s`."""

    stats: Callable[[], Mapping[str, Mapping[str, Any]]]
    every_s: float = 0.25
    samples: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def sample(self) -> None:
        snaps = self.stats()
        if snaps:
            self.samples.append(sum(float(s.get("input_lag", 0.0)) for s in snaps.values()))

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()

    def __enter__(self) -> LagSampler:
        self.sample()
        self._thread = threading.Thread(target=self._run, name="lag-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()

    def summary(self) -> dict[str, float]:
        """max and mean of the samples (records), and how many there were."""
        if not self.samples:
            return {"max": 0.0, "mean": 0.0, "samples": 0.0}
        return {"max": max(self.samples), "mean": sum(self.samples) / len(self.samples),
                "samples": float(len(self.samples))}
