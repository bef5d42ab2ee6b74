"""The cost model: what a period of traffic and a state migration cost, in CPU units.

Per key group and period (all counts are of that period)::

    units = proc_units(op) * processed            # the operator's own work per tuple
          + merge_units * merged                  # split keys: partial entries merged at window end
          + ser_per_byte * bytes sent to other nodes
          + deser_per_byte * bytes received from other nodes or from a source

A tuple between two key groups on the same node is handed over in memory: it costs neither
serialization nor deserialization (that is what collocation saves). Source tuples always arrive
over the network. Node units = the sum over its key groups + migration work on it. One factor
(`unit_ms`, calibrated by the engine) turns units into CPU milliseconds.

Direct state migration (paper §3) of a key group with S state bytes: the old node serializes S
bytes, the new node deserializes them (same per-byte costs as tuples, plus a fixed part), and the
key group pauses ``pause_fixed_s + S / migration_bytes_per_s`` seconds while its input buffers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CostModel", "MigrationCost", "Traffic", "keygroup_units", "node_units"]


@dataclass(frozen=True)
class CostModel:
    """Relative costs; defaults make a 100-byte tuple cost 1 unit to send and 1 to receive."""

    ser_units_per_byte: float = 0.01
    deser_units_per_byte: float = 0.01
    merge_units_per_entry: float = 2.0
    migration_units_fixed: float = 5.0
    pause_fixed_s: float = 0.05
    migration_bytes_per_s: float = 1_000_000.0

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"cost model: {name} must be a finite number >= 0, got {value!r}")
        if self.migration_bytes_per_s <= 0:
            raise ValueError("cost model: migration_bytes_per_s must be > 0")

    def migration(self, state_bytes: float) -> MigrationCost:
        """Units at the old node, units at the new node, and the pause of one moved key group."""
        return MigrationCost(
            src_units=self.migration_units_fixed / 2 + self.ser_units_per_byte * state_bytes,
            dst_units=self.migration_units_fixed / 2 + self.deser_units_per_byte * state_bytes,
            pause_s=self.pause_fixed_s + state_bytes / self.migration_bytes_per_s,
        )


@dataclass(frozen=True)
class MigrationCost:
    src_units: float
    dst_units: float
    pause_s: float


@dataclass(frozen=True, eq=False)
class Traffic:
    """One period's per-key-group counts (arrays indexed by global key-group id)."""

    processed: np.ndarray
    merged: np.ndarray
    tuples_in: np.ndarray
    tuples_out: np.ndarray
    remote_in_bytes: np.ndarray
    remote_out_bytes: np.ndarray

    @classmethod
    def zeros(cls, size: int) -> Traffic:
        return cls(*(np.zeros(size, dtype=np.int64) for _ in range(6)))


def keygroup_units(proc_units: np.ndarray, traffic: Traffic, model: CostModel) -> np.ndarray:
    """CPU units each key group used in the period (see the module docstring)."""
    return (
        proc_units * traffic.processed
        + model.merge_units_per_entry * traffic.merged
        + model.ser_units_per_byte * traffic.remote_out_bytes
        + model.deser_units_per_byte * traffic.remote_in_bytes
    )


def node_units(
    kg_units: np.ndarray, node_of: np.ndarray, n_nodes: int, extra: np.ndarray | None = None
) -> np.ndarray:
    """Units per node: its key groups' units plus `extra` (migration work), by node index."""
    total = np.bincount(node_of, weights=kg_units, minlength=n_nodes).astype(np.float64)
    return total if extra is None else total + extra
