"""The communication facet out(g_i, g_j), held as columns: the planner's edge state.

A job of 10^4 key groups with all-to-all exchanges has millions of (src, dst) pairs; one Python
object per pair costs gigabytes and tens of seconds before any strategy runs. `CommEdges` keeps
out() as three numpy columns over an id vocabulary (`units`): `src` and `dst` index into it,
`rate` is the pair's tuples per second. It is a read-only `Sequence[Edge]`, so a strategy that
walks `state.edges` edge by edge keeps working (an `Edge` is made on demand); the hot paths
(metrics, canonical order, ALBIC's and COLA's pair rates) read the columns.

The top-k contract (docs/algorithms.md, "Communication: heaviest pairs"): a landing may carry,
per unit, only its heaviest outgoing pairs plus the total rate of the pairs it dropped.
`dropped[i]` is that total for `units[i]` (0 when every pair was kept). Dropped traffic is
counted as crossing nodes (its ends are unknown), so a collocation factor computed here never
overstates the true one, and equals it when nothing was dropped.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import numpy.typing as npt

__all__ = ["CommEdges", "Edge", "PairRates"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Edge:
    """Communication out(g_i, g_j): tuples per period from `src` to `dst`."""

    src: str
    dst: str
    rate: float

    def __post_init__(self) -> None:
        if not math.isfinite(self.rate) or self.rate < 0:
            raise ValueError(f"edge {self.src!r}->{self.dst!r}: rate must be a finite number "
                             f">= 0, got {self.rate!r}")


def _frozen(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class CommEdges(Sequence[Edge]):
    """out(g_i, g_j) as columns: `src[e]`, `dst[e]` index `units`, `rate[e]` its tuples/s.

    Edges keep their given order (parallel and self edges included: the model's edge list);
    `dropped` is aligned with `units` (see the module docstring)."""

    units: tuple[str, ...]
    src: IntArray
    dst: IntArray
    rate: FloatArray
    dropped: FloatArray

    def __post_init__(self) -> None:
        n = len(self.units)
        if not (len(self.src) == len(self.dst) == len(self.rate)) or len(self.dropped) != n:
            raise ValueError("communication: src, dst and rate must have one value per edge, "
                             "dropped one per unit")
        for ends in (self.src, self.dst):
            if len(ends) and (int(ends.min()) < 0 or int(ends.max()) >= n):
                raise ValueError("communication: an edge end is not a unit of the vocabulary")
        for name in ("src", "dst", "rate", "dropped"):
            _frozen(getattr(self, name))
        bad = ~(np.isfinite(self.rate) & (self.rate >= 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"edge {self.units[self.src[i]]!r}->{self.units[self.dst[i]]!r} "
                             f"has rate {float(self.rate[i])!r}; rates must be finite numbers "
                             ">= 0")
        bad = ~(np.isfinite(self.dropped) & (self.dropped >= 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"unit {self.units[i]!r}: the rate of its dropped pairs must be a "
                             f"finite number >= 0, got {float(self.dropped[i])!r}")

    # -- building -------------------------------------------------------------------------

    @classmethod
    def empty(cls) -> CommEdges:
        return cls((), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0),
                   np.zeros(0))

    @classmethod
    def of(cls, edges: Iterable[Edge]) -> CommEdges:
        """From Edge objects (the row path: tests, benchmarks, small states)."""
        if isinstance(edges, CommEdges):
            return edges
        rows = list(edges)
        return cls.from_columns([e.src for e in rows], [e.dst for e in rows],
                                np.fromiter((e.rate for e in rows), np.float64, len(rows)))

    @classmethod
    def from_columns(cls, src: Any, dst: Any, rate: Any,
                     dropped: tuple[Any, Any] | None = None) -> CommEdges:
        """From columns (Arrow arrays, pandas Series, numpy arrays or lists of ids), without a
        Python object per edge. `dropped`: (unit ids, their dropped totals), the top-k
        contract's per-unit remainder."""
        import pandas as pd

        s = pd.Series(np.asarray(src, dtype=object)) if not isinstance(src, pd.Series) else src
        d = pd.Series(np.asarray(dst, dtype=object)) if not isinstance(dst, pd.Series) else dst
        ids = [s, d]
        if dropped is not None:
            ids.append(pd.Series(np.asarray(dropped[0], dtype=object)))
        codes, vocab = pd.factorize(pd.concat(ids, ignore_index=True), sort=True)
        units = tuple(str(u) for u in vocab)
        n = len(s)
        values = np.asarray(rate, dtype=np.float64).copy()
        left = np.zeros(len(units))
        if dropped is not None:
            np.add.at(left, codes[2 * n:], np.asarray(dropped[1], dtype=np.float64))
        return cls(units, codes[:n].astype(np.int64), codes[n:2 * n].astype(np.int64), values,
                   left)

    # -- the Sequence[Edge] view ----------------------------------------------------------

    def __len__(self) -> int:
        return len(self.rate)

    @overload
    def __getitem__(self, i: int) -> Edge: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Edge, ...]: ...

    def __getitem__(self, i: int | slice) -> Edge | tuple[Edge, ...]:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        u = self.units
        return Edge(u[int(self.src[i])], u[int(self.dst[i])], float(self.rate[i]))

    def __iter__(self) -> Iterator[Edge]:
        u = self.units
        for s, d, r in zip(self.src.tolist(), self.dst.tolist(), self.rate.tolist(),
                           strict=True):
            yield Edge(u[s], u[d], r)

    def __bool__(self) -> bool:
        return len(self.rate) > 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CommEdges):
            return (self.columns() == other.columns()
                    and self.dropped_of() == other.dropped_of())
        if isinstance(other, tuple | list):
            return not self.dropped.any() and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"CommEdges({len(self)} edges over {len(self.units)} units, "
                f"{float(self.dropped.sum()):g} dropped)")

    def columns(self) -> tuple[list[str], list[str], list[float]]:
        """(src ids, dst ids, rates) in edge order, as plain lists."""
        u = np.asarray(self.units, dtype=object)
        return (u[self.src].tolist(), u[self.dst].tolist(), self.rate.tolist())

    def dropped_of(self) -> dict[str, float]:
        """unit -> the total rate of its dropped pairs (units with none left out)."""
        return {self.units[i]: float(self.dropped[i]) for i in np.flatnonzero(self.dropped)}

    # -- columnar operations --------------------------------------------------------------

    @functools.cached_property
    def position(self) -> dict[str, int]:
        """unit id -> its vocabulary position."""
        return {u: i for i, u in enumerate(self.units)}

    @functools.cached_property
    def rank(self) -> IntArray:
        """Each vocabulary unit's position in id (string) order."""
        order = sorted(range(len(self.units)), key=self.units.__getitem__)
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        return rank

    @property
    def has_dropped(self) -> bool:
        return bool(self.dropped.any())

    def codes_for(self, ids: Sequence[str]) -> IntArray:
        """For each vocabulary unit, its position in `ids` (-1 when `ids` lacks it)."""
        index = {u: i for i, u in enumerate(ids)}
        return np.fromiter((index.get(u, -1) for u in self.units), np.int64, len(self.units))

    def unknown_end(self, known: set[str] | frozenset[str]) -> tuple[int, str] | None:
        """The first edge (index, its unknown end) naming a unit not in `known`; None if all
        are known. Dropped totals of unknown units count as such an end too (index -1)."""
        missing = np.fromiter((u not in known for u in self.units), bool, len(self.units))
        if not missing.any():
            return None
        bad = missing[self.src] | missing[self.dst]
        if bad.any():
            e = int(np.flatnonzero(bad)[0])
            end = self.src[e] if missing[self.src[e]] else self.dst[e]
            return e, self.units[int(end)]
        left = np.flatnonzero(missing & (self.dropped > 0))
        return None if len(left) == 0 else (-1, self.units[int(left[0])])

    def select(self, keep: npt.NDArray[np.bool_]) -> CommEdges:
        """The edges where `keep` is true (the same vocabulary and dropped totals)."""
        return CommEdges(self.units, self.src[keep], self.dst[keep], self.rate[keep],
                         self.dropped.copy())

    def without_units(self, gone: Iterable[str]) -> CommEdges:
        """Without the edges touching `gone`, and without their dropped totals."""
        leaving = set(gone)
        out = np.fromiter((u in leaving for u in self.units), bool, len(self.units))
        left = self.dropped.copy()
        left[out] = 0.0
        keep = ~(out[self.src] | out[self.dst])
        return CommEdges(self.units, self.src[keep], self.dst[keep], self.rate[keep], left)

    def sorted_by(self, rank: IntArray) -> CommEdges:
        """Edges in order of (rank[src], rank[dst], rate): `rank` orders the vocabulary (the
        canonical natural order, placement/canonical.py)."""
        order = np.lexsort((self.rate, rank[self.dst], rank[self.src]))
        return CommEdges(self.units, self.src[order], self.dst[order], self.rate[order],
                         self.dropped.copy())

    def pairs(self) -> tuple[IntArray, IntArray, FloatArray]:
        """out(g_i, g_j) per directed pair: parallel edges summed in edge order, self-edges
        dropped; pairs in order of first appearance (as a dict built edge by edge keeps them)."""
        inter = self.src != self.dst
        s, d, r = self.src[inter], self.dst[inter], self.rate[inter]
        if len(r) == 0:
            return s, d, r
        key = s * len(self.units) + d
        uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        sums = np.bincount(inverse, weights=r, minlength=len(uniq))  # sequential per pair
        order = np.argsort(first, kind="stable")
        n = len(self.units)
        return (np.asarray(uniq[order] // n, np.int64), np.asarray(uniq[order] % n, np.int64),
                np.asarray(sums[order], np.float64))

    def collocation(self, node_of: IntArray) -> float:
        """% of inter-unit traffic kept on one node; `node_of[i]` is the node (any integer
        code) of `units[i]`. Dropped pairs count as traffic that crosses nodes."""
        inter = self.src != self.dst
        r = self.rate[inter]
        extra = float(np.bincount(np.zeros(len(self.dropped), np.int64), self.dropped,
                                  minlength=1)[0]) if len(self.dropped) else 0.0
        if len(r) == 0 and extra == 0.0:
            return 100.0
        local_mask = node_of[self.src[inter]] == node_of[self.dst[inter]]
        # bincount adds in edge order, as the row-by-row definition does (same floats)
        total = float(np.bincount(np.zeros(len(r), np.int64), r, minlength=1)[0])
        local = float(np.bincount(np.zeros(int(local_mask.sum()), np.int64), r[local_mask],
                                  minlength=1)[0])
        total += extra
        if total == 0.0:
            return 100.0
        return 100.0 * local / total



class PairRates(Mapping[tuple[str, str], float]):
    """out(g_i, g_j) per directed pair (parallel edges summed, self-edges dropped) as arrays:
    a read-only mapping in first-appearance order (what a dict built edge by edge holds), whose
    lookups and within-set sums run on the columns."""

    def __init__(self, comm: CommEdges) -> None:
        self.comm = comm
        self.src, self.dst, self.rate = comm.pairs()
        n = max(len(comm.units), 1)
        self._n = n
        key = self.src * n + self.dst
        self._order = np.argsort(key, kind="stable")
        self._sorted = key[self._order]

    def __len__(self) -> int:
        return len(self.rate)

    def _by_src(self) -> tuple[IntArray, IntArray]:
        """The pairs grouped by source (computed once): `_src_order[starts[c]:ends[c]]` are
        the pairs of unit c, in pair order."""
        if not hasattr(self, "_src_order"):
            self._src_order = np.argsort(self.src, kind="stable")
            counts = np.bincount(self.src, minlength=len(self.comm.units))
            self._src_ends = np.cumsum(counts)
            self._src_starts = self._src_ends - counts
        return self._src_starts, self._src_ends

    def __iter__(self) -> Iterator[tuple[str, str]]:
        u = self.comm.units
        return ((u[s], u[d]) for s, d in zip(self.src.tolist(), self.dst.tolist(), strict=True))

    def __getitem__(self, pair: tuple[str, str]) -> float:
        index = self.comm.position
        s, d = index.get(pair[0]), index.get(pair[1])
        if s is None or d is None:
            raise KeyError(pair)
        key = s * self._n + d
        at = int(np.searchsorted(self._sorted, key))
        if at >= len(self._sorted) or self._sorted[at] != key:
            raise KeyError(pair)
        return float(self.rate[self._order[at]])

    def items(self) -> Iterator[tuple[tuple[str, str], float]]:  # type: ignore[override]
        return zip(iter(self), self.rate.tolist(), strict=True)

    def values(self) -> Iterator[float]:  # type: ignore[override]
        return iter(self.rate.tolist())

    def output(self) -> FloatArray:
        """Σ_j out(g_i, g_j) per vocabulary unit, added in pair order."""
        return np.asarray(np.bincount(self.src, weights=self.rate, minlength=len(self.comm.units)),
                          np.float64)

    def undirected(self, inside: npt.NDArray[np.bool_] | None = None, *,
                   positive_only: bool = True) -> tuple[IntArray, IntArray, FloatArray]:
        """(lo, hi, out(lo, hi) + out(hi, lo)) per unordered pair with both ends `inside` (a
        mask over the vocabulary; all when None), lo the smaller id; summed in pair order,
        pairs in order of first appearance."""
        return self._undirected(self.src, self.dst, self.rate, inside, positive_only)

    def _undirected(self, src: IntArray, dst: IntArray, rate: FloatArray,
                    inside: npt.NDArray[np.bool_] | None, positive_only: bool
                    ) -> tuple[IntArray, IntArray, FloatArray]:
        keep = np.ones(len(rate), bool) if inside is None else (inside[src] & inside[dst])
        if positive_only:
            keep &= rate > 0
        s, d, r = src[keep], dst[keep], rate[keep]
        if len(r) == 0:
            return s, d, r
        rank = self.comm.rank
        swap = rank[s] > rank[d]
        key = np.where(swap, d, s) * self._n + np.where(swap, s, d)
        uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        sums = np.bincount(inverse, weights=r, minlength=len(uniq))
        order = np.argsort(first, kind="stable")
        return (np.asarray(uniq[order] // self._n, np.int64),
                np.asarray(uniq[order] % self._n, np.int64), np.asarray(sums[order], np.float64))

    def undirected_within(self, members: Iterable[str]) -> dict[tuple[str, str], float]:
        """out(g_i, g_j) + out(g_j, g_i) for every pair inside `members` with a positive rate,
        keyed (min id, max id), summed in pair order (graphpart.undirected_weights' floats)."""
        lo, hi, sums = self.within_codes(members)
        u = self.comm.units
        return {(u[a], u[b]): v
                for a, b, v in zip(lo.tolist(), hi.tolist(), sums.tolist(), strict=True)}

    def within_codes(self, members: Iterable[str]) -> tuple[IntArray, IntArray, FloatArray]:
        """`undirected_within` as vocabulary codes: (lo, hi, sums) in the same order."""
        position = self.comm.position
        inside = np.zeros(len(self.comm.units), bool)
        codes = [position[m] for m in members if m in position]
        inside[codes] = True
        if 16 * len(codes) < len(self.comm.units):  # a small set: only its units' pairs, by
            starts, ends = self._by_src()  # source, in pair order (the same sums, same order)
            picked = np.sort(np.concatenate(
                [self._src_order[starts[c]:ends[c]] for c in codes] or [np.zeros(0, np.int64)]))
            lo, hi, sums = self._undirected(self.src[picked], self.dst[picked],
                                            self.rate[picked], inside, True)
        else:
            lo, hi, sums = self.undirected(inside)
        return lo, hi, sums
