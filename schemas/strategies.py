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
`constraints`: the kinds of topology constraint (schemas/constraints.py `KINDS`) the strategy
holds in every plan; the config loader refuses a job whose strategy does not hold one the job
declares, and the registry's post-check verifies every plan against them. The MILP holds them
as rows of its model, greedy by moving only where they stay kept (placement/constraints.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from schemas.constraints import KINDS

__all__ = ["PIPELINE_PARAMS", "STRATEGIES", "StrategyEntry"]

#: parameters the pipeline sets from the job's own fields, never from `strategy_params`
PIPELINE_PARAMS: Mapping[str, str] = {"time_limit_s": "solver_time_limit_s"}


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


_MILP, _ALBIC, _BASE = "placement.milp", "placement.albic", "placement.baselines"
_ROD = "placement.rod.strategy"
_HERD = "placement.herding"

STRATEGIES: Mapping[str, StrategyEntry] = {
    "milp": StrategyEntry(f"{_MILP}.core:plan_milp", "placement.params:MilpParams", "exact",
                          constraints=KINDS),
    "albic": StrategyEntry(f"{_ALBIC}.core:plan_albic", f"{_ALBIC}.params:AlbicParams", "exact",
                           ("communication",)),
    "albic_many": StrategyEntry(f"{_ALBIC}.core:plan_albic_many",
                                f"{_ALBIC}.params:AlbicManyParams", "exact", ("communication",)),
    "flux": StrategyEntry(f"{_BASE}.flux:plan_flux", "placement.params:StrategyParams",
                          "heuristic"),
    "greedy": StrategyEntry(f"{_BASE}.greedy:plan_greedy", "placement.params:StrategyParams",
                            "heuristic", constraints=KINDS),
    "random": StrategyEntry(f"{_BASE}.random_moves:plan_random", f"{_BASE}.params:RandomParams",
                            "heuristic"),
    "cola": StrategyEntry(f"{_BASE}.cola:plan_cola", f"{_BASE}.params:ColaParams", "heuristic",
                          ("communication",), keeps_budget=False),
    "drain_then_balance": StrategyEntry("placement.scaling.drain:plan_drain_then_balance",
                                        "placement.scaling.params:DrainParams", "heuristic"),
    "rod": StrategyEntry(f"{_ROD}:plan_rod", "placement.rod.params:RodParams", "heuristic",
                         ("load_model",), places_arrivals=True),
    "llf": StrategyEntry(f"{_ROD}:plan_llf", "placement.params:StrategyParams", "heuristic",
                         ("load_model",), places_arrivals=True),
    "connected_lb": StrategyEntry(f"{_ROD}:plan_connected_lb", "placement.params:StrategyParams",
                                  "heuristic", ("load_model", "communication"),
                                  places_arrivals=True),
    "sprawl": StrategyEntry("placement.sprawl.core:plan_sprawl",
                            "placement.sprawl.params:SprawlParams", "exact", ("network",),
                            places_arrivals=True),
    "herding_offline": StrategyEntry(f"{_HERD}.strategies:plan_offline",
                                     f"{_HERD}.params:OfflineParams", "heuristic", ("sources",),
                                     places_arrivals=True),
    "herding_online": StrategyEntry(f"{_HERD}.strategies:plan_online",
                                    f"{_HERD}.params:OnlineParams", "heuristic", ("sources",),
                                    places_arrivals=True),
    "herding_exact": StrategyEntry(f"{_HERD}.exact:plan_exact", f"{_HERD}.params:ExactParams",
                                   "exact", ("sources",), places_arrivals=True),
    "cg": StrategyEntry("placement.consistent_grouping.core:plan_cg",
                        "placement.consistent_grouping.params:CgParams", "heuristic",
                        places_arrivals=True),
}
