"""Every family's objective, evaluated for any plan: like is compared with like.

A strategy declares its objective in the strategy table (schemas/strategies.py `Objective`);
this module evaluates each declared objective for any assignment whose state has the facet it
needs, with the family's own metric function (no copy of a formula lives here):

| objective | facet | the family's function |
|---|---|---|
| load_distance (ALBIC §4.3.1) | utilisation | `placement.metrics.load_distance` |
| collocation_factor (ALBIC §4.3.2) | communication | `placement.metrics.collocation_factor` |
| stream_traffic (Herding §2.1) | sources | `placement.herding.metrics.stream_traffic` |
| cost_total (SPRAWL Formula 3.1) | network | `placement.sprawl` `state_instance` + `evaluate` |
| feasible_set_ratio (ROD §2.3) | load_model | `placement.rod.resilience.plan_resilience` |
| utilisation_imbalance (CG §3) | utilisation | `placement.consistent_grouping.metrics.cg_metrics` |

So the what-if can score the MILP's plan in SPRAWL's cost or Herding's traffic, and the audit
reads the in-force strategy's own number. The families are imported inside the functions, so
the core stays light and no family imports another.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from placement.model import ClusterState, Plan
from schemas.strategies import OBJECTIVES, STRATEGIES, Objective

__all__ = ["EVALUATORS", "as_run_metrics", "bound_value", "evaluate_objectives", "objective_of",
           "objectives_for", "plan_value"]

Evaluator = Callable[[ClusterState, Mapping[str, str], Any], "float | None"]


def _load_distance(state: ClusterState, assignment: Mapping[str, str], _: Any) -> float:
    from placement.metrics import load_distance
    return load_distance(state, assignment)


def _collocation(state: ClusterState, assignment: Mapping[str, str], _: Any) -> float:
    from placement.metrics import collocation_factor
    return collocation_factor(state, assignment)


def _traffic(state: ClusterState, assignment: Mapping[str, str], _: Any) -> float:
    from placement.herding.metrics import stream_traffic
    return stream_traffic(state, assignment)


def _sprawl_cost(state: ClusterState, assignment: Mapping[str, str], params: Any) -> float:
    """Formula 3.1 with the job's SPRAWL parameters (β, objective, queries) when given, else
    the defaults; inf when the assignment breaks a placement SPRAWL allows (a pinned unit
    moved, a unit moved onto B)."""
    import numpy as np

    from placement.sprawl.core import state_instance
    from placement.sprawl.instance import evaluate
    from placement.sprawl.params import SprawlParams
    inst, units = state_instance(state, params if isinstance(params, SprawlParams)
                                 else SprawlParams())
    x = np.array([inst.routing.index[assignment[u]] for u in units], dtype=np.int64)
    return float(evaluate(inst, x).total)


def _feasible_set_ratio(state: ClusterState, assignment: Mapping[str, str], _: Any
                        ) -> float | None:
    from placement.rod.model import LoadModelError
    from placement.rod.resilience import plan_resilience
    try:
        return plan_resilience(state, assignment).get("feasible_set_ratio")
    except LoadModelError:
        return None


def _imbalance(state: ClusterState, assignment: Mapping[str, str], _: Any) -> float:
    from placement.consistent_grouping.metrics import cg_metrics
    return cg_metrics(state, assignment)["utilisation_imbalance"]


#: each declared objective's evaluator, by the objective's name
EVALUATORS: Mapping[str, Evaluator] = {
    "load_distance": _load_distance,
    "collocation_factor": _collocation,
    "stream_traffic": _traffic,
    "cost_total": _sprawl_cost,
    "feasible_set_ratio": _feasible_set_ratio,
    "utilisation_imbalance": _imbalance,
}


def objective_of(strategy: str) -> Objective:
    """The objective strategy `strategy` declares; ValueError for an unknown strategy."""
    try:
        return STRATEGIES[strategy].objective
    except KeyError:
        raise ValueError(f"unknown strategy {strategy!r}; known: "
                         f"{', '.join(sorted(STRATEGIES))}") from None


def objectives_for(state: ClusterState) -> tuple[Objective, ...]:
    """The objectives `state`'s facets allow evaluating, in `OBJECTIVES` order."""
    return tuple(o for o in OBJECTIVES if o.facet in state.facets)


def evaluate_objectives(state: ClusterState, assignment: Mapping[str, str],
                        params: Mapping[str, Any] | None = None) -> dict[str, float]:
    """Every objective `state`'s facets allow, for `assignment` (which places every unit), by
    name. `params` maps an objective's name to the params object its family evaluates with
    (SPRAWL's β and queries: the in-force job's `strategy_params`). An objective the state
    cannot give a number for (a load model without active streams) is left out."""
    out: dict[str, float] = {}
    for objective in objectives_for(state):
        value = EVALUATORS[objective.name](state, assignment, (params or {}).get(objective.name))
        if value is not None:
            out[objective.name] = float(value)
    return out


def plan_value(objective: Objective, plan: Plan, *, before: bool = False) -> float | None:
    """The family's own number for `objective` on `plan` (after, or before): a `PlanMetrics`
    field or the plan's facet metric of that name; None when the plan does not carry it."""
    metrics = plan.before if before else plan.after
    if hasattr(metrics, objective.name):
        return float(getattr(metrics, objective.name))
    value = (plan.facet_before if before else plan.facet_metrics).get(objective.name)
    return None if value is None else float(value)


def bound_value(objective: Objective, plan: Plan) -> float | None:
    """The number certifying `objective` on `plan` (its declared `bound`), None without one."""
    if objective.bound is None:
        return None
    if objective.bound == "lower_bound":
        value = plan.lower_bound
    else:
        value = plan.facet_metrics.get(objective.bound)
    return None if value is None or not math.isfinite(value) else float(value)


def as_run_metrics(plan: Plan) -> dict[str, float]:
    """The plan's numbers named as the run's MLflow metrics (`<name>_before`, `<name>_after`,
    `lower_bound`), the input of schemas/headline.py's `headline`."""
    out: dict[str, float] = {}
    for when, metrics, facet in (("before", plan.before, plan.facet_before),
                                 ("after", plan.after, plan.facet_metrics)):
        out[f"load_distance_{when}"] = metrics.load_distance
        out[f"collocation_factor_{when}"] = metrics.collocation_factor
        out.update({f"{k}_{when}": float(v) for k, v in facet.items()})
    if plan.lower_bound is not None:
        out["lower_bound"] = plan.lower_bound
    return out
