"""Offline QA algorithms (Zong et al. 2015 §4, §6.1): a target assignment from scratch.

Every algorithm works on query types t (n_t queries reading S_t, w(t) = w(S_t)) and returns
the type-level placement as (t, j, b) triples ("b queries of type t on server j"), which
`realise` turns into a node per unit, keeping a unit on its current node where the triples
allow it (fewest migrations for the same traffic). Server capacities cap_j come from
`placement.herding.instance.capacities` (eq. 1, capacity-weighted, ≥ ⌈n·c_j/C⌉).

- IC (§4.1.2): over pairs (t with unassigned queries, j with spare room) take the least
  incremental cost Δ = w(t \\ S_j); assign min(spare_j, rem_t).
- MMS (§4.1.2): the same, minimising the server's traffic after it, w(S_j ∪ t).
- MQP (§4.1.1, eq. 3, Lemma 3): k rounds, each fills an empty server with whole types, largest
  n_t first (ties: the heavier w(t), then the type index), until ≥ θ queries, trimming the
  last type to the capacity.
- single_source (Fig. 2, Thm 3): the server with the most spare room takes the source (type)
  of the largest rate; b = min(d_j, n_s).
- OffRand (§6.1): a random type, a random server with room, fill until one runs out; repeat.

IC and MMS live in `placement.herding.greedy` (their tie-breaks and the incremental best-pair
structure that makes them scale); they are re-exported here.
"""

from __future__ import annotations

import numpy as np

from placement.herding.greedy import greedy_ic_mms
from placement.herding.instance import Instance, IntArray

__all__ = ["Triples", "greedy_ic_mms", "mqp", "offrand", "realise", "run_offline",
           "single_source"]

#: (type, server, count) arrays of equal length
Triples = tuple[IntArray, IntArray, IntArray]


def _triples(rows: list[tuple[int, int, int]]) -> Triples:
    if not rows:
        z = np.zeros(0, np.int64)
        return z, z.copy(), z.copy()
    arr = np.asarray(rows, dtype=np.int64)
    return arr[:, 0], arr[:, 1], arr[:, 2]


def mqp(inst: Instance, caps: IntArray, *, theta: str = "saturate", nu: float = 0.05
        ) -> Triples:
    """MQP rounds (§4.1.1): server j takes whole types, largest rem_t first, until ≥ θ_j.

    θ_j = min(cap_j, queries left) with "saturate" (App. C: "saturate a server"); "eq3" is
    eq. 3's n − (1+ν)(k−1)n/k, clamped to ≥ 1 (it is negative for ν > 1/(k−1)). A server
    holding more than cap_j gives back the excess of the last type taken (§4.1.1 step 3)."""
    rem = inst.type_count.astype(np.int64).copy()
    n, k_a = inst.n, int(inst.in_a.sum())
    eq3 = max(1, int(np.ceil(n - (1.0 + nu) * (k_a - 1) * n / max(k_a, 1) - 1e-9)))
    room = caps.astype(np.int64).copy()
    out: list[tuple[int, int, int]] = []

    def fill(j: int, target: int) -> None:
        live = np.flatnonzero(rem > 0)  # most queries first, then heavier w(t), then index
        live = live[np.lexsort((live, -inst.type_w[live], -rem[live]))]
        taken = 0
        for t in live.tolist():
            if taken >= target or room[j] <= 0:
                break
            b = int(min(rem[t], room[j]))  # a whole type, trimmed to the capacity
            out.append((t, j, b))
            rem[t] -= b
            room[j] -= b
            taken += b

    for j in range(inst.k):
        if room[j] > 0 and rem.sum() > 0:
            fill(j, int(room[j]) if theta == "saturate" else min(int(room[j]), eq3))
    for j in range(inst.k):  # what eq. 3's small θ left over fills the servers' rooms
        if room[j] > 0 and rem.sum() > 0:
            fill(j, int(room[j]))
    return _triples(out)


