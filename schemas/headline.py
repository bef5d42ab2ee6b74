"""The headline an operator reads first: the in-force strategy's own objective, before → after.

Every plan's numbers reach MLflow under one naming (`<name>_before`, `<name>_after`, the MILP's
and SPRAWL's `lower_bound`, a facet bound as `<bound>_after`; jobs/tracking/store.py), and
every strategy declares its objective in the strategy table (schemas/strategies.py). So one
function writes the headline for the plan stage's summary line, the MLflow description's first
line, `reconf audit` and the demo, from a plain mapping of those metrics: a Herding job leads
with stream traffic, a SPRAWL job with its cost and the bound that certifies it, and load
distance follows as the secondary column (unless it is the objective).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping

from schemas.strategies import LOAD_DISTANCE, STRATEGIES, Objective

__all__ = ["bound_of", "fmt", "headline", "objective_for", "values_of"]


def objective_for(strategy: str | None) -> Objective:
    """The declared objective of `strategy`; load distance for an unknown or missing name (an
    old run logged before the strategy existed, or a run without the strategy's tag)."""
    entry = STRATEGIES.get(strategy or "")
    return LOAD_DISTANCE if entry is None else entry.objective


def fmt(value: float | None) -> str:
    """A metric for a line of text: 3 decimals up to 10^4, 4 significant digits above."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value) or abs(value) >= sys.float_info.max:  # MLflow stores inf as the max
        return "inf" if value > 0 else "-inf"
    return format(value, ".3f") if abs(value) < 1e4 else format(value, ".4g")


def values_of(objective: Objective, metrics: Mapping[str, float]
              ) -> tuple[float | None, float | None]:
    """(before, after) of `objective` in run metrics named `<name>_before` / `<name>_after`."""
    return (metrics.get(f"{objective.name}_before"), metrics.get(f"{objective.name}_after"))


def bound_of(objective: Objective, metrics: Mapping[str, float]) -> float | None:
    """The number certifying `objective` in run metrics, None when it has none."""
    if objective.bound is None:
        return None
    key = "lower_bound" if objective.bound == "lower_bound" else f"{objective.bound}_after"
    value = metrics.get(key)
    return None if value is None or not math.isfinite(value) else value


def headline(strategy: str | None, metrics: Mapping[str, float], *, arrow: str = "->",
             secondary: bool = True) -> str:
    """"SPRAWL cost 1.19e+06 -> 6.0e+05 (min, lower bound 5.97e+05); load distance 12.810 ->
    53.230": the objective first, with its direction and bound, LD second."""
    objective = objective_for(strategy)
    before, after = values_of(objective, metrics)
    bound = bound_of(objective, metrics)
    extra = objective.direction + (f", {'lower' if objective.direction == 'min' else 'upper'}"
                                   f" bound {fmt(bound)}" if bound is not None else "")
    if before is None and after is None and objective.unavailable:  # ROD before its load model
        extra += f"; {objective.unavailable}"
    text = f"{objective.label} {fmt(before)} {arrow} {fmt(after)} ({extra})"
    if secondary and objective is not LOAD_DISTANCE and objective.name != LOAD_DISTANCE.name:
        ld_before, ld_after = values_of(LOAD_DISTANCE, metrics)
        text += f"; {LOAD_DISTANCE.label} {fmt(ld_before)} {arrow} {fmt(ld_after)}"
    return text
