"""S_q of every unit q as a CSR incidence: the sources facet's subscriptions as arrays.

Herding (Zong et al. 2015 §2) gives each query q the set S_q of sources it reads. At 10^5
queries × a few sources a `dict[str, frozenset[str]]` is ~10^5 Python sets built row by row from
the lake and taken apart again by `placement/herding/instance.py`. `Subscriptions` keeps the
same `Mapping[str, frozenset[str]]` face the model always had (a frozenset is built only when a
caller asks for one unit), but holds

- `units`: the units that have a row, in the mapping's order;
- `source_ids`: the sources read, sorted (the vocabulary of `indices`);
- `indptr`, `indices`: row r's sources are `source_ids[indices[indptr[r]:indptr[r+1]]]`,
  each row's indices sorted and without repeats (S_q is a set).

Built from the lake's columns (`from_pairs`: one (unit, source) pair per subscription row) or
from any mapping (`of`: tests, benchmarks, small states) without changing what the mapping says.
It is a plain class, not a dataclass, so the what-if codec stores it as the mapping it is.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["Subscriptions"]

IntArray = npt.NDArray[np.int64]


class Subscriptions(Mapping[str, frozenset[str]]):
    """unit -> S_q, held as CSR (module docstring)."""

    __slots__ = ("__dict__", "indices", "indptr", "source_ids", "units")

    def __init__(self, units: Sequence[str], source_ids: Sequence[str], indptr: Any,
                 indices: Any) -> None:
        self.units: tuple[str, ...] = tuple(units)
        self.source_ids: tuple[str, ...] = tuple(source_ids)
        self.indptr: IntArray = np.asarray(indptr, dtype=np.int64)
        self.indices: IntArray = np.asarray(indices, dtype=np.int64)
        n, m = len(self.units), len(self.source_ids)
        if len(self.indptr) != n + 1 or (n + 1 and int(self.indptr[0]) != 0) or int(
                self.indptr[-1]) != len(self.indices) or bool((np.diff(self.indptr) < 0).any()):
            raise ValueError("subscriptions: indptr must rise from 0 to the number of indices, "
                             "one step per unit")
        if len(self.indices) and (int(self.indices.min()) < 0 or int(self.indices.max()) >= m):
            raise ValueError("subscriptions: a source index is outside the sources read")
        if len(set(self.units)) != n:
            raise ValueError("subscriptions: a unit has two rows")
        for array in (self.indptr, self.indices):
            array.flags.writeable = False

    # -- building -------------------------------------------------------------------------

    @classmethod
    def of(cls, mapping: Mapping[str, Iterable[str]]) -> Subscriptions:
        """From a mapping unit -> sources (kept in the mapping's order); the row path."""
        if isinstance(mapping, Subscriptions):
            return mapping
        rows = {u: frozenset(s) for u, s in mapping.items()}
        vocab = sorted(set().union(*rows.values())) if rows else []
        index = {s: i for i, s in enumerate(vocab)}
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(s) for s in rows.values()], out=indptr[1:])
        flat = [index[s] for read in rows.values() for s in sorted(read)]
        return cls(tuple(rows), vocab, indptr, np.array(flat, dtype=np.int64))

    @classmethod
    def from_pairs(cls, units: Any, sources: Any) -> Subscriptions:
        """From two aligned columns (Arrow arrays, numpy arrays or lists of ids), one
        subscription per position, repeats allowed: rows in unit-id order, each a set. No
        Python object per pair (pandas' factorize, numpy's unique)."""
        import pandas as pd

        u_codes, u_vocab = pd.factorize(pd.Series(np.asarray(units, dtype=object)), sort=True)
        s_codes, s_vocab = pd.factorize(pd.Series(np.asarray(sources, dtype=object)), sort=True)
        m = max(len(s_vocab), 1)
        pairs = np.unique(u_codes.astype(np.int64) * m + s_codes.astype(np.int64))
        rows, cols = pairs // m, pairs % m
        indptr = np.zeros(len(u_vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=len(u_vocab)), out=indptr[1:])
        return cls(tuple(map(str, u_vocab)), tuple(map(str, s_vocab)), indptr, cols)

    # -- the Mapping view -----------------------------------------------------------------

    @functools.cached_property
    def _row(self) -> dict[str, int]:
        return {u: r for r, u in enumerate(self.units)}

    def __getitem__(self, unit: str) -> frozenset[str]:
        r = self._row[unit]
        ids = self.source_ids
        return frozenset(ids[i] for i in self.indices[self.indptr[r]:self.indptr[r + 1]])

    def __iter__(self) -> Iterator[str]:
        return iter(self.units)

    def __len__(self) -> int:
        return len(self.units)

    def __contains__(self, unit: object) -> bool:
        return unit in self._row

    def __repr__(self) -> str:
        return f"Subscriptions({len(self.units)} units, {len(self.indices)} subscriptions)"

    # -- columns --------------------------------------------------------------------------

    def rows_for(self, unit_ids: Sequence[str]) -> tuple[IntArray, IntArray]:
        """(indptr, indices) of the CSR over `unit_ids` in that order (a unit without a row
        reads nothing), indices still into `source_ids`."""
        import pandas as pd

        at = pd.Index(self.units, dtype=object).get_indexer(pd.Index(unit_ids, dtype=object)) \
            if self.units else np.full(len(unit_ids), -1, np.int64)
        at = np.asarray(at, dtype=np.int64)
        deg = np.where(at >= 0, np.diff(self.indptr)[np.maximum(at, 0)] if len(self.units)
                       else 0, 0).astype(np.int64)
        indptr = np.zeros(len(unit_ids) + 1, dtype=np.int64)
        np.cumsum(deg, out=indptr[1:])
        starts = np.repeat(self.indptr[np.maximum(at, 0)] if len(self.units)
                           else np.zeros(len(unit_ids), np.int64), deg)
        offsets = np.arange(int(indptr[-1]), dtype=np.int64) - np.repeat(indptr[:-1], deg)
        return indptr, self.indices[starts + offsets]

    def reordered(self, order: Sequence[int]) -> Subscriptions:
        """The same mapping with its rows listed in `order` (positions into `units`)."""
        picked = tuple(self.units[i] for i in order)
        indptr, indices = self.rows_for(picked)
        return Subscriptions(picked, self.source_ids, indptr, indices)

    def first_unknown(self, units: set[str] | frozenset[str], sources: set[str]
                      ) -> tuple[str, list[str]] | None:
        """The first row (mapping order) naming an unknown unit (unit, []) or reading sources
        outside `sources` (unit, those sources sorted); None when every row is known."""
        bad_source = np.array([s not in sources for s in self.source_ids], dtype=bool)
        hit = bad_source[self.indices] if len(self.indices) else np.zeros(0, bool)
        if not hit.any() and units.issuperset(self.units):  # the usual case, at C speed
            return None
        row_of = np.repeat(np.arange(len(self.units)), np.diff(self.indptr))
        first_bad = int(row_of[hit].min()) if hit.any() else len(self.units)
        for r, unit in enumerate(self.units[:first_bad + 1]):
            if unit not in units:
                return unit, []
            if r == first_bad:
                read = self.indices[self.indptr[r]:self.indptr[r + 1]]
                return unit, sorted(self.source_ids[i] for i in read if bad_source[i])
        return None
