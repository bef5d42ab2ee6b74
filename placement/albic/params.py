"""ALBIC's parameters (paper §4.3.2, Algorithm 2): maxLD, maxPL, stepPL, sF."""

from __future__ import annotations

from pydantic import Field

from placement.params import ResourceCaps, StrategyParams

__all__ = ["DEFAULT_MAX_LD", "DEFAULT_MAX_PL", "DEFAULT_PAIR_SHARE", "DEFAULT_SF",
           "DEFAULT_STEP_PL", "AlbicManyParams", "AlbicParams"]

DEFAULT_MAX_LD = 10.0
DEFAULT_MAX_PL = 25.0
DEFAULT_STEP_PL = 5.0
DEFAULT_SF = 1.5
DEFAULT_PAIR_SHARE = 0.5


class AlbicParams(StrategyParams):
    """The paper's ALBIC: one beneficial pair per invocation."""

    max_ld: float = Field(DEFAULT_MAX_LD, ge=0,
                          description="maxLD, the load distance accepted, percentage points")
    max_pl: float = Field(DEFAULT_MAX_PL, gt=0, le=100,
                          description="maxPL, the largest partition load, % of a reference node")
    step_pl: float = Field(DEFAULT_STEP_PL, gt=0, description="stepPL, maxPL's step down")
    s_f: float = Field(DEFAULT_SF, gt=0,
                       description="sF, a pair is beneficial above avg(out)·sF")
    resource_caps: ResourceCaps | None = Field(
        None, description="caps[r] per resource, passed to the MILP (constraint (R))")


class AlbicManyParams(AlbicParams):
    """ALBIC adding as many pairs per invocation as `pair_share` of the budget allows."""

    pair_share: float = Field(DEFAULT_PAIR_SHARE, gt=0, le=1,
                              description="the share of the budget pins may spend")
