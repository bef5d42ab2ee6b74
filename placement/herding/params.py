"""Herding's parameters (Zong et al. 2015): the balance slack ν (eq. 1), α (eq. 4), the algorithm.

Defaults are the paper's §6.1 settings: ν = 0.05 for the offline and the online algorithms,
α = 10 for the online relaxed balance rule (eq. 4).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from placement.params import StrategyParams

__all__ = ["DEFAULT_ALPHA", "DEFAULT_NU", "ExactParams", "OfflineAlgorithm", "OfflineParams",
           "OnlineMetric", "OnlineParams", "ThetaMode"]

DEFAULT_NU = 0.05
DEFAULT_ALPHA = 10.0

OfflineAlgorithm = Literal["ic", "mms", "mqp", "single_source", "offrand"]
OnlineMetric = Literal["least_cost", "least_source", "least_qt", "onrand", "round_robin"]
#: MQP's θ (eq. 3): "saturate" fills the server to its capacity (App. C's reading); "eq3" is
#: the literal n − (1+ν)(k−1)n/k, clamped to at least one query (it is negative at ν=0.05)
ThetaMode = Literal["saturate", "eq3"]


class OfflineParams(StrategyParams):
    """An offline algorithm of §4 (IC, MMS, MQP, Fig. 2, OffRand) and the balance slack ν."""

    algorithm: OfflineAlgorithm = Field("ic", description="the offline algorithm (§4, §6.1)")
    nu: float = Field(DEFAULT_NU, ge=0, le=10,
                      description="ν, the relative balance slack of eq. 1")
    theta: ThetaMode = Field("saturate", description="MQP's θ: 'saturate' or the literal 'eq3'")


class OnlineParams(StrategyParams):
    """An online metric of §5.1 (or a baseline) and the relaxed balance rule of eq. 4."""

    metric: OnlineMetric = Field("least_cost", description="the online metric M (§5.1, §6)")
    nu: float = Field(DEFAULT_NU, ge=0, le=10,
                      description="ν, the relative balance slack of eq. 4")
    alpha: float = Field(DEFAULT_ALPHA, ge=0, le=1e9,
                         description="α, the absolute balance slack of eq. 4")
    known_types: bool = Field(
        False, description="§5.2.1: reserve room per query type from an offline plan of the "
        "known type distribution, then place arrivals into their reservations")
    reservations: OfflineAlgorithm = Field(
        "ic", description="the offline algorithm that computes the §5.2.1 reservations")


class ExactParams(StrategyParams):
    """The exact MILP for QA (eq. 1 as the constraint), solved by HiGHS within time_limit_s."""

    nu: float = Field(DEFAULT_NU, ge=0, le=10,
                      description="ν, the relative balance slack of eq. 1")
    max_units: int = Field(2000, ge=1, description="refuse (keep the heuristic plan) above "
                           "this many units: the MILP is for small instances")
    gap_rel: float = Field(1e-6, ge=0, description="the solver's relative MIP gap")
