"""Parameters of ROD (Xing et al. 2006 §5–§6); LLF and Connected-LB take only the shared ones."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from placement.params import StrategyParams

__all__ = ["RodParams"]


class RodParams(StrategyParams):
    """ROD's choices where the paper is silent or self-contradictory (docs/algorithms.md, ROD)."""

    class2: Literal["max", "min"] = Field(
        "max", description="Class II node: the max candidate plane distance (§5.2) or the "
        "literal 'min' of Fig. 10")
    sort: Literal["raw", "normalised"] = Field(
        "raw", description="phase 1 sort key: ‖L^o_j‖ raw (Fig. 10) or over l_k (§3.3)")
    use_lower_bound: bool = Field(
        True, description="§6.1: plane distances from B (the streams' min_rate), not the origin")
    cluster: bool = Field(
        False, description="§6.3: cluster units over the threshold × cap grid (needs the "
        "communication facet and comm_cost > 0)")
    comm_cost: float = Field(
        0.0, ge=0, description="load (in % of a reference node) one unit of edge rate costs "
        "on each end node when the edge crosses nodes")
    approach: Literal[1, 2] = Field(
        2, description="§6.3 clustering approach: 1 largest ratio, 2 least merged weight")

