"""ALBIC step 3, "Improve collocation" (paper §4.3.2, Algorithm 2 lines 24–37).

The pair (g_i, g_j) of toBeColGrps with the largest out(g_i, g_j) (ties at random, seeded)
becomes a constraint; n1, n2 are the nodes of g_i, g_j and l1, l2 their loads:
- Case 1, neither is in a partition: g_i, g_j together on the less loaded of n1, n2;
- Case 2, exactly one is in a partition: g_i, g_j (and that partition) on that partition's node;
- Case 3, both are in partitions: the two partitions together on the less loaded of n1, n2.
The merged unit is pinned to that node and moves nowhere else in this invocation.

Choices the paper leaves open (docs/algorithms.md): a candidate is passed over, for the next
best, when the pin is impossible or self-defeating: its node is marked for removal (B), the
forced migrations do not fit the allowance, or the merged unit would exceed maxPL (step 2 would
split it again next time, and the pair would oscillate). `many=True` (the `albic_many` variant)
keeps going down the list while the forced migrations of all accepted pins fit the allowance;
a pair joining a unit pinned earlier in the same invocation goes to that unit's node, and a pair
between two units pinned to different nodes is skipped.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from placement.common import fits
from placement.model import Budget, ClusterState

__all__ = ["Constraint", "Improvement", "improve_collocation"]

Pair = tuple[str, str]


@dataclass(frozen=True)
class Constraint:
    """The pair (g_i, g_j), the paper's case (1, 2 or 3), the merged unit and its node."""

    pair: Pair
    case: int
    unit: frozenset[str]
    node: str


@dataclass
class Improvement:
    """Step 3's result: the units (partitions, merged where pairs joined them) and their pins."""

    units: list[frozenset[str]]
    pins: dict[frozenset[str], str] = field(default_factory=dict)
    constraints: list[Constraint] = field(default_factory=list)
    forced_count: int = 0
    forced_cost: float = 0.0


def _candidates(pairs: Sequence[Pair], out: Mapping[Pair, float], rng: random.Random,
                rates: Sequence[float] | None = None) -> list[Pair]:
    """The pairs by out() descending; pairs with equal out() in a random (seeded) order.
    `rates`: out() of each pair in `pairs`' order, when the caller has them (step 1 does:
    `Scores.to_be_col_rates`), instead of a lookup per pair."""
    values = [out[p] for p in pairs] if rates is None or len(rates) != len(pairs) else rates
    keyed = [(-v, rng.random(), p) for v, p in zip(values, pairs, strict=True)]
    keyed.sort()
    return [p for _, _, p in keyed]


def improve_collocation(
    state: ClusterState,
    to_be_col_grps: Sequence[Pair],
    out: Mapping[Pair, float],
    partitions: Sequence[frozenset[str]],
    allowance: Budget,
    max_pl: float,
    rng: random.Random,
    *,
    many: bool = False,
    rates: Sequence[float] | None = None,
) -> Improvement:
    """Step 3 (one pair, or as many as `allowance` admits with `many=True`)."""
    where = dict(state.assignment)
    load = {k.id: k.load for k in state.keygroups}
    cost = {k.id: k.migration_cost for k in state.keygroups}
    cap = {n.id: n.capacity for n in state.nodes}
    in_b = {n.id for n in state.nodes if n.marked_for_removal}
    util = {n.id: 0.0 for n in state.nodes}
    for kg, node in where.items():
        util[node] += load[kg] / cap[node]
    units: dict[int, frozenset[str]] = dict(enumerate(partitions))
    unit_of = {kg: i for i, members in units.items() for kg in members}
    # each unit's load, kept as units merge: the maxPL check of a pair costs O(1), not a sum
    # over a unit that grows as `many` pins pairs onto it
    unit_load = {i: sum(load[k] for k in members) for i, members in units.items()}
    pins: dict[int, str] = {}
    result = Improvement(units=[])
    next_id = len(units)
    # every check below that passes a pair over is a bare `continue`: they run cheapest first
    for gi, gj in _candidates(to_be_col_grps, out, rng, rates):
        ui, uj = unit_of.get(gi), unit_of.get(gj)
        if ui is not None and ui == uj:
            continue
        pi = pins.get(ui) if ui is not None else None
        pj = pins.get(uj) if uj is not None else None
        if pi is not None and pj is not None and pi != pj:
            continue
        n1 = where[gi] if pi is None else pi
        n2 = where[gj] if pj is None else pj
        case = 1 + (ui is not None) + (uj is not None)
        if pi is not None:
            node = pi
        elif pj is not None:
            node = pj
        elif case == 2:
            node = n1 if ui is not None else n2
        else:  # the less utilised of n1, n2 not in B
            first, second = (n1, n2) if (util[n1], n1) <= (util[n2], n2) else (n2, n1)
            node = second if first in in_b and second != first else first
        if node in in_b:
            continue
        weight = ((unit_load[ui] if ui is not None else load[gi])
                  + (unit_load[uj] if uj is not None else load[gj]))
        if max_pl > 0 and weight > max_pl:
            continue
        mem_i = units[ui] if ui is not None else frozenset({gi})
        mem_j = units[uj] if uj is not None else frozenset({gj})
        unit = mem_i | mem_j
        movers = [k for k in unit if where[k] != node]
        count = result.forced_count + len(movers)
        spent = result.forced_cost + sum(cost[k] for k in movers)
        if not fits(allowance, count, spent):
            continue
        result.forced_count, result.forced_cost = count, spent
        for k in movers:
            util[where[k]] -= load[k] / cap[where[k]]
            util[node] += load[k] / cap[node]
            where[k] = node
        for u in (ui, uj):
            if u is not None:
                units.pop(u)
                pins.pop(u, None)
        for u in (ui, uj):
            if u is not None:
                unit_load.pop(u)
        units[next_id] = unit
        unit_load[next_id] = weight
        pins[next_id] = node
        for k in unit:
            unit_of[k] = next_id
        next_id += 1
        result.constraints.append(Constraint((gi, gj), case, unit, node))
        if not many:
            break
    result.units = [units[i] for i in sorted(units)]
    result.pins = {units[i]: node for i, node in pins.items()}
    return result
