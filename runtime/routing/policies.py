"""Per-message routing policies of Consistent Grouping (Nasir et al., §4, §5.1), vectorised.

A policy sends each message (a key code) of a stream to one of `b` bins (virtual workers, VWs;
in the replay engine an operator's key groups). Sources keep their own state: messages each sent
(t) and per-bin counts ("local load estimation", as PKG [32]); loads are cumulative per source.

- ``kg``   key grouping: the key's principal bin H_1(k).
- ``sg``   shuffle grouping: round robin per source.
- ``pkg``  partial key grouping: the less loaded (local counts) of H_1(k), H_2(k); ties to H_1.
- ``potc_msg`` the paper's POTC (§4.3): the less loaded of two random bins drawn per message.
- ``ch``   consistent hashing: the first bin clockwise of the key's point on a ring that holds
  `points` virtual points per bin.
- ``chbl`` CH with bounded load [28]: clockwise from the key's point to the first bin whose load is
  below cap_t = ⌈(1+ε)·t/b⌉.
- ``porc`` power of random choices (§5.1): H_1(k), H_2(k), ... to the first bin with load below
  cap_t. H_i(k) = H_1(k) + (i-1)·s_k mod b with a stride s_k coprime to b, so each key probes a
  permutation of the bins and a free bin is always found (Σ load = t-1 < b·cap_t).

t counts the current message (1-based, per source). Aliases kept for old configs: ``key`` = kg,
``shuffle`` = sg and ``potc`` = pkg (the replay engine's old "power of two choices" was PKG).
KG, SG and CH are numpy expressions; PKG, POTC, CH-BL and PORC are sequential by definition (each
choice reads the loads the previous messages left): compiled loops (kernels.py, numba) by default,
and the pure-Python loops below with `compiled=False`, the reference the kernels are tested against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "ALIASES",
    "POLICIES",
    "SPLITTING",
    "KeyTable",
    "RouterState",
    "canonical",
    "cap",
    "check_epsilon",
    "check_keys",
    "route",
    "splitmix64",
]

POLICIES: tuple[str, ...] = ("kg", "sg", "pkg", "potc_msg", "ch", "chbl", "porc")
ALIASES: dict[str, str] = {"key": "kg", "shuffle": "sg", "potc": "pkg"}
#: policies that may send one key to several bins (partial state, merged at window end)
SPLITTING = frozenset({"sg", "pkg", "potc_msg", "chbl", "porc"})
DEFAULT_POINTS = 100  # CH: virtual points per bin on the ring
_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def canonical(name: object) -> str:
    """The policy a config name means (aliases resolved); ValueError naming the choices."""
    if isinstance(name, str):
        low = name.strip().lower()
        low = ALIASES.get(low, low)
        if low in POLICIES:
            return low
    raise ValueError(f"unknown routing policy {name!r}; choose one of {list(POLICIES)} "
                     f"(aliases: {ALIASES})")


def check_epsilon(epsilon: object) -> float:
    """ε of PORC and CH-BL: a finite number >= 0 (cap ⌈(1+ε)t/b⌉)."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float) or not (
            math.isfinite(epsilon) and 0 <= epsilon <= 100):
        raise ValueError(f"routing epsilon must be a number in [0, 100] (PORC / CH-BL cap "
                         f"⌈(1+ε)t/b⌉), got {epsilon!r}")
    return float(epsilon)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64: a stable, well-mixed integer hash (any process)."""
    z = np.asarray(x, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _salted(n: int, seed: int, salt: int) -> np.ndarray:
    base = np.uint64((seed * 0x100000001B3 + salt * 0x9E3779B1) & 0xFFFFFFFFFFFFFFFF)
    return splitmix64(np.arange(n, dtype=np.uint64) ^ splitmix64(np.array([base]))[0])


def cap(t: np.ndarray, bins: int, epsilon: float) -> np.ndarray:
    """⌈(1+ε)·t/b⌉ per message (t 1-based), never below ⌈t/b⌉ so a free bin always exists."""
    t = np.asarray(t, dtype=np.int64)
    x = (1.0 + epsilon) * t / bins
    approx = np.ceil(x - 1e-9 * np.maximum(1.0, x)).astype(np.int64)
    return np.maximum(approx, (t + bins - 1) // bins)


@dataclass(frozen=True, eq=False)
class KeyTable:
    """Per key code: principal bin H_1, PKG's H_2, PORC's stride, the key's start on the CH ring."""

    bins: int
    first: np.ndarray
    second: np.ndarray
    step: np.ndarray
    ring_start: np.ndarray
    ring_bins: np.ndarray
    seed: int = 0

    @classmethod
    def build(cls, n_keys: int, bins: int, *, seed: int = 0, first: np.ndarray | None = None,
              second: np.ndarray | None = None, points: int = DEFAULT_POINTS) -> KeyTable:
        """Hashes for `n_keys` key codes over `bins` bins; `first`/`second` override H_1/H_2
        (the replay engine passes Flink's key group and its PoTC alternate)."""
        if bins < 1 or n_keys < 0 or points < 1:
            raise ValueError(f"need bins >= 1, n_keys >= 0, points >= 1; got {bins}, {n_keys}, "
                             f"{points}")
        b = np.uint64(bins)
        h1 = (_salted(n_keys, seed, 1) % b).astype(np.int64) if first is None else first
        h2 = (_salted(n_keys, seed, 2) % b).astype(np.int64) if second is None else second
        units = np.flatnonzero(np.gcd(np.arange(bins), bins) == 1) if bins > 1 else np.ones(1)
        step = units[(_salted(n_keys, seed, 3) % np.uint64(len(units))).astype(np.int64)]
        pts = _salted(bins * points, seed, 4)
        order = np.argsort(pts, kind="stable")
        ring_bins = (np.arange(bins * points) // points)[order].astype(np.int64)
        start = np.searchsorted(pts[order], _salted(n_keys, seed, 5)) % (bins * points)
        return cls(bins, np.asarray(h1, dtype=np.int64), np.asarray(h2, dtype=np.int64),
                   step.astype(np.int64), start.astype(np.int64), ring_bins, seed)

    @property
    def n_keys(self) -> int:
        return len(self.first)

    def principal(self, policy: str) -> np.ndarray:
        """The bin a key's partial state merges into: the first clockwise bin for CH / CH-BL,
        H_1 otherwise (PORC's "principal virtual worker", §5.1)."""
        if canonical(policy) in ("ch", "chbl"):
            return self.ring_bins[self.ring_start]
        return self.first


@dataclass(frozen=True, eq=False)
class RouterState:
    """What each source knows: messages it sent (t) and how many went to each bin."""

    sent: np.ndarray  # (sources,)
    load: np.ndarray  # (sources, bins)

    @classmethod
    def zeros(cls, sources: int, bins: int) -> RouterState:
        return cls(np.zeros(sources, dtype=np.int64), np.zeros((sources, bins), dtype=np.int64))

    @property
    def sources(self) -> int:
        return len(self.sent)


def _ranks(sources: np.ndarray, n_sources: int) -> np.ndarray:
    """0-based position of each message among its source's messages of this batch."""
    if n_sources == 1:
        return np.arange(len(sources), dtype=np.int64)
    order = np.argsort(sources, kind="stable")
    counts = np.bincount(sources, minlength=n_sources)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(len(sources), dtype=np.int64)
    rank[order] = np.arange(len(sources)) - np.repeat(starts, counts)
    return rank


def check_keys(keys: np.ndarray, table: KeyTable) -> None:
    """ValueError naming the first key code outside [0, table.n_keys) and its position: numpy
    would wrap a negative code to the last key's bin and fail past the end with a bare
    IndexError."""
    if not len(keys):
        return
    bad = np.flatnonzero((keys < 0) | (keys >= table.n_keys))
    if len(bad):
        i = int(bad[0])
        raise ValueError(
            f"key code {int(keys[i])} (message {i}) is outside the key table, which has codes "
            f"0..{table.n_keys - 1}; {len(bad)} message(s) carry such codes. Key codes index "
            "the table built by KeyTable.build(n_keys, ...): build it over every key of the "
            "stream, or fix the encoder that assigned this code")


def route(policy: str, keys: np.ndarray, table: KeyTable, *, state: RouterState | None = None,
          sources: np.ndarray | None = None, epsilon: float = 0.01, compiled: bool = True
          ) -> tuple[np.ndarray, RouterState]:
    """Bins of `keys` (key codes, in arrival order) under `policy`, and the sources' new state.

    `sources[i]` is the source that routes message i (default: all source 0); `state` the
    sources' state before the batch (default: fresh, one source or as many as `sources` needs).
    `compiled=False` runs the sequential policies' pure-Python loops (same result, slower).
    """
    name, eps = canonical(policy), check_epsilon(epsilon)
    keys = np.asarray(keys, dtype=np.int64)
    check_keys(keys, table)
    b, n = table.bins, len(keys)
    src = np.zeros(n, dtype=np.int64) if sources is None else np.asarray(sources, dtype=np.int64)
    if state is None:
        state = RouterState.zeros(int(src.max()) + 1 if n else 1, b)
    if len(src) != n or (n and (src.min() < 0 or src.max() >= state.sources)):
        raise ValueError("sources must give one source id in [0, state.sources) per message")
    if state.load.shape != (state.sources, b):
        raise ValueError(f"router state has {state.load.shape[1]} bins, the table {b}")
    S = state.sources
    t = state.sent[src] + _ranks(src, S) + 1  # per-source message number, current included
    if name == "kg":
        out = table.first[keys]
    elif name == "sg":
        out = (t - 1 + src) % b
    elif name == "ch":
        out = table.ring_bins[table.ring_start[keys]]
    elif compiled:
        out = _sequential(name, keys, table, t, src, state, eps)
    elif name == "pkg":
        out = _least_of_two(table.first[keys], table.second[keys], src, state)
    elif name == "potc_msg":
        out = _least_of_two(*_potc_pair(table, src, t), src, state)
    elif name == "porc":
        out = _porc(table.first[keys], table.step[keys], cap(t, b, eps), src, state, keys)
    else:  # chbl
        out = _chbl(table.ring_start[keys], table.ring_bins, cap(t, b, eps), src, state,
                   keys)
    out = np.asarray(out, dtype=np.int64)
    load = state.load.copy()
    if S == 1:
        load[0] += np.bincount(out, minlength=b)
    else:
        np.add.at(load, (src, out), 1)
    return out, RouterState(state.sent + np.bincount(src, minlength=S), load)


def _potc_pair(table: KeyTable, src: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """POTC's two bins of each message: two slices of one hash of (source, t, table seed)."""
    salt = splitmix64(np.array([table.seed * 1000003 + 77], dtype=np.uint64))[0]
    r = splitmix64((src.astype(np.uint64) << np.uint64(40)) ^ t.astype(np.uint64) ^ salt)
    b = np.uint64(table.bins)
    return (r % b).astype(np.int64), ((r >> np.uint64(32)) % b).astype(np.int64)


def _sequential(name: str, keys: np.ndarray, table: KeyTable, t: np.ndarray, src: np.ndarray,
                state: RouterState, eps: float) -> np.ndarray:
    """PKG, POTC, PORC or CH-BL through its compiled loop (kernels.py) on a copy of the loads.

    numba is imported here, on first use, so that the policies that never need it do not pay
    its import time.
    """
    import runtime.routing.kernels as kernels

    load = np.array(state.load, dtype=np.int64, order="C")
    src = np.ascontiguousarray(src, dtype=np.int64)
    b = table.bins
    if name == "pkg":
        return kernels.least_of_two(table.first[keys], table.second[keys], src, load)
    if name == "potc_msg":
        return kernels.least_of_two(*_potc_pair(table, src, t), src, load)
    if name == "porc":
        return kernels.porc(table.first[keys], table.step[keys], cap(t, b, eps), src, load)
    return kernels.chbl(table.ring_start[keys], table.ring_bins, cap(t, b, eps), src, load)


def _least_of_two(a: np.ndarray, c: np.ndarray, src: np.ndarray, state: RouterState) -> list[int]:
    """Greedy per message: the less loaded of (a_i, c_i) by the source's counts; ties to a_i."""
    out: list[int] = []
    put = out.append
    loads = state.load.tolist()
    if state.sources == 1:
        L = loads[0]
        for x, y in zip(a.tolist(), c.tolist(), strict=True):
            if L[y] < L[x]:
                x = y
            L[x] += 1
            put(x)
        return out
    for s, x, y in zip(src.tolist(), a.tolist(), c.tolist(), strict=True):
        L = loads[s]
        if L[y] < L[x]:
            x = y
        L[x] += 1
        put(x)
    return out


def _porc(first: np.ndarray, step: np.ndarray, caps: np.ndarray, src: np.ndarray,
          state: RouterState, keys: np.ndarray) -> list[int]:
    """PORC: H_1, H_1 + s, H_1 + 2s, ... (mod b) to the first bin with load < cap_t.

    Exact shortcut: while a source's cap is unchanged, loads only grow, so the probes a key found
    full stay full; a hot key's probe count is cached per (source, key) with the cap it was
    found at, and the next probe starts there.
    """
    b, nsrc = state.load.shape[1], state.sources
    out: list[int] = []
    put = out.append
    loads = state.load.tolist()
    seen: dict[int, tuple[int, int]] = {}
    L = loads[0]
    tags = keys * nsrc + src if nsrc > 1 else keys
    for j, c, s, tag, sid in zip(first.tolist(), caps.tolist(), step.tolist(), tags.tolist(),
                                 src.tolist(), strict=True):
        if nsrc > 1:
            L = loads[sid]
        if L[j] >= c:
            h = j
            j = (h + s) % b
            if L[j] >= c:  # a hot key: resume where it found room at this cap
                hit = seen.get(tag)
                n = hit[1] if hit is not None and hit[0] == c else 2
                j = (h + n * s) % b
                while L[j] >= c:
                    j = (j + s) % b
                    n += 1
                seen[tag] = (c, n)
        L[j] += 1
        put(j)
    return out


def _chbl(start: np.ndarray, ring: np.ndarray, caps: np.ndarray, src: np.ndarray,
          state: RouterState, keys: np.ndarray) -> list[int]:
    """CH-BL: walk the ring clockwise from the key's point to a bin with load < cap_t (the
    walk is cached per (source, key) while the cap is unchanged, as in `_porc`)."""
    P, R, CAP, K = start.tolist(), ring.tolist(), caps.tolist(), keys.tolist()
    size, nsrc = len(R), state.sources
    out = [0] * len(P)
    loads = state.load.tolist()
    S = src.tolist() if nsrc > 1 else None
    L = loads[0]
    seen: dict[int, tuple[int, int]] = {}
    for i in range(len(P)):
        if S is not None:
            L = loads[S[i]]
        p = P[i]
        j = R[p]
        c = CAP[i]
        if L[j] >= c and L[R[p + 1 if p + 1 < size else 0]] >= c:
            tag = K[i] * nsrc + (S[i] if S is not None else 0)
            hit = seen.get(tag)
            if hit is not None and hit[0] == c:
                p = hit[1] - 1  # the bin it last took may still be free
            while True:
                p += 1
                if p == size:
                    p = 0
                j = R[p]
                if L[j] < c:
                    break
            seen[tag] = (c, p)
        elif L[j] >= c:
            p = p + 1 if p + 1 < size else 0
            j = R[p]
        L[j] += 1
        out[i] = j
    return out
