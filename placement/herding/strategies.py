"""The herding strategies: `herding_offline` and `herding_online` (Zong et al. 2015 §4, §5).

`herding_offline` computes a target from scratch with an offline algorithm (IC, MMS, MQP,
Fig. 2, OffRand) under eq. 1's caps, then moves towards it within the budget
(placement/herding/migrate.py). `herding_online` keeps every placed unit where it is and
places the arrivals, plus the units on nodes marked for removal (re-placed as new queries,
§6.1.2, each a migration that must fit the budget), one at a time in unit-id order, with
Fig. 3 and eq. 4. Both are heuristics (status HEURISTIC).
"""

from __future__ import annotations

import numpy as np

from placement.common import fits
from placement.herding.instance import Instance, IntArray, capacities, from_state
from placement.herding.migrate import herding_plan, load_current, within_budget
from placement.herding.offline import run_offline
from placement.herding.params import OfflineParams, OnlineParams
from placement.model import Budget, ClusterState, Plan, SolverStatus

__all__ = ["online_order", "place_online", "plan_offline", "plan_online", "reservations"]


def plan_offline(state: ClusterState, budget: Budget, params: OfflineParams) -> Plan:
    """The offline algorithm's target, reached as far as the budget allows."""
    inst = from_state(state)
    caps = capacities(inst, params.nu)
    target = run_offline(inst, caps, params.algorithm, seed=params.seed, theta=params.theta,
                         nu=params.nu)
    node, note = within_budget(inst, target, caps, budget)
    return herding_plan(state, inst, node, caps, status=SolverStatus.HEURISTIC,
                        message=f"{params.algorithm}: {note}")


def online_order(inst: Instance) -> IntArray:
    """The units to place: arrivals and units on nodes of B, in unit-id order."""
    cur = inst.current
    on_b = (cur >= 0) & ~inst.in_a[np.maximum(cur, 0)]
    return np.flatnonzero((cur < 0) | on_b)


def reservations(inst: Instance, nu: float, algorithm: str, seed: int) -> dict[int, IntArray]:
    """§5.2.1: π_{t,j}, an offline plan of the known type counts n_t, minus what each server
    already holds of type t (type -> room left per server)."""
    caps = capacities(inst, nu)
    target = run_offline(inst, caps, algorithm, seed=seed, nu=nu)
    res: dict[int, IntArray] = {}
    for t, j in zip(inst.unit_type.tolist(), target.tolist(), strict=True):
        res.setdefault(t, np.zeros(inst.k, np.int64))[j] += 1
    cur = inst.current
    for t, j in zip(inst.unit_type[cur >= 0].tolist(), cur[cur >= 0].tolist(), strict=True):
        res[t][j] -= 1
    return res


def place_online(inst: Instance, params: OnlineParams, budget: Budget
                 ) -> tuple[IntArray, int, int]:
    """Fig. 3 + eq. 4 over `online_order`; (node per unit, placed, units left on B)."""
    node = inst.current.copy()
    todo = online_order(inst)
    staying = node.copy()
    staying[todo] = -1
    placer = load_current(inst, staying, params.metric, nu=params.nu, alpha=params.alpha,
                          seed=params.seed)
    res = reservations(inst, params.nu, params.reservations, params.seed) \
        if params.known_types else {}
    count, cost, left_on_b = 0, 0.0, 0
    for q in todo.tolist():
        if node[q] >= 0:  # on B: a migration, only if the budget allows it
            mc = float(inst.migration_cost[q])
            if not fits(budget, count + 1, cost + mc):
                placer.add(inst.sources_of(q), int(inst.unit_type[q]), int(node[q]))
                left_on_b += 1
                continue
            count, cost = count + 1, cost + mc
        s, t = inst.sources_of(q), int(inst.unit_type[q])
        room = res.get(t)
        ok = placer.eligible()
        if room is not None and (room_ok := (room > 0) & ok).any():
            j = int(np.argmax(np.where(room_ok, room, -1)))
            room[j] -= 1
            placer.add(s, t, j)
        else:
            j = placer.place(s, t)
        node[q] = j
    return node, len(todo) - left_on_b, left_on_b


def plan_online(state: ClusterState, budget: Budget, params: OnlineParams) -> Plan:
    """Arrivals (and units on B) placed one at a time; every other unit stays."""
    inst = from_state(state)
    node, placed, left = place_online(inst, params, budget)
    caps = capacities(inst, params.nu)
    kind = f"{params.metric}{' + §5.2.1 reservations' if params.known_types else ''}"
    note = f"{kind}: placed {placed} arrival(s)" + (
        f"; {left} unit(s) left on nodes marked for removal (budget)" if left else "")
    return herding_plan(state, inst, node, caps, status=SolverStatus.HEURISTIC, message=note)
