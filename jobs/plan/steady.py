"""The job's stability policy on the period's plan (placement/stability.py), with the history it
needs from the lake: the moves of the newest published periods.

The plan then carries the oscillation count as a facet metric, so MLflow logs
`oscillations_before` (units moved back onto a node they left, over the job's window of
published periods) and `oscillations_after` (the same window with this plan's moves), and
`reconf audit` shows both.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from jobs.lake import Lake
from placement.model import ClusterState, Plan
from placement.stability import Stability, oscillations, stabilise
from schemas.config import StabilityConfig

__all__ = ["steady"]


def steady(lake: Lake, job_id: str, end: datetime, config: StabilityConfig,
           state: ClusterState, plan: Plan) -> Plan:
    """`plan` under the job's band and cooldown, with its oscillation counts."""
    history = lake.published_moves(job_id, end, max(config.cooldown_periods,
                                                    config.window_periods))
    out = stabilise(state, plan, Stability(config.band, config.cooldown_periods), history)
    window = history[-config.window_periods:] if config.window_periods > 0 else []
    moves = [(m.keygroup, m.src, m.dst) for m in out.moves]
    return replace(out, facet_metrics={**out.facet_metrics,
                                       "oscillations": float(oscillations([*window, moves]))},
                   facet_before={**out.facet_before,
                                 "oscillations": float(oscillations(window))})
