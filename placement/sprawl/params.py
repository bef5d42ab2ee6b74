"""SPRAWL's parameters (Mei 2015): β of Formula 3.1, the objective, the constraints, the budget.

Queries (a sink unit, its latency bound L_q and its client site) usually come from the job's
topology file (placement/sprawl/topology.py); they may also be given here.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from placement.params import StrategyParams

__all__ = ["SprawlParams", "SprawlQuery"]


class SprawlQuery(BaseModel):
    """A query q: the unit that delivers its results, L_q in ms, the client's site."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=True)

    id: str = Field(min_length=1, description="the query's name")
    sink: str = Field(min_length=1, description="the unit that delivers the results")
    latency_bound_ms: float = Field(math.inf, gt=0, description="L_q, ms (inf: none)")
    client: str | None = Field(None, description="the client's site (default: the sink's pin)")


class SprawlParams(StrategyParams):
    """Formula 3.1 and how the DP keeps it, plus reconf's migration budget (docs/algorithms.md)."""

    beta: float = Field(1.0, gt=0, description="β, the weight of BWCost against CPUCost (Eq. 3.3)")
    objective: Literal["resource", "sbon"] = Field(
        "resource", description="'resource': Formula 3.1; 'sbon': Formula 6.1 (BW·Lat², no CPU)")
    constraints: Literal["none", "resources", "all"] = Field(
        "all", description="'none': Algorithm 1; 'resources': Algorithm 2 (CPU, bandwidth); "
        "'all': Algorithm 3 (and latency bounds)")
    budget_mode: Literal["move_cost", "repair"] = Field(
        "move_cost", description="'move_cost': λ·mc_k added to CPUCost off the current node, λ "
        "bisected to fit the budget; 'repair': re-place only violating units (§5.4.1)")
    queries: list[SprawlQuery] = Field(
        default_factory=list, description="queries with latency bounds and clients")
    milp_max_vars: int = Field(
        20_000, ge=0, description="run the exact MILP for the certified gap up to this many "
        "variables (0: never)")
