"""Healing between periods: a dead node's units re-placed first, then far-over-capacity nodes
relieved, all within a healing budget (Cruise Control's self-healing, between its periodic
goal-based rebalances).

Symbols as in the MILP (Madsen et al. 2016, §4): nodes N, the current allocation q, gLoad_k of
each unit, capacity weights c_i, util_i = Σ_{k: q(k)=i} gLoad_k / c_i. Given the dead nodes D,
the far-over-capacity nodes O (reported by the runtime, D ∩ O = ∅) and the healing budget b
(a count of moves):

1. Every unit on D must move (its node is gone): if there are more than b, the healing refuses
   (`HealingRefused`): a partial heal would leave units on a dead node and publish a version that
   the runtime cannot run. Otherwise, largest gLoad_k first (ties by id), each goes to the live
   node (N \\ D, not marked for removal) with the lowest utilisation after it arrives, among the
   nodes the job's topology constraints allow (placement/constraints.py `MoveCheck`); when no
   live node allows it, the least loaded live node takes it and the plan's message names the
   constraint the dead node forces open (the unit has to run somewhere).
2. With the budget left, each node of O (most utilised first) sheds its largest unit to the
   least utilised allowed node while that lowers the pair's peak utilisation and the node is
   above the mean — the same one-move rule as greedy's, only on the reported nodes.

Nothing else moves: healing repairs, the next scheduled period balances. The dead nodes are
marked for removal in the planned state, so the plan's metrics (LD over A = N \\ D) are those of
the cluster that is left, and the manifest terminates them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from placement.common import make_plan
from placement.constraints import MoveCheck, broken
from placement.model import ClusterState, Plan, SolverStatus

__all__ = ["HealingRefused", "HealingRequest", "heal"]

STRATEGY = "healing"


class HealingRefused(ValueError):
    """The healing cannot be done as asked; `what` and `fix` are for the alert."""

    def __init__(self, what: str, fix: str) -> None:
        super().__init__(what)
        self.what, self.fix = what, fix


@dataclass(frozen=True)
class HealingRequest:
    """What to heal: dead nodes D, far-over-capacity nodes O, and the budget b (moves)."""

    dead: frozenset[str]
    over: frozenset[str]
    budget: int


def _util(raw: Mapping[str, float], cap: Mapping[str, float], node: str) -> float:
    return raw[node] / cap[node]


def heal(state: ClusterState, request: HealingRequest) -> Plan:
    """The healing plan (the module docstring's rule); `HealingRefused` if it cannot be made."""
    known = set(state.node_ids)
    dead = request.dead & known
    live = [n.id for n in state.nodes if not n.marked_for_removal and n.id not in dead]
    if not live:
        raise HealingRefused("no live node is left to take the dead node's units",
                             "add nodes to the job (or bring one back), then heal again")
    marked = replace(state, nodes=tuple(replace(n, marked_for_removal=True) if n.id in dead
                                        else n for n in state.nodes))
    load = {k.id: k.load for k in state.keygroups}
    stranded = sorted((k for k, n in state.assignment.items() if n in dead),
                      key=lambda k: (-load[k], k))
    if len(stranded) > request.budget:
        raise HealingRefused(
            f"the dead node(s) {', '.join(sorted(dead))} hold {len(stranded)} unit(s), more than "
            f"the healing budget of {request.budget} move(s)",
            "raise [jobs.<id>.healing] budget, or re-place them in a scheduled cycle")
    cap = {n.id: n.capacity for n in state.nodes}
    raw = dict.fromkeys(state.node_ids, 0.0)
    for unit, node in state.assignment.items():
        raw[node] += load[unit]
    new = dict(state.assignment)
    check = MoveCheck(marked)
    forced: list[str] = []

    def best(unit: str, exclude: str) -> str | None:
        allowed = [n for n in live if n != exclude and check.allows(new, unit, n)]
        return min(allowed, key=lambda n: ((raw[n] + load[unit]) / cap[n], n), default=None)

    def move(unit: str, dst: str) -> None:
        raw[new[unit]] -= load[unit]
        raw[dst] += load[unit]
        new[unit] = dst

    for unit in stranded:
        dst = best(unit, new[unit])
        if dst is None:
            dst = min(live, key=lambda n: ((raw[n] + load[unit]) / cap[n], n))
            forced.append(unit)
        move(unit, dst)
    left = request.budget - len(stranded)
    mean = sum(raw[n] for n in live) / sum(cap[n] for n in live)
    for node in sorted(request.over & set(live), key=lambda n: (-_util(raw, cap, n), n)):
        while left > 0 and _util(raw, cap, node) > mean:
            units = sorted((k for k, n in new.items() if n == node), key=lambda k: (-load[k], k))
            for unit in units:
                dst = best(unit, node)
                if dst is not None and (raw[dst] + load[unit]) / cap[dst] < _util(raw, cap, node):
                    move(unit, dst)
                    left -= 1
                    break
            else:
                break
    message = (f"healing: {len(stranded)} unit(s) off dead node(s) "
               f"{', '.join(sorted(dead)) or '-'}; {request.budget - left - len(stranded)} "
               f"off over-capacity node(s) {', '.join(sorted(request.over & set(live))) or '-'}")
    if forced:
        message += (f"; no live node keeps every constraint for {', '.join(forced)}: placed on "
                    f"the least loaded (breaks {', '.join(broken(marked, new))})")
    plan = make_plan(marked, new, status=SolverStatus.HEURISTIC, lower_bound=None,
                     message=message)
    return replace(plan, strategy=STRATEGY)
