"""Herding: placing many small queries that share sources (Zong et al. 2015).

Modules: `params` (typed parameters), `instance` (the array form of a QA instance, eq. 1's
caps), `metrics` (traffic, replication factor, balance, lower bounds), `offline` (IC, MMS,
MQP, Fig. 2, OffRand), `online` (Fig. 3 with eq. 4: LeastCost, LeastSource, LeastQT, OnRand,
round robin), `migrate` (a target within the budget; the Plan), `strategies` (the registered
`herding_offline` and `herding_online`), `exact` (the MILP, `herding_exact`).
"""
from typing import TYPE_CHECKING

from placement.exports import lazy

if TYPE_CHECKING:
    from placement.herding.metrics import (
        query_balance,
        replication_factor,
        stream_traffic,
        traffic_lower_bound,
    )

# lazy, as every family's `__init__`: the config loader imports `herding.params` (pydantic
# only), which must not import numpy through this package
__getattr__ = lazy(__name__, dict.fromkeys(
    ("query_balance", "replication_factor", "stream_traffic", "traffic_lower_bound"),
    "placement.herding.metrics"))

__all__ = ["query_balance", "replication_factor", "stream_traffic", "traffic_lower_bound"]
