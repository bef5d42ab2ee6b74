"""Stable plans: a no-op band, a per-unit cooldown, and the oscillation count.

The Flink autoscaler keeps a job still while its utilisation is inside a band and waits a
stabilisation interval after a rescale; its users still report ">20 rescales a day", and Helix
and Pulsar users report partitions moved back and forth. A periodic planner that balances noisy
loads does the same: the load distance LD wobbles, and each period's optimum moves a unit back
where it came from. This module applies a job's stability policy to any strategy's plan, after
the registry has checked it:

- **band**: while the current LD is at most `band` (percentage points), the plan is the current
  assignment (no moves), unless a unit sits on a node of B (a drain needs it) or a topology
  constraint is broken (a repair needs it);
- **cooldown**: a unit that left a node in the last `cooldown` periods is not moved back onto it;
  the plan's move is reverted, unless the unit sits on B, or is part of a broken constraint, or
  reverting would raise a constraint's violation (placement/constraints.py). Reverting keeps
  every other move, so the budget and "nothing onto B" still hold;
- **oscillations**: units moved back onto a node they left, within a window of periods.

A plan changed here keeps its lower bound (a bound over every plan) but no longer claims
OPTIMAL: its status becomes HEURISTIC and its message says what was kept back and why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from placement.constraints import amounts, raised
from placement.metrics import plan_metrics
from placement.model import ClusterState, Move, Plan, SolverStatus, moves_between

__all__ = ["Stability", "forbidden_returns", "oscillations", "stabilise"]

#: one published period's moves, as (unit, from node, to node)
PeriodMoves = Sequence[tuple[str, str, str]]


@dataclass(frozen=True)
class Stability:
    """A job's stability policy: the no-op band on LD (None: off) and the cooldown in periods
    (0: off)."""

    band: float | None = None
    cooldown: int = 0


def forbidden_returns(history: Sequence[PeriodMoves], cooldown: int) -> dict[str, set[str]]:
    """Per unit, the nodes it left in the newest `cooldown` periods of `history` (oldest
    first): the nodes it may not be moved back onto."""
    out: dict[str, set[str]] = {}
    if cooldown <= 0:
        return out
    for period in history[-cooldown:]:
        for unit, src, _dst in period:
            out.setdefault(unit, set()).add(src)
    return out


def oscillations(history: Sequence[PeriodMoves]) -> int:
    """How many moves in `history` (oldest first) put a unit back onto a node it left in an
    earlier period of the window: the back-and-forth the cooldown prevents."""
    left: dict[str, set[str]] = {}
    count = 0
    for period in history:
        for unit, _src, dst in period:
            if dst in left.get(unit, set()):
                count += 1
        for unit, src, _dst in period:
            left.setdefault(unit, set()).add(src)
    return count


def _needed(state: ClusterState) -> set[str]:
    """Units a move may be needed for whatever the policy: on B, or in a broken constraint."""
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    units = {u for u, n in state.assignment.items() if n in marked}
    if state.constraints and any(amounts(state, state.assignment).values()):
        units |= set(state.assignment)  # a repair may move any unit; the check decides
    return units


def _replan(state: ClusterState, plan: Plan, assignment: Mapping[str, str], note: str) -> Plan:
    moves: tuple[Move, ...] = moves_between(state, assignment)
    status = SolverStatus.HEURISTIC if plan.status is SolverStatus.OPTIMAL else plan.status
    return dataclasses.replace(
        plan, assignment=dict(assignment), moves=moves, after=plan_metrics(state, assignment),
        status=status, message=f"{plan.message}; {note}" if plan.message else note)


def stabilise(state: ClusterState, plan: Plan, policy: Stability,
              history: Sequence[PeriodMoves] = ()) -> Plan:
    """`plan` under `policy` (module docstring); `history`: the published periods' moves,
    oldest first."""
    if not plan.moves:
        return plan
    needed = _needed(state)
    if policy.band is not None and not needed and plan.before.load_distance <= policy.band:
        return _replan(state, plan, state.assignment,
                       f"no moves: LD {plan.before.load_distance:.3g} is within the job's "
                       f"no-op band ({policy.band:g})")
    forbidden = forbidden_returns(history, policy.cooldown)
    new = dict(plan.assignment)
    kept: list[str] = []
    for move in plan.moves:
        if move.keygroup in needed or move.dst not in forbidden.get(move.keygroup, set()):
            continue
        trial = {**new, move.keygroup: move.src}
        if state.constraints and raised(state, trial):
            continue
        new, kept = trial, [*kept, move.keygroup]
    if not kept:
        return plan
    shown = ", ".join(kept[:5]) + (f" and {len(kept) - 5} more" if len(kept) > 5 else "")
    return _replan(state, plan, new, f"cooldown: {len(kept)} unit(s) not moved back within "
                                     f"{policy.cooldown} period(s) ({shown})")
