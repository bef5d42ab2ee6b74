"""The MILP's warm start: a pairwise-exchange local search on the paper's objective (§4.3.1).

The MILP's LP relaxation balances perfectly (fractional x_{i,k}), so a MIP solver gets little
guidance from it on this min–max problem with many nearly equal gLoad_k, and its incumbent
matters most. This search gives it a good one quickly:

- repeatedly take the worst node w (largest deviation: |load_w − mean| on A, (load_w − mean)⁺
  on B) and try every *move* (one key group from w to a partner j, or from j to w) and every
  *exchange* (key group a from w to j and b from j to w, with a − b close to the transfer
  t* = (dev_w − dev_j)/(1/cap_w + 1/cap_j) that would level the two nodes) with the `PARTNERS`
  nodes of A deviating most the other way;
- an operation is allowed if both nodes end strictly closer to mean than w was (so the sorted
  deviations decrease lexicographically and the search terminates), the budget (2) still holds
  (a key group that already moved may move again for free, or back to q_k and give its
  migration back), nothing moves onto B (Lemma 1) and the resource caps hold;
- among allowed operations it applies the one with the largest improvement of w per migration
  spent, then fewer migrations, then the smaller Σ dev² of the pair; ties by id;
- it stops when w cannot be improved (or at the deadline).

Flux and greedy spend the budget on single moves; exchanges are what fine-tunes nodes that sit
a fraction of a key group away from mean, which single moves only overshoot.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Mapping

from placement.common import EPS
from placement.determinism import clock_cut
from placement.metrics import mean_load
from placement.model import Budget, ClusterState

__all__ = ["PARTNERS", "exchange_search"]

PARTNERS = 24  # partners tried per step: the nodes of A deviating most the other way


def exchange_search(state: ClusterState, budget: Budget, start: Mapping[str, str],
                    caps: Mapping[str, float] | None = None, deadline: float | None = None
                    ) -> dict[str, str]:
    """Improve `start` (valid within the budget) by moves and exchanges; see the module doc.

    `deadline` (a `time.perf_counter()` value) stops the search early with what it has.
    """
    caps = dict(caps or {})
    mean = mean_load(state)
    cap = {n.id: n.capacity for n in state.nodes}
    in_b = {n.id: n.marked_for_removal for n in state.nodes}
    kg = {k.id: k for k in state.keygroups}
    home = state.assignment
    cur = dict(start)
    on: dict[str, list[str]] = {n.id: [] for n in state.nodes}
    for k in state.keygroups:
        on[cur[k.id]].append(k.id)
    raw = {n: sum(kg[k].load for k in ks) for n, ks in on.items()}
    res = {(n, r): sum(kg[k].loads.get(r, 0.0) for k in ks) for n, ks in on.items() for r in caps}
    moved = [k for k in cur if cur[k] != home[k]]
    count, cost = len(moved), sum(kg[k].migration_cost for k in moved)
    max_n = budget.max_migrations
    max_c = budget.max_migration_cost
    if max_n == 0 or max_c == 0:
        return cur
    avg_mc = sum(k.migration_cost for k in state.keygroups) / max(1, len(state.keygroups))
    a_nodes = sorted(n for n in cap if not in_b[n])

    def dev(n: str, r: float) -> float:
        return r / cap[n] - mean

    def bad(n: str, r: float) -> float:
        v = dev(n, r)
        return max(v, 0.0) if in_b[n] else abs(v)

    def delta(k: str | None, src: str, dst: str) -> tuple[int, float]:
        if k is None:
            return 0, 0.0
        n = int(dst != home[k]) - int(src != home[k])
        return n, n * kg[k].migration_cost

    def caps_ok(a: str | None, b: str | None, w: str, j: str) -> bool:
        for r, c in caps.items():
            la = 0.0 if a is None else kg[a].loads.get(r, 0.0)
            lb = 0.0 if b is None else kg[b].loads.get(r, 0.0)
            if (res[j, r] + la - lb > c * cap[j] + 1e-9
                    or res[w, r] - la + lb > c * cap[w] + 1e-9):
                return False
        return True

    for _ in range(20 * len(state.keygroups) + 100):
        if deadline is not None and time.perf_counter() > deadline:
            clock_cut("the exchange search")
            break
        w = max(cap, key=lambda n: (bad(n, raw[n]), n))
        bw = bad(w, raw[w])
        if bw <= EPS:
            break
        sign = 1.0 if dev(w, raw[w]) > 0 else -1.0  # + : w sheds load, − : w takes load
        partners = sorted((j for j in a_nodes if j != w),
                          key=lambda j: (sign * dev(j, raw[j]), j))[:PARTNERS]
        best: tuple[tuple[float, int, float], str | None, str | None, str, float] | None = None
        for j in partners:
            sizes = sorted((kg[b].load, b) for b in on[j])
            loads_j = [s for s, _ in sizes]
            t_star = (dev(w, raw[w]) - dev(j, raw[j])) / (1 / cap[w] + 1 / cap[j])
            for a in [None, *sorted(on[w])]:
                la = 0.0 if a is None else kg[a].load
                options: list[str | None] = [] if a is None else [None]
                if not in_b[w]:  # an exchange would move b onto w: never onto B
                    i = bisect.bisect_left(loads_j, la - t_star)
                    options += [sizes[x][1] for x in (i - 1, i) if 0 <= x < len(sizes)]
                for b in options:
                    if a is None and b is None:
                        continue
                    t = la - (0.0 if b is None else kg[b].load)
                    nw, nj = bad(w, raw[w] - t), bad(j, raw[j] + t)
                    worst = max(nw, nj)
                    if worst >= bw - EPS:
                        continue
                    dn_a, dc_a = delta(a, w, j)
                    dn_b, dc_b = delta(b, j, w)
                    dn, dc = dn_a + dn_b, dc_a + dc_b
                    if (max_n is not None and count + dn > max_n) or (
                            max_c is not None and cost + dc > max_c + EPS):
                        continue
                    if caps and not caps_ok(a, b, w, j):
                        continue
                    spent = dn if max_n is not None or avg_mc <= 0 else dc / avg_mc
                    key = ((worst - bw) / max(spent, 0.5), dn, nw * nw + nj * nj)
                    if best is None or key < best[0]:
                        best = (key, a, b, j, t)
        if best is None:
            break
        _, a, b, j, t = best
        for moving, src, dst in ((a, w, j), (b, j, w)):
            if moving is None:
                continue
            on[src].remove(moving)
            on[dst].append(moving)
            cur[moving] = dst
            n, c = delta(moving, src, dst)
            count, cost = count + n, cost + c
            for r in caps:
                res[src, r] -= kg[moving].loads.get(r, 0.0)
                res[dst, r] += kg[moving].loads.get(r, 0.0)
        raw[w] -= t
        raw[j] += t
    return cur
