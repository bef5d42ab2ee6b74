"""How resilient a weight matrix W is (Xing et al. 2006 §3–§4, §6.1): F/F*, r/r*, MMAD bound.

All in the normalised space (§3.3): the feasible set F = {x ≥ B' : W·x ≤ 1} and the ideal
feasible set F* = {x ≥ B' : Σ_k x_k ≤ 1}, B' the normalised lower bound (0 without §6.1).
Since Σ_i (C_i/C_T)·W_i = (1, …, 1) for every plan, F ⊆ F*, so the feasible-set ratio F/F*
is the share of F* where no node is overloaded.

- `feasible_set_ratio`: exact where d is small (the polytope's vertices by
  `scipy.spatial.HalfspaceIntersection`, its volume by `ConvexHull`; d = 1 by hand), else
  randomized quasi-Monte Carlo: R independently scrambled Sobol sequences
  (`scipy.stats.qmc.Sobol`) mapped onto F* by stick-breaking (the smooth inverse-CDF map of
  the uniform Dirichlet, so the low discrepancy survives), the mean of the R replicate
  estimates, and a 95 % Student-t interval over them. `tol` doubles the points per replicate
  until the half-width is at most `tol`.
- `plane_distance`: r = min_i (1 − W_i·B') / ‖W_i‖ (§4.2, §6.1); r* = (1 − ΣB') / √d.
- `mmad_bound`: Π_k min_i 1/w_ik (§4.1), a lower bound of F/F* (origin only): the simplex
  with axis intercepts min_i 1/w_ik lies inside every node's half-space.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["EXACT_MAX_D", "Estimate", "exact_ratio", "feasible_set_ratio", "mmad_bound",
           "plane_distance", "plane_distance_ratio", "qmc_ratio", "simplex_points"]

Array = NDArray[np.float64]
#: "auto" computes the volume exactly up to this many streams, by QMC above
EXACT_MAX_D = 3


@dataclass(frozen=True)
class Estimate:
    """F/F* with its 95 % half-width (0 when exact) and the points it took (0 when exact)."""

    value: float
    half_width: float
    points: int
    exact: bool

    @property
    def low(self) -> float:
        return max(0.0, self.value - self.half_width)

    @property
    def high(self) -> float:
        return min(1.0, self.value + self.half_width)


def _prepare(w: Array, lower: Array | None) -> tuple[Array, Array]:
    w = np.atleast_2d(np.asarray(w, dtype=float))
    b = np.zeros(w.shape[1]) if lower is None else np.asarray(lower, dtype=float)
    if b.shape != (w.shape[1],) or np.any(b < 0):
        raise ValueError(f"lower bound B' must be {w.shape[1]} numbers >= 0, got {b!r}")
    return w, b


def plane_distance(w: Array, lower: Array | None = None) -> float:
    """r = min_i (1 − W_i·B') / ‖W_i‖ (Fig. 10 with §6.1); nodes with W_i = 0 never bind."""
    w, b = _prepare(w, lower)
    norms = np.linalg.norm(w, axis=1)
    loaded = norms > 0
    if not np.any(loaded):
        return math.inf
    return float(np.min((1.0 - w[loaded] @ b) / norms[loaded]))


def plane_distance_ratio(w: Array, lower: Array | None = None) -> float:
    """r / r*, r* = (1 − ΣB') / √d the distance from B' to the ideal hyperplane."""
    w, b = _prepare(w, lower)
    ideal = (1.0 - b.sum()) / math.sqrt(w.shape[1])
    return plane_distance(w, b) / ideal if ideal > 0 else 0.0


def mmad_bound(w: Array) -> float:
    """Π_k min_i 1/w_ik, capped at 1: a lower bound of F/F* (§4.1, origin as the bound)."""
    w = np.atleast_2d(np.asarray(w, dtype=float))
    top = w.max(axis=0)
    return float(np.prod(1.0 / np.maximum(top, 1.0)))


def _ideal_volume(d: int, room: float) -> float:
    return room**d / math.factorial(d)


def exact_ratio(w: Array, lower: Array | None = None) -> float:
    """vol(F ∩ F*) / vol(F*) exactly: the polytope's vertices (Qhull), then its hull volume."""
    from scipy.optimize import linprog
    from scipy.spatial import ConvexHull, HalfspaceIntersection, QhullError

    w, b = _prepare(w, lower)
    d = w.shape[1]
    room = 1.0 - b.sum()
    if room <= 0:
        return 0.0
    rows = w[np.linalg.norm(w, axis=1) > 0]
    if d == 1:
        top = 1.0 if rows.size == 0 else min(1.0, float(np.min(1.0 / rows[:, 0])))
        return max(0.0, top - b[0]) / room
    # A·x ≤ c: the nodes, Σx ≤ 1, x ≥ B'
    a = np.vstack([rows, np.ones((1, d)), -np.eye(d)])
    c = np.concatenate([np.ones(len(rows) + 1), -b])
    norms = np.linalg.norm(a, axis=1)
    # Chebyshev centre: max t s.t. A·x + t·‖A_i‖ ≤ c, a strictly interior point
    res = linprog(np.r_[np.zeros(d), -1.0], A_ub=np.c_[a, norms], b_ub=c,
                  bounds=[(None, None)] * d + [(0, None)], method="highs")
    if res.status != 0 or res.x[-1] <= 1e-12:
        return 0.0
    try:
        hs = HalfspaceIntersection(np.c_[a, -c], res.x[:d])
        volume = ConvexHull(hs.intersections).volume
    except QhullError:  # a sliver Qhull cannot resolve: fall back to a fine QMC estimate
        return qmc_ratio(w, b, points=1 << 14).value
    return float(min(1.0, volume / _ideal_volume(d, room)))


def simplex_points(u: Array) -> Array:
    """Uniform points of the corner simplex {y ≥ 0, Σy ≤ 1} from points of the unit cube.

    Stick-breaking of the uniform Dirichlet on d + 1 parts: v_k = 1 − (1 − u_k)^(1/(d+1−k)),
    y_k = v_k·Π_{j<k}(1 − v_j). Smooth and one-to-one, so a low-discrepancy u stays so.
    """
    n, d = u.shape
    y = np.empty_like(u)
    rest = np.ones(n)
    for k in range(d):
        v = 1.0 - (1.0 - u[:, k]) ** (1.0 / (d - k))
        y[:, k] = v * rest
        rest = rest * (1.0 - v)
    return y


def _feasible_share(w: Array, b: Array, room: float, u: Array) -> float:
    x = b + room * simplex_points(u)
    ok = np.ones(len(x), dtype=bool)
    for start in range(0, len(x), 65536):  # bounded memory at many nodes
        part = x[start:start + 65536]
        ok[start:start + 65536] = np.all(part @ w.T <= 1.0 + 1e-12, axis=1)
    return float(ok.mean())


def qmc_ratio(w: Array, lower: Array | None = None, *, points: int = 512, replicates: int = 8,
              seed: int = 0, tol: float | None = None, max_points: int = 1 << 17) -> Estimate:
    """F/F* by randomized QMC: `replicates` scrambled Sobol sequences of `points` each (a power
    of 2); with `tol`, the points per replicate double until the 95 % half-width ≤ tol."""
    from scipy import stats

    w, b = _prepare(w, lower)
    if replicates < 2:
        raise ValueError("qmc_ratio: at least 2 replicates are needed for an interval")
    d = w.shape[1]
    room = 1.0 - b.sum()
    if room <= 0:
        return Estimate(0.0, 0.0, 0, True)
    rows = w[np.linalg.norm(w, axis=1) > 0]
    if rows.size == 0:
        return Estimate(1.0, 0.0, 0, True)
    m = max(1, math.ceil(math.log2(max(points, 2))))
    t = float(stats.t.ppf(0.975, replicates - 1))
    rng = np.random.default_rng(seed)
    engines = [stats.qmc.Sobol(d, scramble=True, seed=rng) for _ in range(replicates)]
    sums = np.zeros(replicates)
    drawn = 0
    n = 1 << m
    while True:
        for r, engine in enumerate(engines):  # the next n points of each replicate
            sums[r] += _feasible_share(rows, b, room, engine.random(n)) * n
        drawn += n
        means = sums / drawn
        half = t * float(np.std(means, ddof=1)) / math.sqrt(replicates)
        if tol is None or half <= tol or drawn * 2 > max_points:
            return Estimate(float(means.mean()), half, drawn * replicates, False)
        n = drawn  # doubling: a Sobol prefix of 2^k points stays balanced


def feasible_set_ratio(w: Array, lower: Array | None = None, *, method: str = "auto",
                       points: int = 512, replicates: int = 8, seed: int = 0,
                       tol: float | None = None) -> Estimate:
    """F/F*: "exact" (Qhull), "qmc", or "auto" (exact up to `EXACT_MAX_D` streams)."""
    w, b = _prepare(w, lower)
    if method not in ("auto", "exact", "qmc"):
        raise ValueError(f"method must be 'auto', 'exact' or 'qmc', got {method!r}")
    if method == "exact" or (method == "auto" and w.shape[1] <= EXACT_MAX_D):
        return Estimate(exact_ratio(w, b), 0.0, 0, True)
    return qmc_ratio(w, b, points=points, replicates=replicates, seed=seed, tol=tol)
