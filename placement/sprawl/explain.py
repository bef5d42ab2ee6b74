"""What a SPRAWL plan reports: its facet metrics and, for an INFEASIBLE plan, the cause.

The latency metrics always measure the queries' declared bounds, whether or not `constraints`
makes the DP keep them, so `latency_violations`, `max_latency_ratio` and each
`latency_ratio_<query>` agree. The cause of infeasibility is found by relaxing one thing at a
time: the budget, then the latency bounds; what is left is the resources.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from placement.model import Budget, KeyGroup
from placement.sprawl.instance import Evaluation, Instance, QueryIdx, evaluate
from placement.sprawl.params import SprawlParams

__all__ = ["infeasible_cause", "latency_ratios", "sprawl_metrics"]


def sprawl_metrics(inst: Instance, ev: Evaluation, bounds: list[float]) -> dict[str, float]:
    """The plan's SPRAWL metrics. Latency ratios use the queries' declared bounds `bounds`
    (in `inst.queries` order), whether or not `constraints` makes the DP keep them, so
    `latency_violations`, `max_latency_ratio` and `latency_ratio_<query>` always agree."""
    caps = inst.cpu_cap if inst.cpu_cap is not None else None
    links = np.array([lk.bandwidth for lk in inst.routing.links], dtype=float)
    node_util = (float(np.max(np.where(caps > 0, ev.node_cpu / np.where(caps > 0, caps, 1), 0)))
                 if caps is not None else 0.0)
    finite = np.isfinite(links)
    link_util = float(np.max(ev.link_bw[finite] / links[finite])) if finite.any() else 0.0
    ratios = [lat / bound for bound, lat in zip(bounds, ev.latency, strict=True)
              if math.isfinite(bound)]
    return {"cost_total": ev.total, "cost_cpu": ev.cost_cpu, "cost_network": ev.cost_network,
            "wan_bytes": ev.wan_rate, "max_node_util": node_util, "max_link_util": link_util,
            "latency_violations": float(sum(r > 1 + 1e-9 for r in ratios)),
            "max_latency_ratio": max(ratios, default=0.0)}


def latency_ratios(params: SprawlParams, ev: Evaluation) -> dict[str, float]:
    """Lat_q / L_q of every bounded query, by its id (`ev.latency` is in the params' order)."""
    return {f"latency_ratio_{q.id}": lat / q.latency_bound_ms
            for q, lat in zip(params.queries, ev.latency, strict=True)
            if math.isfinite(q.latency_bound_ms)}


def infeasible_cause(inst: Instance, params: SprawlParams, budget: Budget,
                     current: np.ndarray, kgs: dict[str, KeyGroup], units: list[str],
                     tree_ok: bool, solver_note: str,
                     solve: Callable[[Instance, SprawlParams], np.ndarray | None]) -> str:
    """Why no plan was found: the budget, the latency bounds, or the resources (tried in that
    order by relaxing each: unlimited budget, then no latency bounds)."""
    if not tree_ok:
        return (f"the exact MILP (the data edges are not a forest) found no plan that meets "
                f"the constraints within the budget and time limit ({solver_note})")
    free = solve(inst, params)
    if free is not None and evaluate(inst, free).feasible:
        moved = np.flatnonzero((current >= 0) & (free != current))
        cost = sum(kgs[units[i]].migration_cost for i in moved)
        return (f"the budget: a placement meeting every constraint needs {len(moved)} "
                f"migration(s) costing {cost:g}, beyond the budget "
                f"(max_migrations {budget.max_migrations}, max_migration_cost "
                f"{budget.max_migration_cost})")
    bounded = [(q, b) for q, b in zip(params.queries, inst.queries, strict=True)
               if math.isfinite(b.bound)]
    if bounded:
        loose = dataclasses.replace(inst, queries=tuple(
            QueryIdx(b.sink, math.inf, b.client) for b in inst.queries))
        relaxed = solve(loose, params)
        if relaxed is not None and evaluate(loose, relaxed).feasible:
            lat = evaluate(inst, relaxed).latency
            over = [f"{q.id} (L_q {q.latency_bound_ms:g} ms, {lat[i]:.3g} ms reached)"
                    for i, (q, b) in enumerate(zip(params.queries, inst.queries, strict=True))
                    if lat[i] > b.bound + 1e-9]
            return ("the latency bound: even with an unlimited budget no placement meets "
                    f"{', '.join(over) or 'every query bound'}; raise L_q or add a site "
                    "closer to the client")
    return ("the resources: the hosts' CPU (100 × capacity) or the links' bandwidth cannot "
            "carry the operators even with an unlimited budget and no latency bound; add "
            "capacity or lower the load")
