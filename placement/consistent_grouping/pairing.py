"""Pairing virtual workers (Nasir et al. §5.2.1, §6.1.2): pure functions a simulator reuses.

A worker w with capacity c_w and load L_w has utilisation U_w = L_w / c_w. It signals *busy*
above θ_b and *idle* below θ_i (`Thresholds`: absolute on U_w as in §7.2, or relative on
U_w / Ū as in §6.1.2). The upstream keeps two FCFS queues and pairs each busy signal with an
idle one, moving one VW from the busy worker to the idle one; an unpaired signal moves nothing,
so the number of VWs never changes (§5.2.1). With `probe` (§6.1.2) a busy worker's VW may go to
any worker that is not busy.

One call of `pair_step` is one signalling round: every worker signals at once, so "first come"
is decided by how far a worker is past its threshold (the busiest first, the idlest first; then
the lower index). The capacity-proportional optimum is α*_w = c_w·n·α with Σc = 1 (§6.1.2),
i.e. the VW total split in proportion to capacity (`optimal_vws`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Thresholds", "classify", "imbalance", "normalized_imbalance", "optimal_vws",
           "pair_step"]


@dataclass(frozen=True)
class Thresholds:
    """θ_b and θ_i: on U_w (absolute, §7.2) or on U_w / Ū (relative, §6.1.2)."""

    busy: float = 0.85
    idle: float = 0.75
    relative: bool = False

    def __post_init__(self) -> None:
        if not (np.isfinite(self.busy) and np.isfinite(self.idle)) or not (
                0 < self.idle < self.busy):
            raise ValueError(f"thresholds need 0 < idle < busy, got idle={self.idle}, "
                             f"busy={self.busy}")


def _as_array(values: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    out = np.asarray(values, dtype=np.float64)
    if out.ndim != 1 or not np.all(np.isfinite(out)):
        raise ValueError(f"{what} must be a one-dimensional array of finite numbers")
    return out


def classify(utilisation: Sequence[float] | np.ndarray, thresholds: Thresholds,
             capacity: Sequence[float] | np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """(busy, idle) masks: U_w > θ_b and U_w < θ_i.

    Relative: U_w / Ū with Ū = ΣL / Σc (`capacity` given; §6.1.2 normalises loads and
    capacities to shares, so L_w ≥ θ_b·c_w reads U_w ≥ θ_b·ΣL/Σc), else the plain mean of U.
    """
    u = _as_array(utilisation, "utilisation")
    if thresholds.relative:
        if capacity is None:
            mean = float(u.mean()) if len(u) else 0.0
        else:
            cap = _as_array(capacity, "capacity")
            mean = float((u * cap).sum() / cap.sum()) if cap.sum() > 0 else 0.0
        u = u / mean if mean > 0 else np.ones_like(u)
    return u > thresholds.busy, u < thresholds.idle


def pair_step(utilisation: Sequence[float] | np.ndarray, vws: Sequence[int] | np.ndarray,
              thresholds: Thresholds = Thresholds(), *, probe: bool = False,
              max_moves: int | None = None,
              eligible: Sequence[bool] | np.ndarray | None = None,
              capacity: Sequence[float] | np.ndarray | None = None) -> list[tuple[int, int]]:
    """One round of pairing: (source, destination) worker indices, one VW to move per pair.

    Sources are the busy workers holding a VW, busiest first; destinations the idle workers
    (`probe`: every worker not busy), idlest first; they pair in order until either queue or
    `max_moves` runs out. `eligible[w]` False keeps w from being a destination (a worker being
    drained); `capacity` is the Ū of relative thresholds (`classify`); the VW total is
    unchanged by construction.
    """
    u = _as_array(utilisation, "utilisation")
    counts = np.asarray(vws)
    if counts.shape != u.shape:
        raise ValueError(f"vws must have one count per worker ({len(u)}), got shape "
                         f"{counts.shape}")
    busy, idle = classify(u, thresholds, capacity)
    dest = ~busy if probe else idle
    if eligible is not None:
        dest = dest & np.asarray(eligible, dtype=bool)
    order = np.arange(len(u))
    src_idx = order[busy & (counts > 0)]
    dst_idx = order[dest]
    src_idx = src_idx[np.lexsort((src_idx, -u[src_idx]))]
    dst_idx = dst_idx[np.lexsort((dst_idx, u[dst_idx]))]
    pairs = min(len(src_idx), len(dst_idx))
    if max_moves is not None:
        pairs = min(pairs, max(0, max_moves))
    return list(zip(src_idx[:pairs].tolist(), dst_idx[:pairs].tolist(), strict=True))


def optimal_vws(capacity: Sequence[float] | np.ndarray, total: int) -> np.ndarray:
    """α*_w = c_w·n·α with Σc = 1: `total` VWs in proportion to capacity (not rounded)."""
    cap = _as_array(capacity, "capacity")
    if np.any(cap <= 0):
        raise ValueError("capacity must be > 0 for every worker")
    return total * cap / cap.sum()


def imbalance(utilisation: Sequence[float] | np.ndarray) -> float:
    """I = max_w U_w − avg_w U_w (§3; the plain mean over workers)."""
    u = _as_array(utilisation, "utilisation")
    return float(u.max() - u.mean()) if len(u) else 0.0


def normalized_imbalance(utilisation: Sequence[float] | np.ndarray) -> float:
    """I / avg_w U_w (Table 1's normalisation); 0 for an idle cluster."""
    u = _as_array(utilisation, "utilisation")
    mean = float(u.mean()) if len(u) else 0.0
    return imbalance(u) / mean if mean > 0 else 0.0
