"""Compiled loops of the sequential routing policies (PKG, POTC, CH-BL, PORC), with numba.

These four are greedy per message by definition (Nasir et al. §4.3, §5.1; CH-BL [28]): message
i's choice reads the loads that messages < i left, so no array expression computes them. Each
kernel is the plain rule as a loop over int64 arrays, compiled once per process (`cache=True`
keeps the machine code under runtime/routing/__pycache__, so later processes only load it).
The pure-Python loops of policies.py stay as the reference: the two must route identically.

`load` is a (sources, bins) scratch copy of the sources' counts, updated in place; `src` gives
each message's source; `caps` is cap_t = ⌈(1+ε)·t/b⌉ per message (policies.cap).
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

__all__ = ["chbl", "least_of_two", "porc", "warm_up"]


@njit(cache=True, nogil=True)
def least_of_two(a: np.ndarray, c: np.ndarray, src: np.ndarray, load: np.ndarray) -> np.ndarray:
    """PKG / POTC: the less loaded of (a_i, c_i) by the source's counts; ties to a_i."""
    out = np.empty(len(a), dtype=np.int64)
    for i in range(len(a)):
        s, x, y = src[i], a[i], c[i]
        if load[s, y] < load[s, x]:
            x = y
        load[s, x] += 1
        out[i] = x
    return out


@njit(cache=True, nogil=True)
def porc(first: np.ndarray, step: np.ndarray, caps: np.ndarray, src: np.ndarray,
         load: np.ndarray) -> np.ndarray:
    """PORC: probe H_1, H_1 + s, H_1 + 2s, ... (mod b) to the first bin with load < cap_t.

    s is coprime to b, so the probes visit every bin and one has room (Σ load = t-1 < b·cap_t).
    """
    b = load.shape[1]
    out = np.empty(len(first), dtype=np.int64)
    for i in range(len(first)):
        s, c, j, d = src[i], caps[i], first[i], step[i]
        while load[s, j] >= c:
            j += d
            if j >= b:
                j -= b
        load[s, j] += 1
        out[i] = j
    return out


@njit(cache=True, nogil=True)
def chbl(start: np.ndarray, ring: np.ndarray, caps: np.ndarray, src: np.ndarray,
         load: np.ndarray) -> np.ndarray:
    """CH-BL: walk the ring clockwise from the key's point to the first bin with load < cap_t."""
    size = len(ring)
    out = np.empty(len(start), dtype=np.int64)
    for i in range(len(start)):
        s, c, p = src[i], caps[i], start[i]
        j = ring[p]
        while load[s, j] >= c:
            p += 1
            if p == size:
                p = 0
            j = ring[p]
        load[s, j] += 1
        out[i] = j
    return out


def warm_up() -> float:
    """Compile (or load from the cache) every kernel on a tiny input; seconds it took.

    Benchmarks call this before timing so the one-off JIT cost is reported, not averaged in.
    """
    begin = time.perf_counter()
    one = np.zeros(2, dtype=np.int64)
    least_of_two(one, one + 1, one, np.zeros((1, 2), dtype=np.int64))
    porc(one, one + 1, one + 1, one, np.zeros((1, 2), dtype=np.int64))
    chbl(one, np.arange(2, dtype=np.int64), one + 1, one, np.zeros((1, 2), dtype=np.int64))
    return time.perf_counter() - begin
