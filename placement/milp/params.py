"""The MILP's parameters (paper §4.3.1): the objective's weights and the solve's knobs."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from placement.params import ResourceCaps, StrategyParams

__all__ = ["DEFAULT_W1", "DEFAULT_W2", "DEFAULT_WB", "MilpParams"]

DEFAULT_W1 = 1.0
DEFAULT_WB = 1e-4
DEFAULT_W2 = 1e-6


class MilpParams(StrategyParams):
    """min w1·d − w2·(d_u + d_l) + w_b·Σ_{n_i∈B} load_i with w1 ≫ w_b ≫ w2."""

    w1: float = Field(DEFAULT_W1, description="w1, weight of the load distance d")
    w2: float = Field(DEFAULT_W2, ge=0, description="w2, weight of the slacks d_u + d_l")
    w_b: float = Field(DEFAULT_WB, ge=0, description="w_b, weight of the load left on B")
    resource_caps: ResourceCaps | None = Field(
        None, description="caps[r] per resource, in reference-node units (constraint (R))")
    candidates: Literal["auto", "all"] = Field(
        "auto", description="'all': the full model; 'auto': LNS first above AUTO_MAX_VARS")
    gap_rel: float = Field(1e-6, ge=0, description="the solver's relative MIP gap")

    weighs_b: ClassVar[bool] = True

    @model_validator(mode="after")
    def _w1_dominates(self) -> MilpParams:
        """d must dominate the slacks: with w1 ≤ 2·w2 widening both slacks pays for a worse d."""
        if not self.w1 > 2 * self.w2:
            raise ValueError(f"weights need w1 > 2·w2 (w1 ≫ w_b ≫ w2), got w1={self.w1}, "
                             f"w2={self.w2}")
        return self
