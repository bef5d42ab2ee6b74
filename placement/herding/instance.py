"""The array form of a query-assignment (QA) instance (Zong et al. 2015 §2), for speed.

Units (queries q) are rows, sources s columns of a CSR incidence (S_q per row); nodes (servers)
carry a capacity weight c_j and whether they may host (the set A: not marked for removal).
Query types t = S_q (§2) are the distinct rows, with n_t and w(t) = Σ_{s∈t} w(s). Every
algorithm and the benchmark work on this form; `from_state` builds it from a `ClusterState`
(units sorted by id, which is also the online arrival order).

The balance constraint (eq. 1) counts queries, the paper's unit query load (§2.1), made
capacity-weighted: cap_j = max(⌊(1+ν)·n·c_j/C⌋, ⌈n·c_j/C⌉) on A (C = Σ_{j∈A} c_j), 0 on B.
The ⌈·⌉ floor makes Σ_j cap_j ≥ n, so Fig. 2 and the greedy fills always terminate (with ν = 0
and k ∤ n, ⌊(1+ν)n/k⌋·k < n).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from placement.canonical import natural_key
from placement.model import ClusterState
from placement.subscriptions import Subscriptions

__all__ = ["Instance", "IntArray", "capacities", "from_arrays", "from_state", "node_counts"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class Instance:
    """n units, m sources, k nodes; units' source sets as CSR, their types, current nodes."""

    unit_ids: tuple[str, ...]
    node_ids: tuple[str, ...]
    source_ids: tuple[str, ...]
    rates: FloatArray  # w(s), shape (m,)
    indptr: IntArray  # CSR of S_q, shape (n+1,)
    indices: IntArray  # source index per subscription, shape (nnz,)
    unit_type: IntArray  # type index of each unit, shape (n,)
    type_indptr: IntArray  # CSR of the types' source sets, shape (|T|+1,)
    type_indices: IntArray
    type_w: FloatArray  # w(t), shape (|T|,)
    type_count: IntArray  # n_t, shape (|T|,)
    capacity: FloatArray  # c_j, shape (k,)
    in_a: npt.NDArray[np.bool_]  # j hosts (not marked for removal), shape (k,)
    current: IntArray  # current node of each unit, -1 for an arrival, shape (n,)
    migration_cost: FloatArray  # mc_q, shape (n,)
    load: FloatArray  # the unit's load (for the load-based balance only), shape (n,)

    @property
    def n(self) -> int:
        return len(self.unit_type)

    @property
    def k(self) -> int:
        return len(self.capacity)

    @property
    def m(self) -> int:
        return len(self.rates)

    @property
    def n_types(self) -> int:
        return len(self.type_w)

    def sources_of(self, q: int) -> IntArray:
        return self.indices[self.indptr[q]:self.indptr[q + 1]]

    def type_sources(self, t: int) -> IntArray:
        return self.type_indices[self.type_indptr[t]:self.type_indptr[t + 1]]

    def used_weight(self) -> float:
        """w(sources used): every source some unit reads must be shipped at least once."""
        used = np.zeros(self.m, dtype=bool)
        used[self.indices] = True
        return float(self.rates[used].sum())


