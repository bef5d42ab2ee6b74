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
    being drained is always helped)."""
    fitting = [kg for kg in on_src if fits(budget, count + 1, cost + kg.migration_cost)]
    if not fitting:
        return None
    if params.vw_choice == "cheapest":
        return min(fitting, key=lambda k: (k.migration_cost, k.id))
    now = raw[s] / cap[s]

    def peak(kg: KeyGroup) -> float:
        return max((raw[s] - kg.load) / cap[s], (raw[d] + kg.load) / cap[d])

    best = min(fitting, key=lambda k: (round(peak(k), 9), k.migration_cost, k.id))
    return best if draining or peak(best) < now - EPS else None


def cg_assignment(state: ClusterState, budget: Budget, params: CgParams) -> dict[str, str]:
    """The pairing's new allocation under the budget (the current one where nothing pairs)."""
    nodes = list(state.node_ids)
    index = {n: i for i, n in enumerate(nodes)}
    cap = np.array([n.capacity for n in state.nodes]) * 100.0  # loads are in % of a reference
    in_a = np.array([not n.marked_for_removal for n in state.nodes])
    raw = np.zeros(len(nodes))
    on_node: list[list[KeyGroup]] = [[] for _ in nodes]
    assignment = dict(state.assignment)
    arrivals = []
    for kg in sorted(state.keygroups, key=lambda k: k.id):
        if kg.id in state.arrivals:
            arrivals.append(kg)
            continue
        i = index[assignment[kg.id]]
        raw[i] += kg.load
        on_node[i].append(kg)
    for kg in arrivals:  # not migrations: placed where there is most room
        util = np.where(in_a, raw / cap, np.inf)
        i = int(np.argmin(util))
        assignment[kg.id] = nodes[i]
        raw[i] += kg.load
        on_node[i].append(kg)
    thresholds = thresholds_of(params)
    count, cost = 0, 0.0
    moved: set[str] = set()
    plain = Thresholds(thresholds.busy, thresholds.idle)  # applied to `signal` below
    for _ in range(params.rounds):
        util = raw / cap
        signal = util
        if thresholds.relative:  # (L_w / c_w) / (ΣL / Σc) over A, §6.1.2's shares
            signal = util / max(float(raw[in_a].sum() / cap[in_a].sum()), EPS)
        signal = np.where(in_a, signal, BUSY_SIGNAL)  # B signals busy while it holds a VW
        counts = np.array([sum(k.id not in moved for k in vws) for vws in on_node])
        pairs = pair_step(signal, counts, plain, probe=params.probe, eligible=in_a)
        progressed = False
        for s, d in pairs:
            vw = _pick([k for k in on_node[s] if k.id not in moved], raw, cap, s, d, params,
                       budget, count, cost, draining=not in_a[s])
            if vw is None:
                continue
            on_node[s].remove(vw)
            on_node[d].append(vw)
            raw[s] -= vw.load
            raw[d] += vw.load
            assignment[vw.id] = nodes[d]
            moved.add(vw.id)
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
    before = (cg_metrics(state, state.assignment) if not state.arrivals else {})
    return replace(plan, facet_metrics=cg_metrics(state, assignment), facet_before=before,
                   wall_s=time.perf_counter() - started)
