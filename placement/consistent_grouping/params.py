"""Consistent Grouping's planner parameters (Nasir et al. §5.2.1, §6.1.2, §7.2): the busy / idle
thresholds, the relative variant, the `probe` destinations, the choice of the VW to move.

Absolute thresholds (§7.2) compare a node's utilisation U_w = L_w / c_w (a fraction of its
capacity) with `idle_below` (0.75) and `busy_above` (0.85). Relative thresholds (§6.1.2, where
loads and capacities are shares, so L_w / c_w = 1 is the fair share) compare U_w / Ū with θ_i
(`idle_ratio`, 0.9375) and θ_b (`busy_ratio`, 1.0625); at 80 % mean utilisation both give the
same bands. The number of VWs per worker (α) is the job's key groups per node, a property of
the runtime (`keygroups_per_node` of a replay job), not a planner parameter.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from placement.params import StrategyParams

__all__ = ["DEFAULT_BUSY_ABOVE", "DEFAULT_BUSY_RATIO", "DEFAULT_IDLE_BELOW",
           "DEFAULT_IDLE_RATIO", "CgParams", "VwChoice"]

DEFAULT_BUSY_ABOVE = 0.85
DEFAULT_IDLE_BELOW = 0.75
DEFAULT_BUSY_RATIO = 1.0625  # = 0.85 / 0.80
DEFAULT_IDLE_RATIO = 0.9375  # = 0.75 / 0.80

#: "balance": the VW whose move leaves the pair's larger utilisation lowest (equal VW loads, as
#: under PORC, tie: then the cheapest); "cheapest": the smallest migration cost (the paper's
#: load-blind FCFS choice, priced by reconf's direct state migration)
VwChoice = Literal["balance", "cheapest"]


class CgParams(StrategyParams):
    """Pairing virtual workers: one VW per (busy, destination) pair per signalling round."""

    relative: bool = Field(False, description="compare U_w / mean U with the ratios "
                           "(§6.1.2) instead of U_w with the absolute thresholds (§7.2)")
    busy_above: float = Field(DEFAULT_BUSY_ABOVE, gt=0, le=10,
                              description="busy when U_w > this (fraction of capacity)")
    idle_below: float = Field(DEFAULT_IDLE_BELOW, gt=0, le=10,
                              description="idle when U_w < this (fraction of capacity)")
    busy_ratio: float = Field(DEFAULT_BUSY_RATIO, gt=1, le=10,
                              description="theta_b > 1: busy when U_w / mean U > theta_b")
    idle_ratio: float = Field(DEFAULT_IDLE_RATIO, gt=0, lt=1,
                              description="theta_i < 1: idle when U_w / mean U < theta_i")
    probe: bool = Field(False, description="destinations are all non-busy nodes (§6.1.2), "
                        "not only idle ones (§5.2.1)")
    vw_choice: VwChoice = Field("balance", description="which VW of a busy node moves")
    rounds: int = Field(1, ge=1, le=1000, description="signalling rounds per cycle: after a "
                        "round the nodes signal again on the planned loads")

    @model_validator(mode="after")
    def _ordered(self) -> CgParams:
        """A node cannot be idle and busy at once: idle thresholds must lie below busy ones."""
        if not self.idle_below < self.busy_above:
            raise ValueError(f"thresholds out of order: need idle_below < busy_above, got "
                             f"idle_below={self.idle_below}, busy_above={self.busy_above}")
        return self
