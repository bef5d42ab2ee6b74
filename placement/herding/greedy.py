"""IC and MMS (Zong et al. 2015 §4.1.2) at scale: the best (type, server) pair, incrementally.

The rule, per round, over the types t with queries left and the servers j with room:
Δ_j(t) = w(t \\ S_j) (IC) or w(S_j) + Δ_j(t) (MMS); take the least, assign min(spare_j, rem_t).
Tie-breaks (the paper gives none): a type's priority p is "more queries first, then lower type
index"; server j offers its least (Δ_j(t), p); an empty server offers the lightest live type
(w(t), p) and wins a tie (a type sharing nothing opens a new server, the lowest index first);
among tied open servers the least loaded (|Q_j|), then the lowest index, takes its best type.

Why it is fast (n = 10^6 queries, |T| ≈ 7·10^5 types, k = 1,000 servers):
- **Untouched types cost their weight everywhere.** A type sharing no source with S_j has
  Δ_j(t) = w(t), so the lightest live type ph (one pointer over the types sorted by (w, p))
  is every server's best untouched candidate: a server only tracks the types it touched.
- **Δ only falls, and only for the types of the sources j gains.** A type whose only source
  covered on j is s has Δ_j(t) = w(t \\ {s}), the same on every server: so each source keeps
  one shared run of its types sorted by (that Δ, p), built once, and a server that gains s
  puts the run's head on its lazy heap (a pointer, not a copy). The types that now have two or
  more sources covered on j get their fresh Δ_j (summed over their uncovered sources, in
  source order) as one sorted run of j's own (numpy for a popular source's many types, Python
  for a few). A type's older entries are larger, so they surface only after its fresh one,
  i.e. once it is dead (no query left); dead entries are dropped when they surface, and in
  the shared runs a path-compressed "next live position" skips them for every server at once.
  Memory: the shared runs (one entry per type and source) and the multi-covered pairs of the
  open servers; no dense row per server.
- **Two heaps over the servers**, keyed (best touched Δ + f_j, |Q_j|, j) and (f_j, |Q_j|, j)
  (f_j = w(S_j) for MMS, 0 for IC), versioned per server; a key whose best type died is lower
  than the truth, so it is fixed when it surfaces. The tied servers are the two heaps' tops.

Each round costs O(log) Python work plus, when the server gains sources, work linear in the
types of those sources (numpy for popular ones). The sums are in source order, so on rates whose sums are exact in
floating point (integers, the benchmark's; quarters, the tests') the result is exactly the
rule's (tests/placement/herding_testlib.py `greedy_reference` is the oracle).
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Sequence
from heapq import heappop, heappush, heapreplace

import numpy as np

from placement.herding.instance import Instance, IntArray

__all__ = ["greedy_ic_mms"]

#: a gain whose sources have at most this many types is scanned in Python, a larger one in numpy
SMALL = 16

Triples = tuple[IntArray, IntArray, IntArray]
#: a server's own sorted run of multi-covered types: (Δ values, priorities)
Run = tuple[Sequence[float], Sequence[int]]
#: a run's head in a server's heap: (Δ, p, tie-break, run index or −1−s for s's shared
#: run, position)
Entry = tuple[float, int, int, int, int]
EMPTY_RUN: Run = ((), ())


def _by_source(pad: IntArray, pad_rates: np.ndarray, m: int
               ) -> tuple[np.ndarray, IntArray, IntArray, IntArray]:
    """The shared runs: for every source s, the types reading it sorted by (Δ when s is their
    only covered source, p), as one CSR (values, types, starts); and each (type, column)'s
    position in it (-1 for padding)."""
    n_types, dmax = pad.shape
    valid = pad < m
    alone = np.zeros(pad.shape)
    for c in range(dmax):  # the other sources' rates, summed in source order
        for c2 in range(dmax):
            if c2 != c:
                alone[:, c] += pad_rates[:, c2]
    src = pad[valid]
    typ = np.broadcast_to(np.arange(n_types)[:, None], pad.shape)[valid]
    val = alone[valid]
    srt = np.lexsort((typ, val, src))
    starts = np.searchsorted(src[srt], np.arange(m + 1))
    pos = np.full(pad.shape, -1, np.int64)
    inv = np.empty(len(srt), np.int64)
    inv[srt] = np.arange(len(srt))
    pos[valid] = inv
    return val[srt], typ[srt].astype(np.int64), starts.astype(np.int64), pos


def greedy_ic_mms(inst: Instance, caps: IntArray, *, mms: bool, small: int = SMALL
                  ) -> Triples:
    """IC (mms=False) or MMS (mms=True): (type, server, count) triples in the rounds' order.

    `small`: up to how many types a gain is scanned in Python (speed only, same result)."""
    n_types, m, k = inst.n_types, inst.m, inst.k
    order = np.lexsort((np.arange(n_types), -inst.type_count))  # priority p -> type
    rank = np.empty(n_types, np.int64)
    rank[order] = np.arange(n_types)
    w_np = inst.type_w[order]
    w: list[float] = w_np.tolist()
    rem: list[int] = inst.type_count[order].tolist()
    tptr, tind = inst.type_indptr, inst.type_indices
    deg = np.diff(tptr)
    dmax = max(int(deg.max()) if n_types else 0, 1)
    pad = np.full((n_types, dmax), m, np.int64)  # a type's sources by p; m: none (rate 0)
    pad[np.repeat(rank, deg), np.arange(len(tind)) - np.repeat(tptr[:-1], deg)] = tind
    pad_rates = np.append(inst.rates, 0.0)[pad]
    by_p = deg[order].tolist()
    at = np.r_[0, np.cumsum(by_p)].tolist()
    flat = pad[pad < m].tolist()
    tsrc = [flat[at[p]:at[p + 1]] for p in range(n_types)]  # p -> its sources, in order
    sv_np, sp_np, start_np, tpos = _by_source(pad, pad_rates, m)
    flat = tpos[pad < m].tolist()
    tpos_l = [flat[at[p]:at[p + 1]] for p in range(n_types)]  # p -> its shared positions
    del flat, tpos
    sv: list[float] = sv_np.tolist()
    sp: list[int] = sp_np.tolist()
    start: list[int] = start_np.tolist()
    nxt = list(range(len(sp) + 1))  # the next live shared position (path-compressed)
    rates: list[float] = inst.rates.tolist()
    light: list[int] = np.lexsort((np.arange(n_types), w_np)).tolist()
    head = 0
    alive = bytearray(b"\x01") * n_types
    alive_np = np.frombuffer(alive, dtype=np.bool_)
    spare: list[int] = [int(c) for c in caps]
    load, f, ver = [0] * k, [0.0] * k, [0] * k
    heaps: dict[int, list[Entry]] = {}
    runs: dict[int, list[Run]] = {}
    cov_set: dict[int, set[int]] = {}
    cov_row: dict[int, np.ndarray] = {}
    seq = itertools.count()
    touched_heap: list[tuple[float, int, int, int]] = []
    untouched_heap: list[tuple[float, int, int, int]] = []
    out_p: list[int] = []
    out_j: list[int] = []
    out_b: list[int] = []

    def find(i: int) -> int:
        """The first live shared position ≥ i."""
        root = i
        while nxt[root] != root:
            root = nxt[root]
        while nxt[i] != root:
            nxt[i], i = root, nxt[i]
        return root

    def top(j: int) -> Entry | None:
        """j's least live touched entry (Δ, p, seq, run, position), dropping dead ones."""
        h = heaps[j]
        while h:
            e = h[0]
            ref, i = e[3], e[4]
            if ref < 0:  # the shared run of source -ref-1
                if alive[sp[i]]:
                    return e
                i = nxt[i]
                if nxt[i] != i:
                    i = find(i)
                if i < start[-ref]:
                    heapreplace(h, (sv[i], sp[i], e[2], ref, i))
                else:
                    heappop(h)
                continue
            vals, ps = runs[j][ref]
            if alive[ps[i]]:
                return e
            n_run = len(ps)
            i += 1
            while i < n_run and not alive[ps[i]]:
                i += 1
            if i < n_run:
                heapreplace(h, (vals[i], ps[i], e[2], ref, i))
            else:  # the run is spent
                heappop(h)
                runs[j][ref] = EMPTY_RUN
        return None

    def gain(j: int, new: list[int]) -> None:
        """j gained the sources `new`: their shared runs join j's heap, and the live types
        now covered on two or more sources get their fresh Δ_j as one sorted run."""
        h, cs = heaps[j], cov_set[j]
        size = 0
        for s in new:
            i = start[s]
            if nxt[i] != i:
                i = find(i)
            if i < start[s + 1]:
                heappush(h, (sv[i], sp[i], next(seq), -s - 1, i))
            size += start[s + 1] - start[s]
        row = cov_row.get(j)
        if row is not None:
            row[new] = True
        run: Run
        if size <= small:  # a few types: in Python, each Δ summed in source order
            pairs = []
            for s in new:
                for t in sp[start[s]:start[s + 1]]:
                    if alive[t]:
                        d, c = 0.0, 0
                        for s2 in tsrc[t]:
                            if s2 in cs:
                                c += 1
                            else:
                                d += rates[s2]
                        if c > 1:
                            pairs.append((d, t))
            if not pairs:
                return
            pairs.sort()
            run = ([d for d, _ in pairs], [t for _, t in pairs])
        else:  # many: vectorised, the same sums column by column
            ts = np.concatenate([sp_np[start[s]:start[s + 1]] for s in new])
            ts = ts[alive_np[ts]]
            if row is None:  # a server's first large batch: its covered sources as a row
                row = cov_row[j] = np.zeros(m + 1, dtype=bool)
                row[list(cs)] = True
            srcs = pad[ts]
            cov = row[srcs]
            multi = cov.sum(axis=1) > 1
            if not multi.any():
                return
            ts, cov, rts = ts[multi], cov[multi], pad_rates[ts[multi]]
            d_arr = np.zeros(len(ts))
            for c in range(dmax):
                d_arr += np.where(cov[:, c], 0.0, rts[:, c])
            srt = np.lexsort((ts, d_arr))
            run = (array("d", d_arr[srt].tobytes()), array("q", ts[srt].tobytes()))
        runs[j].append(run)
        heappush(h, (run[0][0], run[1][0], next(seq), len(runs[j]) - 1, 0))

    def publish(j: int) -> None:
        """j's keys in both server heaps, under a new version."""
        ver[j] += 1
        e = top(j)
        if e is not None:
            heappush(touched_heap, (e[0] + f[j], load[j], j, ver[j]))
        heappush(untouched_heap, (f[j], load[j], j, ver[j]))

    def best_touched() -> tuple[float, int, int, int] | None:
        while touched_heap:
            s, lj, j, v = touched_heap[0]
            if v != ver[j]:
                heappop(touched_heap)
                continue
            e = top(j)
            if e is None:
                heappop(touched_heap)
                continue
            if e[0] + f[j] != s:  # its best type died: the key grows
                heapreplace(touched_heap, (e[0] + f[j], lj, j, v))
                continue
            return touched_heap[0]
        return None

    def best_untouched() -> tuple[float, int, int, int] | None:
        while untouched_heap and untouched_heap[0][3] != ver[untouched_heap[0][2]]:
            heappop(untouched_heap)
        return untouched_heap[0] if untouched_heap else None

    def next_empty(j: int) -> int:
        while j < k and spare[j] == 0:
            j += 1
        return j

    empty = next_empty(0)
    inf = float("inf")
    remaining = sum(rem)
    while remaining > 0:
        while not alive[light[head]]:
            head += 1
        ph = light[head]
        wph = w[ph]
        a, u = best_touched(), best_untouched()
        sa = a[0] if a is not None else inf
        su = wph + u[0] if u is not None else inf
        mn = min(sa, su)
        if empty < k and wph <= mn:
            j, p = empty, ph
        else:
            tied = []
            if a is not None and sa == mn:
                tied.append((a[1], a[2]))
            if u is not None and su == mn:
                tied.append((u[1], u[2]))
            if not tied:
                raise ValueError("IC/MMS: no server has room left (the caps add up to < n)")
            j = min(tied)[1]
            e = top(j)
            p = e[1] if e is not None and (e[0], e[1]) < (wph, ph) else ph
        b = min(spare[j], rem[p])
        out_p.append(p)
        out_j.append(j)
        out_b.append(b)
        rem[p] -= b
        remaining -= b
        spare[j] -= b
        if load[j] == 0:  # open the server
            heaps[j], runs[j], cov_set[j] = [], [], set()
            empty = next_empty(empty + 1)
        load[j] += b
        if rem[p] == 0:
            alive[p] = 0
            for q in tpos_l[p]:
                nxt[q] = q + 1
        if spare[j] == 0:  # full: its structures go, its heap keys go stale
            ver[j] += 1
            del heaps[j], runs[j], cov_set[j]
            cov_row.pop(j, None)
            continue
        cs = cov_set[j]
        new = [s for s in tsrc[p] if s not in cs]
        if new:
            cs.update(new)
            if mms:
                f[j] += sum(rates[s] for s in new)
            gain(j, new)
        publish(j)
    if not out_p:
        z = np.zeros(0, np.int64)
        return z, z.copy(), z.copy()
    return (order[np.asarray(out_p, np.int64)], np.asarray(out_j, np.int64),
            np.asarray(out_b, np.int64))
