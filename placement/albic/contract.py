"""The constrained MILP of ALBIC step 4, built by contraction: no change to the MILP itself.

Each unit (a partition, or a pair merged by step 3) becomes one super key group of the MILP:
load = Σ gLoad_k (and Σ of every resource of a multi-dimensional load), state = Σ |σ_k|,
current node = the node its members share. The MILP cannot split what it sees as one key group,
so every unit moves as one. A pinned unit starts on its pin (its forced migrations are applied
beforehand and charged to the budget) and is made immovable by giving it a migration cost above
the budget (the MILP creates no variable for such a key group, milp/core.py "exact reductions").

Budget translation (exact unless both bounds are set):
- cost budget only: unit cost Σ mc_k, maxMigrCost reduced by the forced cost;
- count budget only: a unit of m key groups costs m, and the count becomes that cost's cap
  (a unit's move is m migrations);
- both: costs Σ mc_k and the count on units, which undercounts a multi-key-group unit; the
  expanded plan is checked, and while it exceeds the count the multi-key-group units it moved
  are frozen and the MILP re-solved (after `MAX_TIGHTEN` rounds every multi-key-group unit is
  frozen, which is exact);
- none: unbounded, with a cost cap above every movable unit's cost only to hold the pins.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from placement.common import MIN_SOLVE_S, fits
from placement.model import Budget, ClusterState, KeyGroup, Plan

__all__ = ["Constrained", "solve_constrained"]

UNIT_PREFIX = "albic-unit#"
MAX_TIGHTEN = 3


@dataclass(frozen=True)
class Constrained:
    """The expanded assignment and the contracted MILP plan it came from."""

    assignment: dict[str, str]
    milp: Plan
    units: int


def _unit_ids(state: ClusterState, n: int) -> list[str]:
    taken = {k.id for k in state.keygroups}
    prefix = UNIT_PREFIX
    while any(k.startswith(prefix) for k in taken):
        prefix += "#"
    return [f"{prefix}{i}" for i in range(n)]


def _contract(
    state: ClusterState,
    units: Sequence[frozenset[str]],
    pins: Mapping[frozenset[str], str],
    *,
    cost_of: Mapping[str, float],
    cap: float | None,
    frozen: set[frozenset[str]] | frozenset[frozenset[str]],
) -> tuple[ClusterState, dict[str, frozenset[str]], float | None]:
    """The contracted state, unit id -> members, and the cost cap (set to hold pins)."""
    by_id = {k.id: k for k in state.keygroups}
    in_unit = {k for u in units for k in u}
    ids = _unit_ids(state, len(units))
    movable = [cost_of[k.id] for k in state.keygroups if k.id not in in_unit]
    movable += [sum(cost_of[k] for k in u) for u in units if u not in pins]
    if cap is None and pins:
        cap = sum(movable) + 1.0
    frozen_cost = (cap or 0.0) + 1.0
    kgs: list[KeyGroup] = []
    assignment: dict[str, str] = {}
    for k in state.keygroups:
        if k.id not in in_unit:
            kgs.append(KeyGroup(k.id, k.operator, k.load, k.state_bytes, cost_of[k.id],
                                dict(k.loads)))
            assignment[k.id] = state.assignment[k.id]
    members: dict[str, frozenset[str]] = {}
    for uid, unit in zip(ids, units, strict=True):
        parts = [by_id[k] for k in sorted(unit)]
        loads: dict[str, float] = {}
        for p in parts:
            for res, v in p.loads.items():
                loads[res] = loads.get(res, 0.0) + v
        if unit in pins:
            node, mc = pins[unit], frozen_cost
        else:
            homes = {state.assignment[k] for k in unit}
            if len(homes) != 1:
                raise RuntimeError(f"albic: unpinned unit {sorted(unit)[:3]}… spans {homes}")
            node = homes.pop()
            mc = frozen_cost if unit in frozen else sum(cost_of[k] for k in unit)
        kgs.append(KeyGroup(uid, "albic-unit", sum(p.load for p in parts),
                            sum(p.state_bytes for p in parts), mc, loads))
        assignment[uid] = node
        members[uid] = unit
    return ClusterState(state.nodes, tuple(kgs), assignment), members, cap


def _expand(milp: Plan, members: Mapping[str, frozenset[str]]) -> dict[str, str]:
    real: dict[str, str] = {}
    for kg, node in milp.assignment.items():
        for k in members.get(kg, (kg,)):
            real[k] = node
    return real


def solve_constrained(
    state: ClusterState,
    budget: Budget,
    units: Sequence[frozenset[str]],
    pins: Mapping[frozenset[str], str],
    forced: tuple[int, float],
    *,
    time_limit_s: float,
    milp_params: Mapping[str, Any] | None = None,
) -> Constrained:
    """Solve the MILP with `units` indivisible and `pins` fixed; the forced moves are `forced`
    = (count, cost) and must already fit `budget` (step 3 checks this)."""
    from placement.registry import run_inner  # the registry imports ALBIC to register it

    count, cost = forced
    if not fits(budget, count, cost):
        raise RuntimeError("albic: the pins' forced migrations exceed the budget")
    rem_n = None if budget.max_migrations is None else budget.max_migrations - count
    rem_c = (None if budget.max_migration_cost is None
             else max(0.0, budget.max_migration_cost - cost))
    mc = {k.id: k.migration_cost for k in state.keygroups}
    size = dict.fromkeys(mc, 1.0)
    cost_of: dict[str, float] = mc
    cap: float | None = rem_c
    count_cap: int | None = rem_n
    if rem_n is not None and rem_c is None:
        cost_of, cap, count_cap = size, float(rem_n), None
    deadline = time.perf_counter() + time_limit_s
    frozen: set[frozenset[str]] = set()
    multi = [u for u in units if u not in pins and len(u) > 1]
    for round_ in range(MAX_TIGHTEN + 2):
        small, members, cap_used = _contract(state, units, pins, cost_of=cost_of, cap=cap,
                                             frozen=frozen)
        plan = run_inner("milp", small,
                         Budget(max_migration_cost=cap_used, max_migrations=count_cap),
                         {**(milp_params or {}),
                          "time_limit_s": max(MIN_SOLVE_S, deadline - time.perf_counter())})
        real = _expand(plan, members)
        for unit, node in pins.items():  # the MILP must not move a unit it cannot afford
            if any(real[k] != node for k in unit):
                raise RuntimeError(f"albic: the MILP moved a pinned unit off {node!r}")
        moved = [k for k in real if real[k] != state.assignment[k]]
        if fits(budget, len(moved), sum(mc[k] for k in moved)):
            return Constrained(real, plan, len(units))
        # only with both bounds: a multi-key-group unit counted once; freeze what moved
        moved_units = {u for u in multi if real[min(u)] != state.assignment[min(u)]}
        if count_cap is None or not moved_units:  # cannot happen: the translation is exact
            break
        frozen |= moved_units if round_ < MAX_TIGHTEN else set(multi)
    raise RuntimeError("albic: the constrained MILP's plan does not fit the budget")
