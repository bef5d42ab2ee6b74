"""The strategies, one line each: the single table of their names (DESIGN.md, "The planner's model").

The DAG file and the config loader read the names from here without importing the planner;
`placement/registry.py` registers exactly these, importing each `plan` and `params` path. A
params class lives in its family's light `params.py` (pydantic only), so the config loader can
check a job's `strategy_params` when the file loads. Adding a strategy: its family folder and
one line here.

`guarantee`: "exact" when the plan's status comes from an exact solver (OPTIMAL is a proof),
"heuristic" when the status is always HEURISTIC. `facets`: the optional parts of the
ClusterState the strategy needs. `keeps_budget`: False only for a strategy that ignores the
migration budget on purpose (COLA, a static optimiser), so the registry does not check it.
`places_arrivals`: the strategy places units that have no current node itself (Herding's online
rules, ROD's and the load balancers' targets, cg's least utilised node, SPRAWL's DP); for the
others the plan stage places arrivals first (jobs/facets/dynamic.py), and the registry's
pre-check refuses a state with arrivals.

`objective`: what the strategy optimises, in the family's words (an `Objective`: the metric's
name, label, unit, direction, the facet the state needs to evaluate it), and, when the strategy
reports one, the `bound` that certifies it, and the `reason` a move is given in the family's
words (placement/reasons.py computes its number). `placement/objectives.py` evaluates every objective
a state's facets allow for any plan, so the what-if compares like with like and an operator
reads the in-force strategy's own headline first.

`constraints`: the kinds of topology constraint (schemas/constraints.py `KINDS`) the strategy
holds in every plan; the config loader refuses a job whose strategy does not hold one the job
declares, and the registry's post-check verifies every plan against them. The MILP holds them
as rows of its model, greedy by moving only where they stay kept (placement/constraints.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from schemas.constraints import KINDS

__all__ = ["COLLOCATION", "FEASIBLE_SET_RATIO", "LOAD_DISTANCE", "OBJECTIVES", "PIPELINE_PARAMS",
           "SPRAWL_COST", "STRATEGIES", "STREAM_TRAFFIC", "UTILISATION_IMBALANCE", "Objective",
           "StrategyEntry"]

#: parameters the pipeline sets from the job's own fields, never from `strategy_params`
PIPELINE_PARAMS: Mapping[str, str] = {"time_limit_s": "solver_time_limit_s"}


@dataclass(frozen=True)
class Objective:
    """What a strategy optimises, as an operator reads it.

    `name` is the metric's key: a field of `PlanMetrics` (load_distance, collocation_factor) or
    the key of the family's own facet metric (stream_traffic, cost_total, feasible_set_ratio,
    utilisation_imbalance), so the family's number and the evaluated one are the same metric.
    `facet` is the state facet the metric needs. `bound` names what certifies the objective
    for a strategy that reports it: "lower_bound" (`Plan.lower_bound`) or a facet metric's key;
    None when the strategy certifies nothing."""

    name: str
    label: str
    unit: str
    direction: Literal["min", "max"]
    facet: str = "utilisation"
    bound: str | None = None
    #: a move's reason in the family's words (placement/reasons.py computes its number: what
    #: the move is worth in this objective)
    reason: str = ""
    #: why the objective has no value (before and after n/a), said beside it in the headline
    unavailable: str = ""

    def certified_by(self, bound: str) -> Objective:
        """The same objective, certified by `bound` (a strategy that reports one)."""
        return replace(self, bound=bound)

    def better(self, a: float, b: float) -> bool:
        """True when value `a` is strictly better than `b` in this objective's direction."""
        return a < b if self.direction == "min" else a > b


#: ALBIC §4.3.1: LD = max_{n_i∈A} |load_i − mean|; the MILP's bound certifies its d, which is
#: LD once B is drained (placement/metrics.py `max_deviation`)
LOAD_DISTANCE = Objective("load_distance", "load distance", "% of a reference node", "min",
                          reason="load relieved")
#: ALBIC §4.3.2 and COLA: % of inter-key-group traffic kept on one node
COLLOCATION = Objective("collocation_factor", "collocation", "% of traffic", "max",
                        "communication", reason="pair collocated")
#: Herding §2.1: Σ_j w(∪_{q on j} S_q), every source shipped once per node reading it
STREAM_TRAFFIC = Objective("stream_traffic", "stream traffic", "rate units", "min", "sources",
                           reason="traffic saved")
#: SPRAWL Formula 3.1: CPU cost + β · network cost
SPRAWL_COST = Objective("cost_total", "SPRAWL cost", "cost units (Formula 3.1)", "min",
                        "network", reason="WAN cost saved")
#: ROD §2.3: F/F*, the share of the ideal feasible set the placement keeps
FEASIBLE_SET_RATIO = Objective("feasible_set_ratio", "feasible-set ratio", "F/F*", "max",
                               "load_model", reason="feasible-set ratio gained",
                               unavailable="load model not fitted yet")
