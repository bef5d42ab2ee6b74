"""Parameters of the drain-then-balance baseline (paper §5.1, Figure 5)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from placement.params import MilpParams

__all__ = ["BALANCERS", "DrainParams"]

BALANCERS = ("milp", "flux", "greedy")


class DrainParams(MilpParams):
    """Drain B evenly, then balance A with `balancer`; the MILP's fields go to the balancer."""

    balancer: Literal["milp", "flux", "greedy"] = Field(
        "milp", description="what balances A once B is drained")

    weighs_b: ClassVar[bool] = False  # the drain comes first: w_b does not drive it
