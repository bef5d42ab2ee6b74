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

Nodes marked for removal (B) are never destinations and signal busy while they hold a VW.
Arrivals (units with no node yet) go to the least utilised node of A, one by one.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from placement.common import EPS, check_inputs, fits, make_plan
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
        for s, d in pair_step(signal, counts, plain, probe=params.probe, eligible=in_a):
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


def plan_cg(state: ClusterState, budget: Budget, params: CgParams | None = None) -> Plan:
    """One pairing cycle under the budget; status HEURISTIC, no lower bound. The plan's
    facet metrics: utilisation imbalance, normalised imbalance and VWs against α*
    (consistent_grouping/metrics.py), before and after."""
    started = time.perf_counter()
    check_inputs(state, budget)
    params = params or CgParams()
    assignment = cg_assignment(state, budget, params)
    plan = make_plan("cg", state, assignment, status=SolverStatus.HEURISTIC, lower_bound=None,
                     started=started)
    before = {name: value for name, value in cg_metrics(state, state.assignment).items()
              if not name.startswith("vws_optimal/")} if not state.arrivals else {}
    return replace(plan, facet_metrics=cg_metrics(state, assignment), facet_before=before,
                   wall_s=time.perf_counter() - started)