def single_source(inst: Instance, caps: IntArray) -> Triples:
    """Fig. 2: the server with the largest spare room d_j takes the type of the largest rate.

    Ties: the lower server index; the type with more queries, then the lower index. With
    single-source queries, types are sources (Thm 3: traffic ≤ 2·OPT); with multi-source
    queries it runs on types with w(t) = w(S_t), no guarantee."""
    rem = inst.type_count.astype(np.int64).copy()
    order = np.lexsort((np.arange(inst.n_types), -rem, -inst.type_w))
    spare = caps.astype(np.int64).copy()
    out: list[tuple[int, int, int]] = []
    for t in order:
        t = int(t)
        while rem[t] > 0:
            j = int(np.argmax(spare))  # first index among ties
            b = int(min(spare[j], rem[t]))
            if b <= 0:
                raise ValueError("single_source: no server has room left (Σ cap_j < n)")
            out.append((t, j, b))
            spare[j] -= b
            rem[t] -= b
    return _triples(out)


def offrand(inst: Instance, caps: IntArray, seed: int) -> Triples:
    """OffRand (§6.1): random type, random server with room, fill until one runs out."""
    rng = np.random.default_rng(seed)
    rem = inst.type_count.astype(np.int64).copy()
    spare = caps.astype(np.int64).copy()
    open_servers = [j for j in range(inst.k) if spare[j] > 0]
    out: list[tuple[int, int, int]] = []
    for t in rng.permutation(inst.n_types):
        t = int(t)
        while rem[t] > 0:
            i = int(rng.integers(len(open_servers)))
            j = open_servers[i]
            b = int(min(spare[j], rem[t]))
            out.append((t, j, b))
            spare[j] -= b
            rem[t] -= b
            if spare[j] == 0:
                open_servers[i] = open_servers[-1]
                open_servers.pop()
    return _triples(out)


def realise(inst: Instance, triples: Triples) -> IntArray:
    """A node per unit from type-level counts x[t, j]: units already on j stay there first,
    the others fill the remaining slots in unit order."""
    t_arr, j_arr, b_arr = triples
    k = max(inst.k, 1)
    x: dict[int, int] = {}
    for t, j, b in zip(t_arr.tolist(), j_arr.tolist(), b_arr.tolist(), strict=True):
        x[t * k + j] = x.get(t * k + j, 0) + b
    node = np.full(inst.n, -1, np.int64)
    cur = inst.current
    has_cur = cur >= 0
    if has_cur.any():  # keep: rank within (type, current node) below x[t, cur]
        codes = inst.unit_type * k + np.where(has_cur, cur, 0)
        idx = np.flatnonzero(has_cur)
        idx = idx[np.argsort(codes[idx], kind="stable")]
        c = codes[idx]
        starts = np.r_[0, np.flatnonzero(np.diff(c)) + 1]
        rank = np.arange(len(c)) - np.repeat(starts, np.diff(np.r_[starts, len(c)]))
        quota = np.array([x.get(int(v), 0) for v in c[starts]], dtype=np.int64)
        keep = rank < np.repeat(quota, np.diff(np.r_[starts, len(c)]))
        kept_units = idx[keep]
        node[kept_units] = cur[kept_units]
        for v, cnt in zip(*np.unique(c[keep], return_counts=True), strict=True):
            x[int(v)] -= int(cnt)
    left = np.flatnonzero(node < 0)
    left = left[np.argsort(inst.unit_type[left], kind="stable")]
    keys = sorted((key for key, b in x.items() if b > 0))
    t_of = np.array([key // k for key in keys], dtype=np.int64)
    j_of = np.array([key % k for key in keys], dtype=np.int64)
    b_of = np.array([x[key] for key in keys], dtype=np.int64)
    slots = np.repeat(j_of, b_of)  # sorted by type, as `left` is
    if len(slots) != len(left) or not np.array_equal(np.repeat(t_of, b_of),
                                                     inst.unit_type[left]):
        raise AssertionError("offline: the type counts do not cover every unit once")
    node[left] = slots
    return node


def run_offline(inst: Instance, caps: IntArray, algorithm: str, *, seed: int = 0,
                theta: str = "saturate", nu: float = 0.05) -> IntArray:
    """The target node of every unit under `algorithm` (one of OfflineParams.algorithm)."""
    if algorithm in ("ic", "mms"):
        triples = greedy_ic_mms(inst, caps, mms=algorithm == "mms")
    elif algorithm == "mqp":
        triples = mqp(inst, caps, theta=theta, nu=nu)
    elif algorithm == "single_source":
        triples = single_source(inst, caps)
    elif algorithm == "offrand":
        triples = offrand(inst, caps, seed)
    else:
        raise ValueError(f"unknown offline algorithm {algorithm!r}; known: ic, mms, mqp, "
                         "single_source, offrand")
    return realise(inst, triples)
