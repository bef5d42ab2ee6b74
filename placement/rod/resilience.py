"""The resilience of any plan, beyond the paper: how much rate change it absorbs unmoved.

`plan_resilience(state, assignment)` needs only the load-model facet and works for the plan of
any strategy. The nodes are those that will run the plan: the nodes of A, and the nodes of B
that still host a unit. Keys (all floats, ready for `Plan.facet_metrics`):
- `feasible_set_ratio`: F/F* (Xing et al. 2006 §2.3, Theorem 1) from the origin, exact up to
  three streams, else randomized QMC on a few thousand points (`measures.feasible_set_ratio`);
  `feasible_set_ratio_ci` its 95 % half-width (0 when exact);
- `feasible_set_ratio_lb`: the same from the streams' lower bounds B (§6.1), when some b_k > 0;
- `plane_distance_ratio`: r/r* (§4.2, from B when given); `mmad_bound`: Π_k min_i 1/w_ik (§4.1);
- `headroom_all`: the factor t by which all observed rates R can grow together before a node
  overloads, min_i C_i / (L^n_i·R) (< 1: some node is overloaded now);
- `headroom_<stream>`: the factor stream k alone can grow by, the others at their observed
  rates: (r_k + δ_k) / r_k with δ_k = min_{i: l^n_ik > 0} (C_i − L^n_i·R) / l^n_ik, floored at 0
  (only for r_k > 0; names sanitised for MLflow); `headroom_min` the smallest of them.
Capacities are C_i = 100·`Node.capacity` (`model.CAPACITY_PCT`): headroom assumes the
coefficients are in % of a reference node per unit of rate, like `KeyGroup.load`.

`with_resilience(state, plan)` adds these to a plan (after and before) when the state has the
load-model facet; the registry calls it on every strategy's plan.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping

import numpy as np

from placement.model import ClusterState, Plan
from placement.rod.measures import feasible_set_ratio, mmad_bound, plane_distance_ratio
from placement.rod.model import LoadModel, LoadModelError, node_coefficients, weights

__all__ = ["RESILIENCE_POINTS", "plan_resilience", "with_resilience"]

#: QMC points per estimate in the plan metrics (8 scrambled replicates of 512)
RESILIENCE_POINTS = 512
_NAME = re.compile(r"[^A-Za-z0-9_\-./]")


def _running_nodes(state: ClusterState, assignment: Mapping[str, str]) -> list[str]:
    used = set(assignment.values())
    return [n.id for n in state.nodes if not n.marked_for_removal or n.id in used]


def plan_resilience(state: ClusterState, assignment: Mapping[str, str], *,
                    points: int = RESILIENCE_POINTS, seed: int = 0) -> dict[str, float]:
    """The resilience measures of `assignment` (see the module doc); LoadModelError without
    a usable load-model facet."""
    model = LoadModel.of(state, _running_nodes(state, assignment))
    bins = model.bins(assignment)
    act = model.active
    out: dict[str, float] = {}
    if np.any(act):
        w = weights(model.normalised(), bins, model.share())
        est = feasible_set_ratio(w, points=points, seed=seed)
        out["feasible_set_ratio"] = est.value
        out["feasible_set_ratio_ci"] = est.half_width
        lower = model.lower_point()
        if np.any(lower > 0):
            out["feasible_set_ratio_lb"] = feasible_set_ratio(w, lower, points=points,
                                                              seed=seed).value
        out["plane_distance_ratio"] = plane_distance_ratio(w, lower)
        out["mmad_bound"] = mmad_bound(w)
    ln = node_coefficients(model.coefficients, bins, len(model.nodes))
    load = ln @ model.rates
    spare = model.capacity - load
    if np.any(load > 0):  # denormal loads overflow to inf, which is left out below
        with np.errstate(over="ignore"):
            out["headroom_all"] = float(np.min(model.capacity[load > 0] / load[load > 0]))
    alone = []
    for k, stream in enumerate(model.streams):
        on = ln[:, k] > 0
        if model.rates[k] <= 0 or not np.any(on):
            continue
        with np.errstate(over="ignore"):
            delta = float(np.min(spare[on] / ln[on, k]))
        factor = max(0.0, (model.rates[k] + delta) / model.rates[k])
        out[f"headroom_{_NAME.sub('_', stream)}"] = factor
        alone.append(factor)
    if alone:
        out["headroom_min"] = min(alone)
    return {k: float(v) for k, v in out.items() if math.isfinite(v)}


def with_resilience(state: ClusterState, plan: Plan) -> Plan:
    """`plan` with its resilience (after; before when every unit has a current node) added to
    its facet metrics, when `state` has the load-model facet; the strategy's own metrics win."""
    if "load_model" not in state.facets:
        return plan
    try:
        after = plan_resilience(state, plan.assignment)
        before = {} if state.arrivals else plan_resilience(state, state.assignment)
    except LoadModelError as exc:
        note = f"resilience not computed: {exc}"
        return dataclasses.replace(plan, message=f"{plan.message}; {note}" if plan.message
                                   else note)
    return dataclasses.replace(plan, facet_metrics={**after, **plan.facet_metrics},
                               facet_before={**before, **plan.facet_before})
