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
  n_t first, until ≥ θ queries, trimming the last type to the capacity.
- single_source (Fig. 2, Thm 3): the server with the most spare room takes the source (type)
  of the largest rate; b = min(d_j, n_s).
- OffRand (§6.1): a random type, a random server with room, fill until one runs out; repeat.

Tie-breaks (the paper gives none): IC/MMS prefer, at equal score, the type with more queries
(n_t, then type order), then the less loaded server, then the lower server index; an empty
server wins a tie against a used one (so a type sharing nothing opens a new server).
"""

from __future__ import annotations

import numpy as np

from placement.herding.instance import Instance, IntArray

__all__ = ["Triples", "greedy_ic_mms", "mqp", "offrand", "realise", "run_offline",
           "single_source"]

#: (type, server, count) arrays of equal length
Triples = tuple[IntArray, IntArray, IntArray]
#: how many best types an open server remembers between its rescans (IC, MMS)
CACHE = 128


def _triples(rows: list[tuple[int, int, int]]) -> Triples:
    if not rows:
        z = np.zeros(0, np.int64)
        return z, z.copy(), z.copy()
    arr = np.asarray(rows, dtype=np.int64)
    return arr[:, 0], arr[:, 1], arr[:, 2]


def greedy_ic_mms(inst: Instance, caps: IntArray, *, mms: bool) -> Triples:
    """IC (Δ = w(t \\ S_j)) or MMS (w(S_j) + Δ), one (t*, j*) pair per round.

    An open server j keeps a dense row Δ_j over the types, lowered source by source as it gains
    sources (one slice of the source→type incidence per new source), and the list of the
    types it touched (Δ_j(t) < w(t)); its best pair is re-found over that list only. An
    untouched type costs its own weight anywhere, so the lightest live type (one sorted
    pointer) is every server's untouched candidate; it goes to an empty server while there is
    one (an empty server wins the tie), else to the open server where it scores least."""
    n_types = inst.n_types
    order = np.lexsort((np.arange(n_types), -inst.type_count))  # more queries first
    rank = np.empty(n_types, np.int64)
    rank[order] = np.arange(n_types)
    w_t = inst.type_w[order]  # from here on a type is its priority index p
    rem = inst.type_count[order].astype(np.int64)
    tptr, tind = inst.type_indptr, inst.type_indices
    owners = np.repeat(rank, np.diff(tptr))
    src_ptr = np.zeros(inst.m + 1, np.int64)
    np.cumsum(np.bincount(tind, minlength=inst.m), out=src_ptr[1:])
    src_types = owners[np.argsort(tind, kind="stable")]
    light = np.lexsort((np.arange(n_types), w_t))  # the untouched candidates, lightest first
    head = 0
    alive = rem > 0
    k = inst.k
    spare = caps.astype(np.int64).copy()
    load = np.zeros(k, np.int64)
    f = np.zeros(k)
    rows: dict[int, np.ndarray] = {}
    touched: dict[int, np.ndarray] = {}
    covered: dict[int, np.ndarray] = {}
    best_score = np.full(k, np.inf)
    best_type = np.full(k, -1, np.int64)
    out: list[tuple[int, int, int]] = []

    compacted: dict[int, int] = {}
    cache: dict[int, tuple[np.ndarray, np.ndarray, bool]] = {}  # j -> best few, complete?
    ptr: dict[int, int] = {}

    def rescan(j: int, wanted: int = CACHE) -> None:
        """Server j's best few types by (Δ_j, p); they stay valid until j gains sources."""
        row, idx = rows[j], touched[j]
        dense = len(idx) > n_types // 4  # touches much: scan the whole row
        if not dense and len(idx) > 2 * compacted.get(j, 32):  # drop dead types, repeats
            idx = touched[j] = np.unique(idx[alive[idx]])
            compacted[j] = len(idx)
        vals = row if dense else row[idx]
        size = len(vals)
        few = min(wanted, size)
        if few == 0:
            cache[j], ptr[j] = (np.zeros(0, np.int64), np.zeros(0), True), 0
        elif few == 1:  # the best only: least Δ, then lowest p
            best = vals.min()
            at = np.flatnonzero(vals == best)
            p = int(at[0]) if dense else int(idx[at].min())
            cache[j], ptr[j] = (np.array([p]), np.array([best]), size == 1), 0
        else:
            if few < size:  # the few smallest (Δ, p): ties at the cut by lowest p
                cut = vals[np.argpartition(vals, few - 1)[few - 1]]
                less = np.flatnonzero(vals < cut)
                at = np.flatnonzero(vals == cut)
                tie = at if dense else idx[at]
                need = few - len(less)
                tie = np.partition(tie, need - 1)[:need] if need < len(tie) else tie
                top = np.concatenate([less if dense else idx[less], tie])
                top_v = np.concatenate([vals[less], np.full(len(tie), cut)])
            else:
                top, top_v = (np.arange(size) if dense else idx), vals
            srt = np.lexsort((top, top_v))
            top, top_v = top[srt], top_v[srt]
            finite = np.isfinite(top_v)
            complete = few == size or not finite.all()  # every live candidate is here
            cache[j], ptr[j] = (top[finite], top_v[finite], complete), 0
        settle(j)

    def settle(j: int) -> None:
        """j's best is the first live type of its cache (a rescan when none is left)."""
        types, vals, complete = cache[j]
        i = ptr[j]
        while i < len(types) and not alive[types[i]]:
            i += 1
        ptr[j] = i
        if i == len(types):
            if not complete:
                rescan(j)
                return
            best_score[j], best_type[j] = np.inf, -1
            return
        best_type[j] = int(types[i])
        best_score[j] = float(vals[i]) + (f[j] if mms else 0.0)

    remaining = int(rem.sum())
    while remaining > 0:
        while not alive[light[head]]:
            head += 1
        ph = int(light[head])
        empties = np.flatnonzero((load == 0) & (spare > 0))
        mn = float(best_score.min())
        if len(empties) and w_t[ph] <= mn + 1e-12:
            j, p = int(empties[0]), ph
        elif mn < np.inf and (len(empties) or mn <= w_t[ph] + (
                float(f[spare > 0].min()) if mms else 0.0) + 1e-12):
            tied = np.flatnonzero(best_score <= mn + 1e-12)
            j = int(tied[np.lexsort((tied, load[tied]))[0]])
            p = int(best_type[j])
        else:  # the lightest untouched type on the open server where it scores least
            open_ = np.flatnonzero(spare > 0)
            key = (f[open_] if mms else np.zeros(len(open_)))
            j = int(open_[np.lexsort((open_, load[open_], key))[0]])
            p = ph
        b = int(min(spare[j], rem[p]))
        out.append((int(order[p]), j, b))
        rem[p] -= b
        remaining -= b
        spare[j] -= b
        load[j] += b
        if j not in rows:  # open the server: its Δ row over the live types
            rows[j] = np.where(alive, w_t, np.inf)
            touched[j] = np.zeros(0, np.int64)
            covered[j] = np.zeros(inst.m, dtype=bool)
        o = int(order[p])
        new = tind[tptr[o]:tptr[o + 1]]
        new = new[~covered[j][new]]
        if len(new):
            covered[j][new] = True
            f[j] += float(inst.rates[new].sum())
            row = rows[j]
            slices = [touched[j]]
            for s in new.tolist():
                sl = src_types[src_ptr[s]:src_ptr[s + 1]]
                row[sl] -= inst.rates[s]
                slices.append(sl)
            if len(touched[j]) <= n_types // 4:  # past that the whole row is scanned
                touched[j] = np.concatenate(slices)
            np.maximum(row, 0.0, out=row)  # float drift: Δ ≥ 0
        if rem[p] == 0:
            alive[p] = False
            for row in rows.values():
                row[p] = np.inf
        if spare[j] == 0:
            del rows[j], touched[j], covered[j]
            compacted.pop(j, None)
            cache.pop(j, None)
            best_score[j], best_type[j] = np.inf, -1
        else:
            rescan(j, 1)  # j changes again soon: its best only
        if rem[p] == 0:
            for jj in np.flatnonzero(best_type == p).tolist():
                settle(jj)
    return _triples(out)


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
        live = np.flatnonzero(rem > 0)
        live = live[np.lexsort((live, -rem[live]))]
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
