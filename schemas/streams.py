"""`[jobs.<id>.load_model]`: a job's declared input streams (ROD, Xing et al. 2006 §2.2).

A job that declares its input streams lands their per-period rates (schemas/landing.py
``streams/``, Delta ``stream_stats``); collect then fits each unit's load coefficients on them over
the last `periods` periods (jobs/facets/load_model.py, Delta ``load_model``), and the plan stage gives the
planner the streams (`min_rate`: the lower bounds of §6.1) and the coefficients as facets.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LoadModelConfig", "parse_load_model"]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$")
_KEYS = {"streams", "min_rate", "periods"}


@dataclass(frozen=True)
class LoadModelConfig:
    """The declared streams, optional lower bounds b_k on their rates, and K (periods fitted)."""

    streams: tuple[str, ...]
    min_rate: Mapping[str, float] = field(default_factory=dict)
    periods: int = 6


def parse_load_model(raw: object) -> LoadModelConfig:
    """The table as a `LoadModelConfig`; ValueError names the field and the rule."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"must be a table (streams, min_rate, periods), got {raw!r}")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(_KEYS))}")
    streams = raw.get("streams")
    if (not isinstance(streams, list) or not streams
            or not all(isinstance(s, str) and _ID.match(s) for s in streams)):
        raise ValueError(f"streams: must be a non-empty list of stream ids (letters, digits, "
                         f"'_', '.', ':', '-'), got {streams!r}")
    if len(set(streams)) != len(streams):
        raise ValueError(f"streams: each stream once, got {streams!r}")
    bounds: dict[str, float] = {}
    for stream, value in dict(raw.get("min_rate") or {}).items():
        if stream not in streams:
            raise ValueError(f"min_rate.{stream}: not a declared stream; declared: "
                             f"{', '.join(streams)}")
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or value < 0:
            raise ValueError(f"min_rate.{stream}: must be a finite rate >= 0 (tuples/s), "
                             f"got {value!r}")
        bounds[stream] = float(value)
    periods: Any = raw.get("periods", 6)
    if type(periods) is not int or not len(streams) <= periods <= 1000:
        raise ValueError(f"periods: must be an integer between the number of streams "
                         f"({len(streams)}: NNLS needs at least one period per stream) and 1000, "
                         f"got {periods!r}")
    return LoadModelConfig(tuple(streams), bounds, periods)
