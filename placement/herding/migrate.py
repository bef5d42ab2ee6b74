"""From an offline target to a plan within the migration budget (and the Plan itself).

If every move the target needs fits the budget, the target is the plan. Otherwise moves are
taken in bundles (the units of one query type going from one server to another in the
target): bundles off nodes marked for removal first, then by traffic saved per unit of
migration cost (the gain recomputed against the assignment as it stands when its turn
comes); a bundle is applied only if it saves traffic (or leaves B), fits the budget, and keeps
its destination within cap_j (eq. 1), so the balance constraint is never broken by a move.
Passes repeat until nothing changes. Arrivals are placed, free, on their target server when it
has room, else on the server with room that adds the least traffic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from placement.common import fits, is_frozen, make_plan
from placement.herding.instance import Instance, IntArray
from placement.herding.metrics import facet_metrics
from placement.herding.online import OnlinePlacer
from placement.model import Budget, ClusterState, Phase, Plan, SolverStatus

__all__ = ["herding_plan", "load_current", "within_budget"]

MAX_PASSES = 4


def load_current(inst: Instance, node: IntArray, metric: str = "least_cost", *,
                 nu: float = 0.05, alpha: float = 10.0, seed: int = 0) -> OnlinePlacer:
    """An `OnlinePlacer` holding every unit already placed in `node` (vectorised)."""
    placer = OnlinePlacer(inst.rates, inst.capacity, metric=metric, live=inst.in_a, nu=nu,
                          alpha=alpha, seed=seed)
    placed = node >= 0
    deg = np.diff(inst.indptr)
    rep = np.repeat(node, deg)
    keep = rep >= 0
    np.add.at(placer.readers, (inst.indices[keep], rep[keep]), 1)
    placer.count = np.bincount(node[placed], minlength=inst.k).astype(np.int64)
    placer.sync()
    if metric == "least_qt":
        for t, j in zip(inst.unit_type[placed].tolist(), node[placed].tolist(), strict=True):
            on = placer.type_on.setdefault(t, np.zeros(inst.k, np.int64))
            if on[j] == 0:
                placer.qt[j] += 1
            on[j] += 1
    return placer


def within_budget(inst: Instance, target: IntArray, caps: IntArray, budget: Budget, *,
                  stop_when_spent: bool = True) -> tuple[IntArray, str]:
    """The plan's node per unit: the target, or the best bundles of it the budget allows.

    `stop_when_spent`: once not even the cheapest moving unit fits the budget, no bundle can
    (`fits` only grows stricter with count and cost), so the passes end there instead of
    scoring every bundle left (at 10^5 queries, 200 moves: four passes over ~10^5 bundles).
    The result is the same either way (tests/placement/test_herding_offline.py)."""
    cur = inst.current
    moving = (cur >= 0) & (target != cur)
    if fits(budget, int(moving.sum()), float(inst.migration_cost[moving].sum())):
        return target.copy(), "target reached"
    node = cur.copy()
    placer = load_current(inst, node)
    in_b = ~inst.in_a
    idx = np.flatnonzero(moving)
    keys = (inst.unit_type[idx] * inst.k + cur[idx]) * inst.k + target[idx]
    order = np.argsort(keys, kind="stable")
    idx, keys = idx[order], keys[order]
    starts = np.r_[0, np.flatnonzero(np.diff(keys)) + 1]
    bundles = np.split(idx, starts[1:]) if len(idx) else []
    count, cost = 0, 0.0
    done = np.zeros(len(bundles), bool)
    cheapest = float(inst.migration_cost[moving].min()) if moving.any() else 0.0
    stop_when_spent = stop_when_spent and cheapest >= 0

    def spent() -> bool:
        return stop_when_spent and not fits(budget, count + 1, cost + cheapest)

    def gain(units: IntArray) -> float:
        q = int(units[0])
        src, dst, b = int(node[q]), int(target[q]), len(units)
        s = inst.sources_of(q)
        freed = float(inst.rates[s[placer.readers[s, src] == b]].sum())
        added = float(inst.rates[s[placer.readers[s, dst] == 0]].sum())
        return freed - added

    for _ in range(MAX_PASSES):
        if is_frozen(budget) or spent():
            break
        ranked = sorted(
            (i for i in range(len(bundles)) if not done[i]),
            key=lambda i: (not in_b[cur[bundles[i][0]]],
                           -gain(bundles[i]) / max(float(inst.migration_cost[bundles[i]].sum()),
                                                   1e-12), i))
        changed = False
        for i in ranked:
            if spent():
                break
            units = bundles[i]
            src, dst = int(cur[units[0]]), int(target[units[0]])
            leaving_b = bool(in_b[src])
            if not leaving_b and gain(units) <= 1e-12:
                continue
            if leaving_b:  # drain B as far as the budget allows, cheapest units first
                dsts: list[int] = []
                for q in units[np.argsort(inst.migration_cost[units], kind="stable")].tolist():
                    mc = float(inst.migration_cost[q])
                    free = placer.live & (placer.count < caps)
                    if not free.any() or not fits(budget, count + len(dsts) + 1, cost + mc):
                        break
                    j = dst if free[dst] else int(np.argmin(np.where(
                        free, placer.score(inst.sources_of(q), -1), np.inf)))
                    _move(placer, inst, q, src, j, node)
                    dsts.append(q)
                    cost += mc
                units = np.asarray(dsts, dtype=np.int64)
                count += len(units)
            elif len(units) > int(caps[dst] - placer.count[dst]) or not fits(
                    budget, count + len(units), cost + float(inst.migration_cost[units].sum())):
                continue
            else:
                for q in units.tolist():
                    _move(placer, inst, q, src, dst, node)
                count += len(units)
                cost += float(inst.migration_cost[units].sum())
            if not len(units):
                continue
            done[i] = len(units) == len(bundles[i])
            bundles[i] = np.setdiff1d(bundles[i], units)
            changed = True
        if not changed:
            break
    for q in np.flatnonzero(cur < 0).tolist():  # arrivals: placing one is not a migration
        s = inst.sources_of(q)
        j = int(target[q])
        if placer.count[j] >= caps[j]:
            free = placer.live & (placer.count < caps)
            if free.any():
                j = int(np.argmin(np.where(free, placer.score(s, -1), np.inf)))
        placer.add(s, int(inst.unit_type[q]), j)
        node[q] = j
    return node, f"budget-limited: {count} migration(s) of the target's {int(moving.sum())}"


def _move(placer: OnlinePlacer, inst: Instance, q: int, src: int, dst: int, node: IntArray
          ) -> None:
    s, t = inst.sources_of(q), int(inst.unit_type[q])
    placer.remove(s, t, src)
    placer.add(s, t, dst)
    node[q] = dst


def herding_plan(state: ClusterState, inst: Instance, node: IntArray, caps: IntArray, *,
                 status: SolverStatus, message: str = "",
                 extra: Mapping[str, float] | None = None, phases: tuple[Phase, ...] = ()
                 ) -> Plan:
    """A Plan with the herding facet metrics after (`node`) and before (the current one).

    `lower_bound` stays None: elsewhere it bounds the load distance; the traffic bound is the
    facet metric `traffic_lower_bound`. `before` scores the units that have a node."""
    assignment = {u: inst.node_ids[int(j)] for u, j in zip(inst.unit_ids, node, strict=True)}
    after = facet_metrics(inst, node, caps)
    if extra:
        after.update(extra)
    plan = make_plan(state, assignment, status=status, lower_bound=None, message=message,
                     phases=phases)
    return replace(plan, facet_metrics=after, facet_before=facet_metrics(inst, inst.current, caps))
