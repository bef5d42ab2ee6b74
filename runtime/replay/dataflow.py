"""A keyed dataflow compiled against a data set: operators, key groups and per-tuple streams.

What flows where does not depend on placement: a tuple's keys, windows and values follow from
the data alone. So a job is compiled once into `Stream`s, one row per tuple on that stream,
sorted by period, and each period of the replay is a slice of those arrays (vectorised numpy,
no per-tuple Python). Only routing (key grouping or a splitting policy, routing.py), which node a key group sits on, and
the state held per key group change at run time; the engine computes those.

Names: key group ``<operator>-kg<NNN>``; its key group among ``kgs_per_operator`` is Flink's
``murmur(hashCode(key)) % kgs_per_operator`` (hashing.py), so two operators keyed by the same
field have the same key group index for a key: their traffic is one-to-one, hence collocatable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

import numpy as np
import pandas as pd

from runtime.replay.hashing import key_groups

__all__ = [
    "Dataflow",
    "Layout",
    "Operator",
    "Stream",
    "WindowKind",
    "codes",
    "keygroup_name",
]

WindowKind = Literal["none", "tumbling", "round"]


def keygroup_name(operator: str, index: int) -> str:
    return f"{operator}-kg{index:03d}"


@dataclass(frozen=True)
class Operator:
    """One operator: its per-tuple cost, its state and windows, and what it emits at window end.

    `window`: "none" (stateless), "tumbling" (event-time windows of the dataflow's
    `window_s`), or "round" (one window per replay of the data set: "per year").
    `entry_bytes` is the size of one state entry (key, window, aggregates, map overhead).
    `top_k` > 0: at window end each key group sends its k largest sums to `emit_to`, each a
    small tuple of `emit_bytes`.
    `mergeable`: a splitting routing policy (PKG, PORC, ...) may spread a key over key groups;
    partial state merges at window end.
    """

    name: str
    proc_units: float
    window: WindowKind = "none"
    entry_bytes: int = 0
    mergeable: bool = False
    top_k: int = 0
    emit_to: str | None = None
    emit_bytes: int = 32  # one top-k candidate: a key id and its sum

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or not self.name.islower():
            raise ValueError(f"operator name must be a lower-case identifier, got {self.name!r}")
        if self.proc_units < 0 or self.entry_bytes < 0 or self.top_k < 0:
            raise ValueError(f"operator {self.name}: costs, sizes and k must be >= 0")
        if (self.top_k > 0) != (self.emit_to is not None):
            raise ValueError(f"operator {self.name}: top_k and emit_to go together")

    @property
    def stateful(self) -> bool:
        return self.window != "none"


@dataclass(frozen=True, eq=False)
class Stream:
    """Every tuple one edge of the dataflow carries over the whole data set, sorted by period.

    `key` partitions the tuple (a code into the destination's key table); `entry` is the state
    entry it updates there (usually the same key); `window` its window index within a replay
    round (-1 for a stateless destination); `value` what the destination sums (a delay).
    `src` None: the tuple comes from a source (outside the cluster). Otherwise `parent` is the
    stream that delivered the tuple to `src`, and `parent_row` the row there, so the sending
    key group is whichever key group processed that row (routing may differ per run).
    """

    name: str
    dst: str
    tuple_bytes: int
    period: np.ndarray
    key: np.ndarray
    entry: np.ndarray
    window: np.ndarray
    value: np.ndarray
    src: str | None = None
    parent: str | None = None
    parent_row: np.ndarray | None = None
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self) -> None:
        n = len(self.period)
        for name in ("key", "entry", "window", "value"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"stream {self.name}: column {name} has the wrong length")
        if n and np.any(np.diff(self.period) < 0):
            raise ValueError(f"stream {self.name}: rows must be sorted by period")
        if (self.src is None) != (self.parent is None) or (
            (self.parent is None) != (self.parent_row is None)
        ):
            raise ValueError(f"stream {self.name}: src, parent and parent_row go together")

    def with_offsets(self, periods: int) -> Stream:
        """A copy that knows where each period's rows start (row range of period p)."""
        offsets = np.searchsorted(self.period, np.arange(periods + 1), side="left")
        return Stream(**{**self.__dict__, "offsets": offsets.astype(np.int64)})

    def rows(self, period: int) -> slice:
        return slice(int(self.offsets[period]), int(self.offsets[period + 1]))


@dataclass(frozen=True, eq=False)
class Dataflow:
    """A compiled job: operators (topological order), their key tables, streams (parents first).

    `window_close[op]` gives, per tumbling window index, the period (within a round) at whose
    end the window closes; round windows close at the end of a round. `skipped` counts input
    rows dropped because a key or a value was missing, by reason.
    """

    name: str
    operators: tuple[Operator, ...]
    keys: Mapping[str, tuple[str, ...]]
    streams: tuple[Stream, ...]
    periods: int
    windows_per_round: int
    window_close: np.ndarray
    skipped: Mapping[str, int] = field(default_factory=dict)
    inputs_per_period: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self) -> None:
        names = [op.name for op in self.operators]
        if len(set(names)) != len(names):
            raise ValueError(f"dataflow {self.name}: operator names must be unique")
        seen_streams: set[str] = set()
        for s in self.streams:
            if s.dst not in names or (s.src is not None and s.src not in names):
                raise ValueError(f"stream {s.name}: unknown operator")
            if s.parent is not None and s.parent not in seen_streams:
                raise ValueError(f"stream {s.name}: parent {s.parent} must come first")
            seen_streams.add(s.name)
        for op in self.operators:
            if op.name not in self.keys:
                raise ValueError(f"dataflow {self.name}: operator {op.name} has no key table")
        object.__setattr__(self, "keys", MappingProxyType(dict(self.keys)))
        object.__setattr__(self, "skipped", MappingProxyType(dict(self.skipped)))
        object.__setattr__(
            self, "streams", tuple(s.with_offsets(self.periods) for s in self.streams)
        )

    def operator(self, name: str) -> Operator:
        for op in self.operators:
            if op.name == name:
                return op
        raise KeyError(name)


