"""A job's topology constraints: node labels and the hard rules a plan must keep.

Operators of Cruise Control (rack-aware goals), Kafka Streams (rack-aware assignment) and Helix
(fault-zone spread) keep units apart by the failure domains of their nodes. Here a node carries
labels (`zone`, `rack`, `host`, any key) and a job declares, in `[jobs.<id>.constraints]`:

- `node_labels`: node id -> {label: value}; a node not listed has no labels;
- `spread`: the units of a group (an `operator`'s units, or listed `units`) across at least
  `min_domains` values of `label`, and/or at most `max_per_domain` of them per value;
- `anti_affinity`: named units, no two on one node;
- `pin`: named units only on nodes whose labels include every pair of `labels`;
- `max_units_per_node`: no node holds more units;
- `exclude_nodes`: nodes that receive no unit (their own units may stay or leave).

The kinds are named by `KINDS`; the strategy table (schemas/strategies.py) says which kinds each
strategy holds, and the config loader refuses a job whose strategy cannot hold one it declares.
`parse_constraints` checks what the file alone can show (unknown labels, a spread no labelled
node set can meet); placement/constraints.py checks a plan against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KINDS", "AntiAffinity", "Constraints", "Pin", "Spread", "parse_constraints"]

#: the largest count a constraint may give (min_domains, max_per_domain, max_units_per_node)
MAX_COUNT = 1_000_000

#: every kind of constraint, as the strategy table names them
KINDS = ("spread", "anti_affinity", "pin", "max_units_per_node", "exclude_nodes")


@dataclass(frozen=True)
class Spread:
    """A group (`operator`'s units, or `units`) over the values of node label `label`."""

    label: str
    operator: str | None = None
    units: tuple[str, ...] = ()
    min_domains: int | None = None
    max_per_domain: int | None = None

    @property
    def name(self) -> str:
        group = f"operator {self.operator!r}" if self.operator else f"units {list(self.units)}"
        rules = [f"at least {self.min_domains} {self.label}s" if self.min_domains else "",
                 f"at most {self.max_per_domain} per {self.label}" if self.max_per_domain
                 else ""]
        return f"spread of {group}: {' and '.join(r for r in rules if r)}"


@dataclass(frozen=True)
class AntiAffinity:
    """No two of `units` on one node."""

    units: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"anti-affinity of {list(self.units)}"


@dataclass(frozen=True)
class Pin:
    """`units` only on nodes whose labels include every pair of `labels`."""

    units: tuple[str, ...]
    labels: Mapping[str, str]

    @property
    def name(self) -> str:
        return f"pin of {list(self.units)} to {dict(self.labels)}"


@dataclass(frozen=True)
class Constraints:
    """A job's node labels and hard constraints (module docstring); empty = none."""

    node_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    spread: tuple[Spread, ...] = ()
    anti_affinity: tuple[AntiAffinity, ...] = ()
    pin: tuple[Pin, ...] = ()
    max_units_per_node: int | None = None
    exclude_nodes: frozenset[str] = frozenset()

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of constraint this set declares (in `KINDS` order)."""
        present = {"spread": bool(self.spread), "anti_affinity": bool(self.anti_affinity),
                   "pin": bool(self.pin),
                   "max_units_per_node": self.max_units_per_node is not None,
                   "exclude_nodes": bool(self.exclude_nodes)}
        return tuple(k for k in KINDS if present[k])

    def __bool__(self) -> bool:
        return bool(self.kinds)


_KEYS = {"node_labels", *KINDS}


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    if (not isinstance(value, list | tuple) or not value
            or not all(isinstance(v, str) and v for v in value)):
        raise ValueError(f"{where}: must be a non-empty list of unit or node ids, got {value!r}")
    if len(set(value)) != len(value):
        raise ValueError(f"{where}: lists an id twice: {list(value)!r}")
    return tuple(value)


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{where}: must be a whole number >= 1, got {value!r}")
    if value > MAX_COUNT:  # the MILP's rows take it as a float: 400 digits have none
        raise ValueError(f"{where}: must be at most {MAX_COUNT} (more units than any job has), "
                         f"got a number of {len(str(value))} digits")
    return value


def _table(value: Any, where: str, known: set[str]) -> Mapping[str, Any]:
    at = f"{where}: " if where else ""
    if not isinstance(value, Mapping):
        raise ValueError(f"{at}must be a table, got {value!r}")
    unknown = sorted(set(value) - known)
    if unknown:
        raise ValueError(f"{at}unknown field(s) {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(known))}")
    return value


def _labels(raw: Any) -> dict[str, dict[str, str]]:
    if not isinstance(raw, Mapping):
        raise ValueError(f"node_labels: must be a table of node -> {{label = value}}, got {raw!r}")
    out: dict[str, dict[str, str]] = {}
    for node, labels in raw.items():
        if not isinstance(labels, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) and v for k, v in labels.items()):
            raise ValueError(f"node_labels.{node}: must be a table of label = \"value\", got "
                             f"{labels!r}")
        out[str(node)] = dict(labels)
    return out


def _list_of_tables(raw: Any, where: str) -> list[Mapping[str, Any]]:
    if not isinstance(raw, list | tuple) or not all(isinstance(t, Mapping) for t in raw):
        raise ValueError(f"{where}: must be an array of tables ([[...{where}]]), got {raw!r}")
    return list(raw)


def _spread(i: int, raw: Mapping[str, Any], domains: Mapping[str, set[str]]) -> Spread:
    where = f"spread[{i}]"
    _table(raw, where, {"label", "operator", "units", "min_domains", "max_per_domain"})
    label = raw.get("label")
    if not isinstance(label, str) or not label:
        raise ValueError(f"{where}.label: must name a node label (e.g. \"zone\"), got {label!r}")
    if label not in domains:
        raise ValueError(f"{where}.label: unknown label {label!r}: no node in node_labels has "
                         f"it (labels: {', '.join(sorted(domains)) or 'none'})")
    if ("operator" in raw) == ("units" in raw):
        raise ValueError(f"{where}: give the group as exactly one of `operator` or `units`")
    operator = raw.get("operator")
    if operator is not None and (not isinstance(operator, str) or not operator):
        raise ValueError(f"{where}.operator: must be an operator name, got {operator!r}")
    units = _str_list(raw["units"], f"{where}.units") if "units" in raw else ()
    low = _int(raw["min_domains"], f"{where}.min_domains") if "min_domains" in raw else None
    high = (_int(raw["max_per_domain"], f"{where}.max_per_domain")
            if "max_per_domain" in raw else None)
    if low is None and high is None:
        raise ValueError(f"{where}: give min_domains, max_per_domain or both")
    count = len(domains[label])
    if low is not None and low > count:
        raise ValueError(f"{where}.min_domains: unsatisfiable: {low} {label}s asked, the "
                         f"labelled nodes have {count} ({', '.join(sorted(domains[label]))})")
    if low is not None and units and low > len(units):
        raise ValueError(f"{where}.min_domains: unsatisfiable: {low} {label}s for "
                         f"{len(units)} unit(s)")
    if high is not None and units and high * count < len(units):
        raise ValueError(f"{where}.max_per_domain: unsatisfiable: {len(units)} units, at most "
                         f"{high} in each of {count} {label}s")
    return Spread(label, operator, units, low, high)


def _pin(i: int, raw: Mapping[str, Any], labels: Mapping[str, Mapping[str, str]]) -> Pin:
    where = f"pin[{i}]"
    _table(raw, where, {"units", "labels"})
    units = _str_list(raw.get("units"), f"{where}.units")
    want = raw.get("labels")
    if not isinstance(want, Mapping) or not want or not all(
            isinstance(v, str) for v in want.values()):
        raise ValueError(f"{where}.labels: must be a non-empty table of label = \"value\", got "
                         f"{want!r}")
    for key, value in want.items():
        seen = {ls[key] for ls in labels.values() if key in ls}
        if not seen:
            raise ValueError(f"{where}.labels: unknown label {key!r}: no node in node_labels has "
                             "it")
        if value not in seen:
            raise ValueError(f"{where}.labels: no node has {key} = {value!r} (known: "
                             f"{', '.join(sorted(seen))})")
    if not any(all(ls.get(k) == v for k, v in want.items()) for ls in labels.values()):
        raise ValueError(f"{where}.labels: unsatisfiable: no node has all of {dict(want)}")
    return Pin(units, dict(want))


def parse_constraints(raw: Any) -> Constraints:
    """`[jobs.<id>.constraints]` as `Constraints`; ValueError naming the sub-field and the rule
    (what is unknown, what cannot be met) otherwise."""
    if isinstance(raw, Constraints):
        return raw
    table = _table(raw, "", _KEYS)
    labels = _labels(table.get("node_labels", {}))
    domains: dict[str, set[str]] = {}
    for ls in labels.values():
        for key, value in ls.items():
            domains.setdefault(key, set()).add(value)
    spread = tuple(_spread(i, t, domains)
                   for i, t in enumerate(_list_of_tables(table.get("spread", []), "spread")))
    anti = tuple(
        AntiAffinity(_str_list(_table(t, f"anti_affinity[{i}]", {"units"}).get("units"),
                               f"anti_affinity[{i}].units"))
        for i, t in enumerate(_list_of_tables(table.get("anti_affinity", []), "anti_affinity")))
    for i, a in enumerate(anti):
        if len(a.units) < 2:
            raise ValueError(f"anti_affinity[{i}].units: name at least two units")
    pins = tuple(_pin(i, t, labels)
                 for i, t in enumerate(_list_of_tables(table.get("pin", []), "pin")))
    cap = table.get("max_units_per_node")
    cap = None if cap is None else _int(cap, "max_units_per_node")
    excluded = frozenset(_str_list(table["exclude_nodes"], "exclude_nodes")
                         if "exclude_nodes" in table else ())
    return Constraints(labels, spread, anti, pins, cap, excluded)
