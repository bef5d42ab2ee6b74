"""ALBIC's parameters (paper §4.3.2, Algorithm 2): maxLD, maxPL, stepPL, sF."""

from __future__ import annotations

from pydantic import Field

from placement.params import ResourceCaps, StrategyParams

__all__ = ["DEFAULT_LEVEL_WORK", "DEFAULT_MAX_LD", "DEFAULT_MAX_PL", "DEFAULT_PAIR_SHARE",
           "DEFAULT_SF", "DEFAULT_STEP_PL", "LEVEL_OVERHEAD", "AlbicManyParams", "AlbicParams"]

DEFAULT_MAX_LD = 10.0
DEFAULT_MAX_PL = 25.0
DEFAULT_STEP_PL = 5.0
DEFAULT_SF = 1.5
DEFAULT_PAIR_SHARE = 0.5
#: the maxPL levels' work budget, in key-group levels: a level (steps 2-4) costs |K| +
#: LEVEL_OVERHEAD of it, so all five of the paper's levels run up to 4,500 key groups, fewer
#: above, none from 24,501 (placement/albic/core.py; docs/algorithms.md, "Recursion")
DEFAULT_LEVEL_WORK = 25_000
#: a level's fixed cost (METIS, a HiGHS model, the level's plan) in key-group equivalents
LEVEL_OVERHEAD = 500


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
    level_work: int = Field(
        DEFAULT_LEVEL_WORK, ge=1, description="the maxPL levels' work budget in key-group "
        "levels (a level costs |K| + 500): levels stop on it, not on the clock, so the plan is "
        "reproducible; the time limit stays the safety net")


class AlbicManyParams(AlbicParams):
    """ALBIC adding as many pairs per invocation as `pair_share` of the budget allows."""

    pair_share: float = Field(DEFAULT_PAIR_SHARE, gt=0, le=1,
                              description="the share of the budget pins may spend")
