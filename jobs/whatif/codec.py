"""The what-if input as JSON: a data format read back by constructing known types only.

The shadows' input (jobs/whatif/stage.py `WhatIfInput`: the `ClusterState` with its facets, the budget,
the plan in force) is stored as an MLflow artifact and read back later, possibly by another
process. A pickle would run whatever code a tampered artifact names; this codec writes plain,
strict JSON and, reading it, builds only the frozen dataclasses and enums listed in `_TYPES`
through their constructors, so every value passes the same `__post_init__` checks as a state the
pipeline builds itself. Anything else in the document (an unknown type name, a field a type does
not have, a non-JSON value) is a `ValueError`.

Encoding: a dataclass is ``{"$type": name, "fields": {...}}`` (its init fields), an enum
``{"$enum": name, "value": v}``, a tuple ``{"$tuple": [...]}``, a frozenset ``{"$set": [...]}``
(sorted, so the bytes are stable), a mapping ``{"$map": [[key, value], ...]}`` (keys may be any
encodable value), the communication columns ``{"$comm": {"units": [...], "src", "dst", "rate",
"dropped": base64 of little-endian int64/float64}}`` (placement/comm.py), a non-finite float
``{"$float": "inf" | "-inf" | "nan"}``. Two column forms keep a job of 10^4-10^5 units fast to
write and read: a tuple of key groups is ``{"$keygroups": {"id": [...], "operator": [...],
"load": [...], "state_bytes": [...], "migration_cost": [...], "loads": [null | mapping, ...]}}``
(each read back through `KeyGroup`'s constructor), a mapping of strings to strings (an
assignment) ``{"$strmap": [[keys...], [values...]]}``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from enum import Enum
from typing import Any

from placement.comm import CommEdges
from placement.facets import Link, Network, Site, Source, Stream
from placement.model import (
    Budget,
    ClusterState,
    Edge,
    KeyGroup,
    Move,
    Node,
    Phase,
    Plan,
    PlanMetrics,
    ScalingActions,
    SolverStatus,
)
from schemas.constraints import AntiAffinity, Constraints, Pin, Spread

__all__ = ["decode", "encode"]

_TYPES: dict[str, type] = {cls.__name__: cls for cls in (
    AntiAffinity, Budget, ClusterState, Constraints, Edge, KeyGroup, Link, Move, Network, Node,
    Phase, Pin, Plan, PlanMetrics, ScalingActions, Site, Source, Spread, Stream)}
_ENUMS: dict[str, type[Enum]] = {SolverStatus.__name__: SolverStatus}
_MAX_DEPTH = 64  # the deepest legitimate input is ~8 levels (params may nest a little)


def encode(value: Any, extra: Mapping[str, type] | None = None) -> str:
    """`value` as strict JSON; `extra` names further dataclasses that may appear (by class name)."""
    types = {**_TYPES, **(extra or {})}
    return json.dumps(_enc(value, types), allow_nan=False, separators=(",", ":"),
                      ensure_ascii=False)


def decode(text: str | bytes, extra: Mapping[str, type] | None = None) -> Any:
    """The value `encode` wrote; `ValueError` for anything but a document of known types."""
    types = {**_TYPES, **(extra or {})}
    try:
        return _dec(json.loads(text), types, 0)
    except RecursionError:
        raise ValueError("what-if input: nested too deeply") from None
    except TypeError as exc:  # a constructor called with a field it does not have
        raise ValueError(f"what-if input: {exc}") from None


def _enc(value: Any, types: Mapping[str, type]) -> Any:
    if isinstance(value, Enum):
        name = type(value).__name__
        if _ENUMS.get(name) is not type(value):
            raise ValueError(f"what-if input: enum {name} has no codec")
        return {"$enum": name, "value": value.value}
    if isinstance(value, CommEdges):  # out() as columns: lists, not an object per edge
        return {"$comm": {"units": list(value.units), "src": _b64(value.src, "<i8"),
                          "dst": _b64(value.dst, "<i8"), "rate": _b64(value.rate, "<f8"),
                          "dropped": _b64(value.dropped, "<f8")}}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if types.get(name) is not type(value):
            raise ValueError(f"what-if input: type {name} has no codec")
        return {"$type": name, "fields": {f.name: _enc(getattr(value, f.name), types)
                                          for f in dataclasses.fields(value) if f.init}}
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, tuple):
        if value and all(type(v) is KeyGroup for v in value) and types.get(
                KeyGroup.__name__) is KeyGroup:
            return {"$keygroups": _keygroup_columns(value, types)}
        return {"$tuple": [_enc(v, types) for v in value]}
    if isinstance(value, frozenset | set):
        return {"$set": sorted((_enc(v, types) for v in value), key=json.dumps)}
    if isinstance(value, Mapping):
        if value and all(type(k) is str and type(v) is str for k, v in value.items()):
            return {"$strmap": [list(value), list(value.values())]}
        return {"$map": [[_enc(k, types), _enc(v, types)] for k, v in value.items()]}
    if isinstance(value, list):
        return [_enc(v, types) for v in value]
    raise ValueError(f"what-if input: a {type(value).__name__} has no codec")


_KG_COLUMNS = ("id", "operator", "load", "state_bytes", "migration_cost", "loads")


def _keygroup_columns(kgs: tuple[KeyGroup, ...], types: Mapping[str, type]) -> dict[str, Any]:
    """Key groups as columns (a list per field; `loads` null where a key group has none)."""
    floats = {name: [_enc(float(getattr(k, name)), types) for k in kgs]
              for name in ("load", "state_bytes", "migration_cost")}
    return {"id": [k.id for k in kgs], "operator": [k.operator for k in kgs], **floats,
            "loads": [_enc(k.loads, types) if k.loads else None for k in kgs]}


def _keygroups(body: Any, types: Mapping[str, type], depth: int) -> tuple[KeyGroup, ...]:
    """Key groups from their columns, each through `KeyGroup`'s constructor (its checks)."""
    if not isinstance(body, dict) or set(body) != set(_KG_COLUMNS) or not all(
            isinstance(body[c], list) for c in _KG_COLUMNS):
        raise ValueError(f"what-if input: $keygroups must hold the columns {list(_KG_COLUMNS)}")
    if len({len(body[c]) for c in _KG_COLUMNS}) != 1:
        raise ValueError("what-if input: $keygroups columns differ in length")
    loads = [{} if v is None else _dec(v, types, depth + 1) for v in body["loads"]]
    if not all(isinstance(v, dict) for v in loads):
        raise ValueError("what-if input: a key group's loads must be a mapping")
    floats = [[_dec(v, types, depth + 1) for v in body[c]]
              for c in ("load", "state_bytes", "migration_cost")]
    try:
        return tuple(KeyGroup(i, o, a, b, c, d) for i, o, a, b, c, d in zip(
            body["id"], body["operator"], *floats, loads, strict=True))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"what-if input: key group: {exc}") from None