#: Consistent Grouping §3: I = max_w U_w − avg_w U_w over the nodes of A
UTILISATION_IMBALANCE = Objective("utilisation_imbalance", "utilisation imbalance",
                                  "% utilisation (max − mean)", "min",
                                  reason="utilisation band left")
#: every objective, in the order an operator reads them as columns
OBJECTIVES: tuple[Objective, ...] = (LOAD_DISTANCE, COLLOCATION, STREAM_TRAFFIC, SPRAWL_COST,
                                     FEASIBLE_SET_RATIO, UTILISATION_IMBALANCE)


@dataclass(frozen=True)
class StrategyEntry:
    """Where a strategy lives ("module:attribute") and what it promises."""

    plan: str
    params: str
    guarantee: Literal["exact", "heuristic"]
    facets: tuple[str, ...] = ()
    keeps_budget: bool = True
    places_arrivals: bool = False
    constraints: tuple[str, ...] = ()
    #: what it optimises (required, by keyword: every strategy declares it)
    objective: Objective = field(kw_only=True)


_MILP, _ALBIC, _BASE = "placement.milp", "placement.albic", "placement.baselines"
_ROD = "placement.rod.strategy"
_HERD = "placement.herding"
_LD, _FSR = LOAD_DISTANCE, FEASIBLE_SET_RATIO
_TRAFFIC = STREAM_TRAFFIC.certified_by("traffic_lower_bound")

STRATEGIES: Mapping[str, StrategyEntry] = {
    "milp": StrategyEntry(f"{_MILP}.core:plan_milp", "placement.params:MilpParams", "exact",
                          objective=_LD.certified_by("lower_bound"), constraints=KINDS),
    "albic": StrategyEntry(f"{_ALBIC}.core:plan_albic", f"{_ALBIC}.params:AlbicParams", "exact",
                           ("communication",), objective=COLLOCATION),
    "albic_many": StrategyEntry(f"{_ALBIC}.core:plan_albic_many",
                                f"{_ALBIC}.params:AlbicManyParams", "exact", ("communication",),
                                objective=COLLOCATION),
    "flux": StrategyEntry(f"{_BASE}.flux:plan_flux", "placement.params:StrategyParams",
                          "heuristic", objective=_LD),
    "greedy": StrategyEntry(f"{_BASE}.greedy:plan_greedy", "placement.params:StrategyParams",
                            "heuristic", objective=_LD, constraints=KINDS),
    "random": StrategyEntry(f"{_BASE}.random_moves:plan_random", f"{_BASE}.params:RandomParams",
                            "heuristic", objective=_LD),
    "cola": StrategyEntry(f"{_BASE}.cola:plan_cola", f"{_BASE}.params:ColaParams", "heuristic",
                          ("communication",), keeps_budget=False, objective=COLLOCATION),
    "drain_then_balance": StrategyEntry("placement.scaling.drain:plan_drain_then_balance",
                                        "placement.scaling.params:DrainParams", "heuristic",
                                        objective=_LD),
    "rod": StrategyEntry(f"{_ROD}:plan_rod", "placement.rod.params:RodParams", "heuristic",
                         ("load_model",), places_arrivals=True, objective=_FSR),
    "llf": StrategyEntry(f"{_ROD}:plan_llf", "placement.params:StrategyParams", "heuristic",
                         ("load_model",), places_arrivals=True, objective=_FSR),
    "connected_lb": StrategyEntry(f"{_ROD}:plan_connected_lb", "placement.params:StrategyParams",
                                  "heuristic", ("load_model", "communication"),
                                  places_arrivals=True, objective=_FSR),
    "sprawl": StrategyEntry("placement.sprawl.core:plan_sprawl",
                            "placement.sprawl.params:SprawlParams", "exact", ("network",),
                            places_arrivals=True,
                            objective=SPRAWL_COST.certified_by("lower_bound")),
    "herding_offline": StrategyEntry(f"{_HERD}.strategies:plan_offline",
                                     f"{_HERD}.params:OfflineParams", "heuristic", ("sources",),
                                     places_arrivals=True, objective=_TRAFFIC),
    "herding_online": StrategyEntry(f"{_HERD}.strategies:plan_online",
                                    f"{_HERD}.params:OnlineParams", "heuristic", ("sources",),
                                    places_arrivals=True, objective=_TRAFFIC),
    "herding_exact": StrategyEntry(f"{_HERD}.exact:plan_exact", f"{_HERD}.params:ExactParams",
                                   "exact", ("sources",), places_arrivals=True,
                                   objective=_TRAFFIC),
    "cg": StrategyEntry("placement.consistent_grouping.core:plan_cg",
                        "placement.consistent_grouping.params:CgParams", "heuristic",
                        places_arrivals=True, objective=UTILISATION_IMBALANCE),
}