@dataclass(frozen=True, eq=False)
class Layout:
    """Key groups of a dataflow: global ids (operator-major), names, key -> key group tables."""

    kgs_per_operator: int
    names: tuple[str, ...]
    operator_names: tuple[str, ...]
    operator_of: np.ndarray
    offset: Mapping[str, int]
    primary: Mapping[str, np.ndarray]
    alternate: Mapping[str, np.ndarray]

    @classmethod
    def of(cls, flow: Dataflow, kgs_per_operator: int, seed: int) -> Layout:
        if kgs_per_operator < 1:
            raise ValueError(f"kgs_per_operator must be >= 1, got {kgs_per_operator}")
        names: list[str] = []
        offset: dict[str, int] = {}
        primary: dict[str, np.ndarray] = {}
        alternate: dict[str, np.ndarray] = {}
        for op in flow.operators:
            offset[op.name] = len(names)
            names += [keygroup_name(op.name, i) for i in range(kgs_per_operator)]
            primary[op.name] = key_groups(flow.keys[op.name], kgs_per_operator)
            alternate[op.name] = (
                key_groups(flow.keys[op.name], kgs_per_operator, seed=seed)
                if op.mergeable else primary[op.name]
            )
        ops = tuple(op.name for op in flow.operators)
        return cls(
            kgs_per_operator=kgs_per_operator,
            names=tuple(names),
            operator_names=ops,
            operator_of=np.repeat(np.arange(len(ops)), kgs_per_operator),
            offset=MappingProxyType(offset),
            primary=MappingProxyType(primary),
            alternate=MappingProxyType(alternate),
        )

    @property
    def size(self) -> int:
        return len(self.names)

    def operator_name(self, gid: int) -> str:
        return self.operator_names[int(self.operator_of[gid])]


def codes(values: pd.Series | Sequence[str], table: Sequence[str]) -> np.ndarray:
    """Codes of `values` in the sorted key `table` (-1 for a value not in it, or missing)."""
    cat = pd.Categorical(values, categories=list(table))
    return np.asarray(cat.codes, dtype=np.int64)
