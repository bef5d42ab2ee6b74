"""Strategy `cg`: Consistent Grouping's VW pairing as a periodic planner (Nasir et al. §5.2.1).

Mapping: the VWs are the key groups (the runtime's `keygroups_per_node` is α), the workers are
the nodes, t_0 is the statistics period. Each cycle:

1. U_w = Σ gLoad_k / (100·c_w) for every node w (the period's measured key-group loads over the
   node's capacity weight: a fraction of its capacity).
2. Nodes signal busy / idle (`pairing.classify`: §7.2's absolute 0.85 / 0.75 on U_w, or the
   relative θ_b, θ_i of §6.1.2 on U_w / Ū).
3. FCFS pairing (`pairing.pair_step`): one VW moves from each busy node to its idle partner
   (`probe`: to any non-busy node); unpaired signals move nothing.
4. `rounds` > 1: the nodes signal again on the planned loads, and so on.

Every move must fit the migration budget (count and cost), in pairing order. The VW that moves
(`vw_choice`): "balance" takes the VW of the busy node whose move leaves the pair's larger
utilisation lowest (ties: cheapest, then id) and skips the pair when no VW lowers it (a single
hot VW would only swap which node is busy); "cheapest" takes the smallest migration cost, then
id (the paper's load-blind choice). Unlike the paper, whose VWs move without their state (split
keys are aggregated later), reconf migrates a moved key group's state directly (DESIGN.md).

Nodes marked for removal (B) are never destinations and signal busy while they hold a VW. A
busy signal of B that finds no idle partner pairs with a node of A that is not busy (as
`probe` would), so B drains even when every node of A sits inside the band, one VW per signal
and round like any busy node; the plan's message says why VWs stay on B (the rounds, no node
of A below the busy threshold, or the budget).
Arrivals (units with no node yet) go to the least utilised node of A, one by one.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from placement.common import EPS, fits, make_plan
from placement.consistent_grouping.metrics import cg_metrics
from placement.consistent_grouping.pairing import Thresholds, pair_step
from placement.consistent_grouping.params import CgParams
from placement.model import Budget, ClusterState, KeyGroup, Plan, SolverStatus

__all__ = ["cg_assignment", "plan_cg", "thresholds_of"]

#: the signal of a node of B: above any busy threshold
BUSY_SIGNAL = 1e9


def thresholds_of(params: CgParams) -> Thresholds:
    """The θ_b, θ_i pair the parameters select (absolute or relative)."""
    if params.relative:
        return Thresholds(params.busy_ratio, params.idle_ratio, relative=True)
    return Thresholds(params.busy_above, params.idle_below)


def _pick(on_src: list[KeyGroup], raw: np.ndarray, cap: np.ndarray, s: int, d: int,
          params: CgParams, budget: Budget, count: int, cost: float, draining: bool
          ) -> KeyGroup | None:
    """The VW of node s that moves to node d (None: none fits the budget or helps; a node
    being drained is always helped). `on_src` is in key-group id order, the last tie-break.
    Plain Python: a node holds a handful of VWs, too few for numpy to pay off."""
    if not on_src or not fits(budget, count + 1, cost):
        return None
    limit = budget.max_migration_cost
    rs, rd, cs, cd = float(raw[s]), float(raw[d]), float(cap[s]), float(cap[d])
    best: KeyGroup | None = None
    best_key: tuple[float, ...] = ()
    for pos, kg in enumerate(on_src):
        if limit is not None and cost + kg.migration_cost > limit + EPS:
            continue
        if params.vw_choice == "cheapest":
            key: tuple[float, ...] = (kg.migration_cost, pos)
        else:
            key = (round(max((rs - kg.load) / cs, (rd + kg.load) / cd), 9), kg.migration_cost,
                   pos)
        if best is None or key < best_key:
            best, best_key = kg, key
    if best is None or params.vw_choice == "cheapest" or draining:
        return best
    return best if best_key[0] < rs / cs - EPS else None


def cg_assignment(state: ClusterState, budget: Budget, params: CgParams) -> dict[str, str]:
    """The pairing's new allocation under the budget (the current one where nothing pairs)."""
    nodes = list(state.node_ids)
    index = {n: i for i, n in enumerate(nodes)}
    cap = np.array([n.capacity for n in state.nodes]) * 100.0  # loads are in % of a reference
    in_a = np.array([not n.marked_for_removal for n in state.nodes])
    raw = np.zeros(len(nodes))
    movable: list[list[KeyGroup]] = [[] for _ in nodes]  # a VW moves at most once a cycle
    assignment = dict(state.assignment)
    arrivals = []
    for kg in sorted(state.keygroups, key=lambda k: k.id):
        if kg.id in state.arrivals:
            arrivals.append(kg)
            continue
        i = index[assignment[kg.id]]
        raw[i] += kg.load
        movable[i].append(kg)
    for kg in arrivals:  # not migrations: placed where there is most room
        i = int(np.argmin(np.where(in_a, raw / cap, np.inf)))
        assignment[kg.id] = nodes[i]
        raw[i] += kg.load
        movable[i].append(kg)
    thresholds = thresholds_of(params)
    plain = Thresholds(thresholds.busy, thresholds.idle)  # applied to `signal` below
    counts = np.array([len(vws) for vws in movable])
    count, cost = 0, 0.0
    for _ in range(params.rounds):
        signal = raw / cap
        if thresholds.relative:  # (L_w / c_w) / (ΣL / Σc_A), §6.1.2's shares (B drained)
            signal = signal / max(float(raw.sum() / cap[in_a].sum()), EPS)
        signal = np.where(in_a, signal, BUSY_SIGNAL)  # B signals busy while it holds a VW
        progressed = False
        for s, d in _with_drain(pair_step(signal, counts, plain, probe=params.probe,
                                          eligible=in_a), signal, counts, plain, in_a):
            vw = _pick(movable[s], raw, cap, s, d, params, budget, count, cost,
                       draining=not in_a[s])
            if vw is None:
                continue
            movable[s].remove(vw)
            counts[s] -= 1
            raw[s] -= vw.load
            raw[d] += vw.load
            assignment[vw.id] = nodes[d]
            count, cost = count + 1, cost + vw.migration_cost
            progressed = True
        if not progressed:
            break
    return assignment


