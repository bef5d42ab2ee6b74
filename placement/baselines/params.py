"""Parameters of the baselines: COLA's target balance, random's number of moves.

Flux and greedy take none beyond the shared ones (`StrategyParams`).
"""

from __future__ import annotations

from pydantic import Field

from placement.params import StrategyParams

__all__ = ["DEFAULT_COLA_MAX_LD", "ColaParams", "RandomParams"]

DEFAULT_COLA_MAX_LD = 10.0


class ColaParams(StrategyParams):
    """COLA splits partitions until the placement's load distance is at most `max_ld`."""

    max_ld: float = Field(DEFAULT_COLA_MAX_LD, ge=0,
                          description="the sufficient load balance, percentage points")


class RandomParams(StrategyParams):
    """Random migrations: at most `moves` (default: the budget, or a tenth of the key groups)."""

    moves: int | None = Field(None, ge=0, description="the most migrations to make")
