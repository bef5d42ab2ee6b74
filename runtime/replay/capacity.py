"""Heterogeneous replay nodes: a capacity weight per node, and capacity changes mid-run.

A replay job declares `capacities` (one weight per node, node-00 first; 1.0 = the reference
node) and `capacity_changes` (from job period n on, the nodes have new weights: Nasir et al.
Fig. 12 changes capacities twice during a run). The engine reports each period's capacities in
its node samples, so the measured utilisation (cpu_ms over capacity × period) follows them;
the CPU unit is calibrated once, on the first period's capacities.

Config form (config/jobs.toml, a replay `source` table):
``capacities = [5, 5, 5, 1, 1, 1, 1, 1, 1, 1]`` and
``capacity_changes = [{ period = 12, capacities = [1, 1, 1, 5, 5, 5, 1, 1, 1, 1] }]``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["CapacityChange", "capacity_at", "check_capacities", "check_changes",
           "rotating_changes", "strong_nodes"]

#: (first job period, capacity weight per node)
CapacityChange = tuple[int, tuple[float, ...]]


def check_capacities(value: object, nodes: int, where: str) -> tuple[float, ...]:
    """Empty (every node 1.0) or one finite weight > 0 per node."""
    if not isinstance(value, list | tuple):
        raise ValueError(f"{where} must be a list of capacity weights, one per node, got "
                         f"{value!r}")
    if not value:
        return ()
    if len(value) != nodes:
        raise ValueError(f"{where} must give one capacity weight per node ({nodes}), got "
                         f"{len(value)}")
    for i, c in enumerate(value):
        if isinstance(c, bool) or not isinstance(c, int | float) or not (
                math.isfinite(c) and 0 < c <= 1000):
            raise ValueError(f"{where}: node-{i:02d}'s capacity must be a number in (0, 1000] "
                             f"(1.0 = the reference node), got {c!r}")
    return tuple(float(c) for c in value)


def check_changes(value: object, nodes: int, periods: int, where: str
                  ) -> tuple[CapacityChange, ...]:
    """Changes as tables {period, capacities} (or (period, capacities) pairs), strictly
    increasing periods in [2, the replayed periods × 1000]."""
    if not isinstance(value, list | tuple):
        raise ValueError(f"{where} must be a list of {{ period = n, capacities = [...] }} "
                         f"tables, got {value!r}")
    out: list[CapacityChange] = []
    for i, change in enumerate(value):
        at = f"{where}[{i}]"
        if isinstance(change, Mapping):
            extra = sorted(set(change) - {"period", "capacities"})
            if extra or "period" not in change or "capacities" not in change:
                raise ValueError(f"{at} must be a table with exactly `period` and "
                                 f"`capacities`, got {dict(change)!r}")
            period, caps = change["period"], change["capacities"]
        elif isinstance(change, list | tuple) and len(change) == 2:
            period, caps = change
        else:
            raise ValueError(f"{at} must be {{ period = n, capacities = [...] }}, got "
                             f"{change!r}")
        if type(period) is not int or not 2 <= period <= periods * 1000:
            raise ValueError(f"{at}.period must be a job period from 2 on (the first period "
                             f"runs on `capacities`), got {period!r}")
        if out and period <= out[-1][0]:
            raise ValueError(f"{at}.period must come after the previous change's "
                             f"({out[-1][0]}), got {period}")
        weights = check_capacities(caps, nodes, f"{at}.capacities")
        if not weights:
            raise ValueError(f"{at}.capacities must give one weight per node ({nodes})")
        out.append((period, weights))
    return tuple(out)


def capacity_at(names: Sequence[str], base: tuple[float, ...],
                changes: tuple[CapacityChange, ...], period: int) -> dict[str, float]:
    """The capacity weight of each named node in job period `period` (1-based)."""
    weights = base
    for first, caps in changes:
        if first <= period:
            weights = caps
    if not weights:
        return {n: 1.0 for n in names}
    return dict(zip(names, weights, strict=True))


def strong_nodes(nodes: int, strong: int, factor: float, first: int = 0) -> tuple[float, ...]:
    """`strong` consecutive nodes from `first` (wrapping) `factor` times the others (Fig. 8:
    y = 3 of n = 10 nodes z = 5x stronger)."""
    if not 0 <= strong <= nodes:
        raise ValueError(f"strong must be in [0, {nodes}], got {strong}")
    picked = {(first + i) % nodes for i in range(strong)}
    return tuple(float(factor) if i in picked else 1.0 for i in range(nodes))


def rotating_changes(nodes: int, strong: int, factor: float, at: Sequence[int]
                     ) -> tuple[CapacityChange, ...]:
    """Fig. 12's changes (the paper leaves the new capacities open): at each period of `at`
    the strong set moves on by `strong` nodes, so the capacity sum stays the same."""
    return tuple((period, strong_nodes(nodes, strong, factor, (k + 1) * strong))
                 for k, period in enumerate(at))