def _with_drain(pairs: list[tuple[int, int]], signal: np.ndarray, counts: np.ndarray,
                plain: Thresholds, in_a: np.ndarray) -> list[tuple[int, int]]:
    """The round's pairs, plus one for every node of B left unpaired: with a node of A that
    is not busy and not yet a destination this round, the least utilised first."""
    paired = {s for s, _ in pairs}
    used = {d for _, d in pairs}
    free = [int(j) for j in np.lexsort((np.arange(len(signal)), signal))
            if in_a[j] and signal[j] <= plain.busy and int(j) not in used]
    extra = []
    for s in np.flatnonzero(~in_a & (counts > 0)).tolist():
        if s not in paired and free:
            extra.append((s, free.pop(0)))
    return pairs + extra


def _b_note(state: ClusterState, budget: Budget, params: CgParams,
            assignment: dict[str, str]) -> str:
    """Why VWs stay on nodes of B after the cycle ('' when B is empty)."""
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    left = sorted(u for u, n in assignment.items() if n in marked)
    if not left:
        return ""
    moved = sum(1 for u, n in assignment.items() if state.assignment.get(u, n) != n)
    cost = sum(k.migration_cost for k in state.keygroups
               if k.id in state.assignment and assignment[k.id] != state.assignment[k.id])
    cheapest = min(k.migration_cost for k in state.keygroups if k.id in left)
    if not fits(budget, moved + 1, cost + cheapest):
        why = "the budget allows no more migrations"
    elif _all_busy(state, assignment, params):
        why = "every node of A is busy (no destination below the busy threshold)"
    else:
        why = (f"one VW moves per busy signal and round (rounds={params.rounds}); more rounds "
               "drain more per cycle")
    return f"{len(left)} VW(s) stay on nodes marked for removal: {why}"


def _all_busy(state: ClusterState, assignment: dict[str, str], params: CgParams) -> bool:
    raw = {n.id: 0.0 for n in state.nodes}
    for k in state.keygroups:
        raw[assignment[k.id]] += k.load
    a = [n for n in state.nodes if not n.marked_for_removal]
    util = {n.id: raw[n.id] / (100.0 * n.capacity) for n in a}
    thresholds = thresholds_of(params)
    if thresholds.relative:
        mean = sum(raw.values()) / (100.0 * sum(n.capacity for n in a))
        util = {k: v / max(mean, EPS) for k, v in util.items()}
    return all(v > thresholds.busy for v in util.values())


def plan_cg(state: ClusterState, budget: Budget, params: CgParams) -> Plan:
    """One pairing cycle under the budget; status HEURISTIC, no lower bound. The plan's
    facet metrics: utilisation imbalance, normalised imbalance and VWs against α*
    (consistent_grouping/metrics.py), before and after."""
    assignment = cg_assignment(state, budget, params)
    plan = make_plan(state, assignment, status=SolverStatus.HEURISTIC, lower_bound=None,
                     message=_b_note(state, budget, params, assignment))
    before = {name: value for name, value in cg_metrics(state, state.assignment).items()
              if not name.startswith("vws_optimal/")} if not state.arrivals else {}
    return replace(plan, facet_metrics=cg_metrics(state, assignment), facet_before=before)
