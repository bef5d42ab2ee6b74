"""Fitting the linear load model (Xing et al. 2006 §2.2) from a job's own statistics.

Over the last K periods, unit j's measured load y_jt (% of a reference node, `keygroup_stats`)
and the input stream rates R_t (`stream_stats`) give K equations y_jt = Σ_k l_jk·r_kt. The
coefficients l_j ≥ 0 are the non-negative least-squares solution (`scipy.optimize.nnls`), one
small problem per unit. Rates that never vary together cannot separate their streams: the rate
matrix must have rank d (at least d periods whose rate vectors span the streams), else the fit
is refused with a clear error rather than splitting the load arbitrarily.

(The other route of the notes, costs and selectivities propagated along the dataflow, needs
per-edge selectivities that collocated key groups do not report; NNLS needs only what every job
lands.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placement.rod.model import LoadModelError

__all__ = ["Fit", "fit_load_model"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Fit:
    """The coefficients by unit and stream, and each unit's relative residual ‖Rl − y‖/‖y‖."""

    coefficients: Mapping[str, Mapping[str, float]]
    residual: Mapping[str, float]


def fit_load_model(units: Sequence[str], streams: Sequence[str], loads: Array,
                   rates: Array) -> Fit:
    """NNLS per unit: `loads` is K × m (periods × units), `rates` K × d (periods × streams)."""
    from scipy.optimize import nnls

    y, r = np.asarray(loads, dtype=float), np.asarray(rates, dtype=float)
    k, d = r.shape
    if y.shape != (k, len(units)) or d != len(streams):
        raise LoadModelError(f"load-model fit: loads are {y.shape} and rates {r.shape}; "
                             f"expected ({k}, {len(units)}) and ({k}, {len(streams)})")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(r))) or np.any(r < 0):
        raise LoadModelError("load-model fit: loads and rates must be finite, rates >= 0")
    rank = int(np.linalg.matrix_rank(r)) if k else 0
    if rank < d:
        raise LoadModelError(
            f"load-model fit: the stream rates of the last {k} period(s) have rank {rank} < "
            f"{d} streams, so the streams' loads cannot be told apart; fit over more periods "
            "(or periods whose rates vary independently)")
    coefficients: dict[str, dict[str, float]] = {}
    residual: dict[str, float] = {}
    for j, unit in enumerate(units):
        solution, norm = nnls(r, y[:, j])
        coefficients[unit] = {s: float(v) for s, v in zip(streams, solution, strict=True)}
        scale = float(np.linalg.norm(y[:, j]))
        residual[unit] = float(norm) / scale if scale > 0 else 0.0
    return Fit(coefficients, residual)