def _strmap(body: Any) -> dict[str, str]:
    """A mapping of strings to strings from its key and value lists."""
    if not (isinstance(body, list) and len(body) == 2 and all(isinstance(c, list) for c in body)
            and len(body[0]) == len(body[1])
            and all(isinstance(v, str) for c in body for v in c)):
        raise ValueError("what-if input: $strmap must hold two lists of strings of one length")
    return dict(zip(body[0], body[1], strict=True))


def _b64(array: Any, dtype: str) -> str:
    """A numpy column as base64 of its little-endian bytes: strict JSON, no float per value."""
    import base64

    import numpy as np

    return base64.b64encode(np.ascontiguousarray(array, dtype=dtype).tobytes()).decode("ascii")


def _column(text: Any, dtype: str) -> Any:
    import base64
    import binascii

    import numpy as np

    if not isinstance(text, str):
        raise ValueError("what-if input: a $comm column must be a base64 string")
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"what-if input: a $comm column is not base64 ({exc})") from None
    if len(raw) % 8:
        raise ValueError("what-if input: a $comm column is not a whole number of 8-byte values")
    return np.frombuffer(raw, dtype=dtype).astype(dtype[1:])


def _comm(body: dict[str, Any]) -> CommEdges:
    """CommEdges from its columns, through its constructor's checks."""
    if set(body) != {"units", "src", "dst", "rate", "dropped"} or not isinstance(
            body["units"], list) or not all(isinstance(u, str) for u in body["units"]):
        raise ValueError("what-if input: $comm must hold units (a list of ids) and the src, dst, "
                         "rate and dropped columns")
    columns = (_column(body["src"], "<i8"), _column(body["dst"], "<i8"),
               _column(body["rate"], "<f8"), _column(body["dropped"], "<f8"))
    try:
        return CommEdges(tuple(body["units"]), *columns)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"what-if input: communication columns: {exc}") from None


def _dec(value: Any, types: Mapping[str, type], depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError("what-if input: nested too deeply")
    if isinstance(value, list):
        return [_dec(v, types, depth + 1) for v in value]
    if not isinstance(value, dict):
        return value  # str, int, float, bool, None: json.loads makes nothing else
    tag = next(iter(value), None)
    body = value.get(tag) if tag is not None else None

    def each(items: Any) -> list[Any]:
        if not isinstance(items, list):
            raise ValueError(f"what-if input: {tag} must hold a list")
        return [_dec(v, types, depth + 1) for v in items]

    if tag == "$type" and set(value) == {"$type", "fields"}:
        cls = types.get(body) if isinstance(body, str) else None
        if cls is None or not isinstance(value["fields"], dict):
            raise ValueError(f"what-if input: unknown type {str(body)[:60]!r}")
        return cls(**{str(k): _dec(v, types, depth + 1) for k, v in value["fields"].items()})
    if tag == "$comm" and set(value) == {"$comm"} and isinstance(body, dict):
        return _comm(body)
    if tag == "$keygroups" and set(value) == {"$keygroups"}:
        return _keygroups(body, types, depth)
    if tag == "$strmap" and set(value) == {"$strmap"}:
        return _strmap(body)
    if tag == "$enum" and set(value) == {"$enum", "value"}:
        enum = _ENUMS.get(body) if isinstance(body, str) else None
        if enum is None:
            raise ValueError(f"what-if input: unknown enum {str(body)[:60]!r}")
        return enum(value["value"])
    if len(value) == 1 and tag == "$tuple":
        return tuple(each(body))
    if len(value) == 1 and tag == "$set":
        return frozenset(each(body))
    if len(value) == 1 and tag == "$map":
        pairs = each(body)
        if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise ValueError("what-if input: $map must hold [key, value] pairs")
        return {_hashable(k): v for k, v in pairs}
    if len(value) == 1 and tag == "$float" and body in ("inf", "-inf", "nan"):
        return float(body)
    raise ValueError(f"what-if input: unknown object with keys {sorted(value)[:5]}")


def _hashable(key: Any) -> Any:
    if isinstance(key, list):
        raise ValueError("what-if input: a mapping key must not be a list")
    return key
