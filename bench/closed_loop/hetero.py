"""The closed loop on a heterogeneous replay cluster: some nodes stronger, some overloaded.

`reconf bench closed-loop --heterogeneous`: every `STRONG_EVERY`-th node of the replay cluster
(node-00, node-04, …) has capacity weight `STRONG_CAPACITY` (2.0), the others 1.0; the engine's
CPU unit is calibrated on that capacity so that the initial allocation uses `LOAD_PCT` % of the
cluster. The initial allocation gives every node the same key groups, so the reference nodes
start at LOAD_PCT × 1.25 % (100 % at the default 80) and real data pushes some above it.

Per period and strategy the rows add:
- `max_util_pct`: the most utilised node as the runtime measured it (node_stats);
- `planned_max_util_pct`: the most utilised node of the plan, on the statistics it planned from;
- `relievable_by`: where that plan leaves a node above 100 %, the first of greedy, Flux and
  the MILP (same time limit) whose plan, within the same budget, has no node above 100 %; ''
  when none does (the overload could not be relieved this period, as far as they can tell).
A period with `relievable_by` set is a period in which the strategy left an overload that a
plan within the budget could have relieved.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from placement.model import Budget, ClusterState, Plan
    from runtime.replay.source import ReplayJob

__all__ = ["LOAD_PCT", "STRONG_CAPACITY", "STRONG_EVERY", "make_heterogeneous", "overload",
           "summary_lines"]

STRONG_EVERY = 4
STRONG_CAPACITY = 2.0
LOAD_PCT = 80.0
WITNESSES = ("greedy", "flux", "milp")


def make_heterogeneous(runtime: ReplayJob) -> dict[str, float]:
    """Give every STRONG_EVERY-th node STRONG_CAPACITY and re-calibrate the CPU unit on the
    new total capacity (the engine must not have run a period yet); the capacities."""
    from runtime.replay.engine import calibrate_unit_ms

    engine = runtime.engine
    if engine.cursor != 0:
        raise ValueError("make_heterogeneous: the engine already ran a period")
    nodes = sorted(engine.nodes)
    engine.capacity = {n: STRONG_CAPACITY if i % STRONG_EVERY == 0 else 1.0
                       for i, n in enumerate(nodes)}
    engine.unit_ms = calibrate_unit_ms(engine, runtime.spec.load_pct)
    return dict(engine.capacity)


def _max_util(state: ClusterState, assignment: dict[str, str] | Any) -> float:
    from placement.metrics import node_loads

    return max(node_loads(state, assignment).values())


def overload(state: ClusterState, budget: Budget, plan: Plan, time_limit_s: float
             ) -> tuple[float, str]:
    """(the plan's most utilised node, the first witness that relieves what it leaves above
    100 %, '' if none does or nothing is above 100 %)."""
    from placement.registry import get_strategy

    top = _max_util(state, plan.assignment)
    if top <= 100.0:
        return top, ""
    for name in WITNESSES:
        if name == plan.strategy:
            continue
        other = get_strategy(name)(state, budget, time_limit_s=time_limit_s, seed=1)
        if _max_util(state, other.assignment) <= 100.0:
            return top, name
    return top, ""


def summary_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per strategy: utilisation imbalance (LD) per period, overloads, relievable overloads."""
    df = pd.DataFrame(rows)
    if "planned_max_util_pct" not in df.columns:  # not a heterogeneous run
        return []
    out = [f"heterogeneous cluster: every {STRONG_EVERY}th node at capacity {STRONG_CAPACITY:g}; "
           "LD = utilisation imbalance (max |utilisation - mean|, % points)"]
    for strategy, sub in df.groupby("strategy", sort=False):
        sub = sub.sort_values("period")
        planned = sub["planned_max_util_pct"].dropna()
        relievable = sub[sub["relievable_by"].fillna("") != ""]
        out.append(
            f"  {strategy}: LD mean {sub['load_distance'].mean():.2f}, last third "
            f"{sub['load_distance'].iloc[-max(1, len(sub) // 3):].mean():.2f}; measured max "
            f"utilisation > 100 % in {int((sub['max_util_pct'] > 100).sum())} of {len(sub)} "
            f"periods (peak {sub['max_util_pct'].max():.1f} %); planned > 100 % in "
            f"{int((planned > 100).sum())}; left although relievable within the budget: "
            f"{len(relievable)}" + (f" (periods {', '.join(map(str, relievable['period']))})"
                                    if len(relievable) else ""))
    out.append("  max utilisation per period (measured, %): " + "; ".join(
        f"{s}: " + " ".join(f"{v:.0f}" for v in sub.sort_values("period")["max_util_pct"])
        for s, sub in df.groupby("strategy", sort=False)))
    out.append("  LD per period: " + "; ".join(
        f"{s}: " + " ".join(f"{v:.1f}" for v in sub.sort_values("period")["load_distance"])
        for s, sub in df.groupby("strategy", sort=False)))
    return out