def _types(n: int, indptr: IntArray, indices: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """(unit_type, type_indptr, type_indices): the distinct sorted source sets, vectorised."""
    deg = np.diff(indptr)
    dmax = int(deg.max()) if n else 0
    if dmax == 0:
        return np.zeros(n, np.int64), np.zeros(2 if n else 1, np.int64), np.zeros(0, np.int64)
    padded = np.full((n, dmax), -1, dtype=np.int64)
    rows = np.repeat(np.arange(n), deg)
    cols = np.arange(len(indices)) - np.repeat(indptr[:-1], deg)
    order = np.lexsort((indices, rows))  # sort each row's sources
    padded[rows[order], cols] = indices[order]
    uniq, unit_type = np.unique(padded, axis=0, return_inverse=True)
    tdeg = (uniq >= 0).sum(axis=1)
    tptr = np.zeros(len(uniq) + 1, dtype=np.int64)
    np.cumsum(tdeg, out=tptr[1:])
    return unit_type.reshape(-1).astype(np.int64), tptr, uniq[uniq >= 0].astype(np.int64)


def from_arrays(rates: FloatArray, indptr: IntArray, indices: IntArray, k: int, *,
                capacity: FloatArray | None = None, in_a: npt.NDArray[np.bool_] | None = None,
                current: IntArray | None = None, migration_cost: FloatArray | None = None,
                unit_ids: tuple[str, ...] | None = None) -> Instance:
    """An instance straight from arrays (the benchmark's generator); ids made up if absent."""
    n = len(indptr) - 1
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    rates = np.asarray(rates, dtype=np.float64)
    unit_type, tptr, tind = _types(n, indptr, indices)
    type_w = np.add.reduceat(rates[tind], tptr[:-1]) if len(tind) else np.zeros(len(tptr) - 1)
    type_w = np.where(np.diff(tptr) > 0, type_w, 0.0)
    return Instance(
        unit_ids=unit_ids if unit_ids is not None else tuple(f"q{i}" for i in range(n)),
        node_ids=tuple(f"n{j}" for j in range(k)),
        source_ids=tuple(f"s{s}" for s in range(len(rates))),
        rates=rates, indptr=indptr, indices=indices, unit_type=unit_type,
        type_indptr=tptr, type_indices=tind, type_w=type_w,
        type_count=np.bincount(unit_type, minlength=len(tptr) - 1).astype(np.int64),
        capacity=np.ones(k) if capacity is None else np.asarray(capacity, dtype=np.float64),
        in_a=np.ones(k, dtype=bool) if in_a is None else np.asarray(in_a, dtype=bool),
        current=np.full(n, -1, np.int64) if current is None else np.asarray(current, np.int64),
        migration_cost=np.zeros(n) if migration_cost is None else np.asarray(migration_cost),
        load=np.ones(n))


def from_state(state: ClusterState) -> Instance:
    """The instance of a `ClusterState`: units sorted by id; nodes by capacity, largest first,
    then by id (natural order); sources by id. The algorithms break their ties by the lowest
    server index (IC's and MQP's next empty server, Fig. 2's and LeastCost's equal servers), so
    this order makes a tie go to the larger server, which holds more readers of a type and
    ships its sources once for more of them; it also makes the plan independent of the order
    in which nodes and sources are declared (docs/algorithms.md, "Herding").

    A unit without subscriptions reads nothing (traffic 0 wherever it goes)."""
    cols = state.columns  # arrays in the state's unit order (placement/columns.py)
    order = np.array(sorted(range(len(cols.units)), key=cols.units.__getitem__), dtype=np.int64)
    units = tuple(cols.units[i] for i in order)
    nodes = sorted(state.nodes, key=lambda nd: (-nd.capacity, natural_key(nd.id)))
    sources = sorted(state.sources, key=lambda s: natural_key(s.id))
    subs = Subscriptions.of(state.subscriptions)
    # S_q's indices into the subscriptions' own (sorted) vocabulary -> into `sources`
    src_index = {s.id: i for i, s in enumerate(sources)}
    to_source = np.array([src_index[s] for s in subs.source_ids], dtype=np.int64)
    indptr, local = subs.rows_for(units)
    flat = _sorted_rows(indptr, to_source[local] if len(local) else local)
    # the state's node j -> its position in `nodes` (an arrival keeps -1)
    node_pos = np.array([cols.node_index[nd.id] for nd in nodes], dtype=np.int64)
    to_sorted = np.empty(len(nodes), dtype=np.int64)
    to_sorted[node_pos] = np.arange(len(nodes))
    here = cols.current[order]
    current = np.where(here >= 0, to_sorted[np.maximum(here, 0)], -1).astype(np.int64)
    inst = from_arrays(
        np.array([s.rate for s in sources], dtype=np.float64), indptr, flat, len(nodes),
        capacity=np.array([nd.capacity for nd in nodes]),
        in_a=np.array([not nd.marked_for_removal for nd in nodes]),
        current=current, migration_cost=cols.migration_cost[order], unit_ids=units)
    return Instance(**{**inst.__dict__, "node_ids": tuple(nd.id for nd in nodes),
                       "source_ids": tuple(s.id for s in sources),
                       "load": cols.load[order].astype(np.float64)})


def _sorted_rows(indptr: IntArray, indices: IntArray) -> IntArray:
    """Each CSR row's indices in ascending order (rows stay where they are)."""
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    return indices[np.lexsort((indices, rows))].astype(np.int64)


def capacities(inst: Instance, nu: float, n: int | None = None) -> IntArray:
    """cap_j = max(⌊(1+ν)·n·c_j/C⌋, ⌈n·c_j/C⌉) on A, 0 on B (eq. 1, capacity-weighted)."""
    n = inst.n if n is None else n
    c = np.where(inst.in_a, inst.capacity, 0.0)
    share = n * c / c.sum()
    eps = 1e-9
    low = np.floor((1.0 + nu) * share + eps)
    high = np.ceil(share - eps)
    return np.where(inst.in_a, np.maximum(low, high), 0).astype(np.int64)


def node_counts(inst: Instance, node_of: IntArray) -> IntArray:
    """|Q_j| per node (units with node −1 are not counted)."""
    placed = node_of[node_of >= 0]
    return np.bincount(placed, minlength=inst.k).astype(np.int64)


def check_nu(nu: float) -> None:
    if not math.isfinite(nu) or nu < 0:
        raise ValueError(f"ν must be a finite number >= 0, got {nu!r}")
