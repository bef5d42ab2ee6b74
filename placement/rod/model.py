"""ROD's linear load model as arrays (Xing et al. 2006 §2.2–§3.3, Table 1).

`LoadModel` holds the operator load coefficient matrix L^o (m × d), the node capacities C
(n), the observed rates R and the lower bounds B of the d input streams. Everything ROD and the
resilience measures compute is in the normalised space of §3.3: x_k = l_k·r_k / C_T, where the
node hyperplanes become W_i·x = 1 with the weight matrix w_ik = (l^n_ik / l_k) / (C_i / C_T),
and the ideal hyperplane is Σ_k x_k = 1 (Theorem 1).

Units: a coefficient l_ik times a rate r_k (tuples/s) is a load in % of a reference node, the
unit of `KeyGroup.load`, so node i's capacity is C_i = 100 · `Node.capacity`. The feasible-set
ratio, the plane distance and the MMAD bound are scale-free; only the headroom
(placement/rod/resilience.py) uses the absolute capacity.

Streams that no unit loads (l_k = 0) never overload a node: they are dropped from the
normalised space (their axis is unbounded in F and in F* alike, and the ratio is taken over the
others).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placement.model import ClusterState
from schemas.errors import ReconfError

__all__ = ["CAPACITY_PCT", "LoadModel", "LoadModelError", "node_coefficients", "weights"]

#: a node of capacity weight 1.0 sustains 100 % of a reference node
CAPACITY_PCT = 100.0

Array = NDArray[np.float64]


class LoadModelError(ReconfError, ValueError):
    """The load-model facet cannot be used as given: what, where, and how to fix it."""


@dataclass(frozen=True)
class LoadModel:
    """L^o (units × streams), C (nodes), R and B (streams), with the ids of each axis."""

    units: tuple[str, ...]
    streams: tuple[str, ...]
    nodes: tuple[str, ...]
    coefficients: Array  # L^o, m × d
    capacity: Array  # C, n
    rates: Array  # R, d
    lower: Array  # B, d

    def __post_init__(self) -> None:
        m, d, n = len(self.units), len(self.streams), len(self.nodes)
        if self.coefficients.shape != (m, d):
            raise LoadModelError(f"load model: L^o is {self.coefficients.shape}, expected {(m, d)}")
        if self.capacity.shape != (n,) or self.rates.shape != (d,) or self.lower.shape != (d,):
            raise LoadModelError("load model: C, R and B must match the nodes and the streams")
        if not np.all(np.isfinite(self.coefficients)) or np.any(self.coefficients < 0):
            bad = np.argwhere(~np.isfinite(self.coefficients) | (self.coefficients < 0))[0]
            raise LoadModelError(
                f"load model: coefficient of unit {self.units[bad[0]]!r} on stream "
                f"{self.streams[bad[1]]!r} is {self.coefficients[bad[0], bad[1]]!r}; load "
                "coefficients must be finite and >= 0 (refit the load model)")
        if np.any(self.capacity <= 0):
            raise LoadModelError("load model: node capacities must be > 0")
        if np.any(self.lower > self.rates + 1e-12):
            k = int(np.argmax(self.lower - self.rates))
            raise LoadModelError(
                f"load model: stream {self.streams[k]!r} has lower bound {self.lower[k]!r} "
                f"above its observed rate {self.rates[k]!r}; lower the bound (§6.1)")

    @classmethod
    def of(cls, state: ClusterState, nodes: Sequence[str] | None = None) -> LoadModel:
        """The facet of `state` over `nodes` (default: all); LoadModelError if it is missing or
        a unit has no coefficients (an all-zero row must be written, not left out)."""
        if "load_model" not in state.facets:
            raise LoadModelError(
                "cluster state has no load model: ROD needs the job's input streams "
                "(`streams`) and each unit's load coefficients (`load_model`); declare the "
                "job's input streams so the pipeline fits them")
        units = tuple(k.id for k in state.keygroups)
        missing = [u for u in units if u not in state.load_model]
        if missing:
            raise LoadModelError(
                f"load model: {len(missing)} unit(s) have no coefficients, e.g. "
                f"{missing[:3]}; every unit needs a row (zeros if it reads no declared stream)")
        streams = tuple(s.id for s in state.streams)
        coef = np.array([[float(state.load_model[u].get(s, 0.0)) for s in streams]
                         for u in units], dtype=float).reshape(len(units), len(streams))
        node_ids = tuple(nodes) if nodes is not None else state.node_ids
        caps = {n.id: n.capacity for n in state.nodes}
        return cls(units, streams, node_ids, coef,
                   np.array([CAPACITY_PCT * caps[n] for n in node_ids], dtype=float),
                   np.array([s.rate for s in state.streams], dtype=float),
                   np.array([s.min_rate for s in state.streams], dtype=float))

    @property
    def totals(self) -> Array:
        """l_k = Σ_j l^o_jk (Theorem 1)."""
        return np.asarray(self.coefficients.sum(axis=0), dtype=float)

    @property
    def active(self) -> NDArray[np.bool_]:
        """The streams some unit loads (l_k > 0): the axes of the normalised space."""
        return np.asarray(self.totals > 0)

    def normalised(self) -> Array:
        """L^o in the normalised space: l^o_jk / l_k over the active streams (m × d')."""
        act = self.active
        return np.asarray(self.coefficients[:, act] / self.totals[act], dtype=float)

    def share(self) -> Array:
        """C_i / C_T."""
        return np.asarray(self.capacity / self.capacity.sum(), dtype=float)

    def lower_point(self) -> Array:
        """B' = (b_k·l_k / C_T) over the active streams (§6.1)."""
        act = self.active
        return np.asarray(self.lower[act] * self.totals[act] / self.capacity.sum(), dtype=float)

    def bins(self, assignment: Mapping[str, str]) -> NDArray[np.int64]:
        """The node index of every unit under `assignment`."""
        index = {n: i for i, n in enumerate(self.nodes)}
        try:
            return np.array([index[assignment[u]] for u in self.units], dtype=np.int64)
        except KeyError as exc:
            raise LoadModelError(f"assignment puts a unit on {exc} outside the model's nodes "
                                 f"{list(self.nodes)}") from None


def node_coefficients(coefficients: Array, bins: NDArray[np.int64], n: int) -> Array:
    """L^n = A·L^o: row i sums the coefficients of the units in bin i."""
    out = np.zeros((n, coefficients.shape[1]))
    np.add.at(out, bins, coefficients)
    return out


def weights(normalised: Array, bins: NDArray[np.int64], share: Array) -> Array:
    """The weight matrix W, w_ik = (l^n_ik / l_k) / (C_i / C_T) (§3.3)."""
    return node_coefficients(normalised, bins, len(share)) / share[:, None]
