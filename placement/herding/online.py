"""Online QA (Zong et al. 2015 §5): each arriving query placed once, irrevocably (Fig. 3).

Fig. 3's pipeline with eq. 4's balance rule: with n the number of queries in the system
counting the incoming one, server j (capacity weight c_j, C = Σ c over the live servers) is a
candidate iff |Q_j| + 1 ≤ d_j(n) = max(n·c_j/C + α, (1+ν)·n·c_j/C) (eq. 4, capacity-weighted;
Fig. 3's own strict test "|Q_i| + 1 < (1+ν)·Σ|Q|/k" admits no server for the first query, and
§5.2.2 replaces it by eq. 4). Among the candidates C, C* = argmin M(Q_j, q); ties go to the
least loaded server (|Q_j|/c_j), then the lowest index. With no candidate, the least loaded.

Metrics M (§5.1): LeastCost f(Q_j ∪ {q}) − f(Q_j) = w(S_q \\ S_j); LeastSource f(Q_j ∪ {q})
(rate-weighted, not a count of sources); LeastQT |T(Q_j ∪ {q})|. Baselines (§6): OnRand, a
uniform candidate; round robin, the next candidate after the last server used.

`OnlinePlacer` keeps per source and server the number of readers (an m×k int32 array, laid
out source-major so a query's d rows are contiguous), so one placement costs O(d·k) numpy work
whatever the number of queries in the system; departures and server churn are supported for
the benchmark's dynamic runs.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from placement.herding.instance import FloatArray, IntArray

__all__ = ["METRICS", "OnlinePlacer"]

METRICS = ("least_cost", "least_source", "least_qt", "onrand", "round_robin")


class OnlinePlacer:
    """The servers' state for online placement: readers per (source, server), |Q_j|, f(Q_j)."""

    def __init__(self, rates: FloatArray, capacity: FloatArray, *, metric: str = "least_cost",
                 nu: float = 0.05, alpha: float = 10.0, seed: int = 0,
                 live: npt.NDArray[np.bool_] | None = None) -> None:
        if metric not in METRICS:
            raise ValueError(f"unknown online metric {metric!r}; known: {', '.join(METRICS)}")
        self.rates = np.asarray(rates, dtype=np.float64)
        self.capacity = np.asarray(capacity, dtype=np.float64).copy()
        k = len(self.capacity)
        self.live = np.ones(k, bool) if live is None else np.asarray(live, bool).copy()
        self.metric, self.nu, self.alpha = metric, float(nu), float(alpha)
        self.rng = np.random.default_rng(seed)
        self.readers = np.zeros((len(self.rates), k), dtype=np.int32)
        self.present = np.zeros((len(self.rates), k))  # 1.0 where readers > 0 (for the dot)
        self.count = np.zeros(k, dtype=np.int64)  # |Q_j|
        self.f = np.zeros(k)  # f(Q_j)
        self.qt = np.zeros(k, dtype=np.int64)  # |T(Q_j)|
        self.type_on: dict[int, IntArray] = {}  # type -> queries of that type per server
        self.rr = -1  # round robin's last server
        self.total = 0  # Σ_j |Q_j|, kept as a Python int
        self._share()

    def _share(self) -> None:
        """c_j/C over the live servers; a scalar when they are all alike (the fast path)."""
        c = np.where(self.live, self.capacity, 0.0)
        self.c_share = c / c.sum()
        live_caps = self.capacity[self.live]
        self.uniform = bool(self.live.all() and np.all(live_caps == live_caps[0]))
        self.norm_scale = 1.0 / self.capacity

    def sync(self) -> None:
        """After `readers`, `count` or `live` were set directly: refresh the derived arrays."""
        self.present = (self.readers > 0).astype(np.float64)
        self.f = self.rates @ self.present if len(self.rates) else np.zeros(self.k)
        self.total = int(self.count.sum())
        self._share()

    @property
    def k(self) -> int:
        return len(self.capacity)

    @property
    def n(self) -> int:
        return self.total

    def traffic(self) -> float:
        return float(self.f.sum())

    def eligible(self, extra: int = 1) -> npt.NDArray[np.bool_]:
        """eq. 4 with n counting the incoming query: |Q_j| + 1 ≤ d_j(n)."""
        n = self.total + extra
        if self.uniform:
            share = n / self.k
            bound = max(share + self.alpha, (1.0 + self.nu) * share)
            return self.count <= bound - 1 + 1e-9
        share_v = n * self.c_share
        bound_v = np.maximum(share_v + self.alpha, (1.0 + self.nu) * share_v)
        return self.live & (self.count + 1 <= bound_v + 1e-9)

    def score(self, sources: IntArray, qtype: int) -> FloatArray:
        """M(Q_j, q) for every server j."""
        if self.metric in ("least_cost", "least_source"):
            if not len(sources):
                added = np.zeros(self.k)
            else:
                w = self.rates[sources]
                added = float(w.sum()) - w @ self.present[sources]
            return added if self.metric == "least_cost" else self.f + added
        has = self.type_on.get(qtype)
        return (self.qt + 1 - (0 if has is None else (has > 0))).astype(np.float64)

    def choose(self, sources: IntArray, qtype: int = -1) -> int:
        """Fig. 3: a candidate with the least M, then the least loaded, then the lowest index."""
        ok = self.eligible()
        if self.metric == "onrand":
            cand = np.flatnonzero(ok)
            if len(cand):
                return int(cand[self.rng.integers(len(cand))])
        elif self.metric == "round_robin":
            cand = np.flatnonzero(ok)
            if len(cand):
                after = cand[cand > self.rr]
                self.rr = int(after[0] if len(after) else cand[0])
                return self.rr
        else:
            m = np.where(ok, self.score(sources, qtype), np.inf)
            best = m.min()
            if best < np.inf:
                tied = np.flatnonzero(m <= best + 1e-9 * max(1.0, abs(float(best))))
                if len(tied) == 1:
                    return int(tied[0])
                load = self.count[tied] * self.norm_scale[tied]
                return int(tied[np.argmin(load)])
        norm = np.where(self.live, self.count * self.norm_scale, np.inf)
        return int(np.argmin(norm))  # no candidate: the least loaded server

    def add(self, sources: IntArray, qtype: int, j: int) -> None:
        """Put one query (sources, type) on server j."""
        readers, present = self.readers, self.present
        for s in sources.tolist():
            r = int(readers[s, j])
            if r == 0:
                present[s, j] = 1.0
                self.f[j] += self.rates[s]
            readers[s, j] = r + 1
        self.count[j] += 1
        self.total += 1
        if self.metric == "least_qt":
            on = self.type_on.setdefault(qtype, np.zeros(self.k, np.int64))
            if on[j] == 0:
                self.qt[j] += 1
            on[j] += 1

    def remove(self, sources: IntArray, qtype: int, j: int) -> None:
        """A departure: the query (sources, type) leaves server j."""
        readers, present = self.readers, self.present
        for s in sources.tolist():
            r = int(readers[s, j]) - 1
            readers[s, j] = r
            if r == 0:
                present[s, j] = 0.0
                self.f[j] -= self.rates[s]
        self.count[j] -= 1
        self.total -= 1
        if self.metric == "least_qt":
            on = self.type_on[qtype]
            on[j] -= 1
            if on[j] == 0:
                self.qt[j] -= 1

    def place(self, sources: IntArray, qtype: int = -1) -> int:
        j = self.choose(sources, qtype)
        self.add(sources, qtype, j)
        return j

    def add_server(self, capacity: float = 1.0) -> int:
        """Server churn: a new, empty server."""
        self.capacity = np.r_[self.capacity, capacity]
        self.live = np.r_[self.live, True]
        self.readers = np.hstack([self.readers, np.zeros((len(self.rates), 1), np.int32)])
        self.present = np.hstack([self.present, np.zeros((len(self.rates), 1))])
        self.count, self.f, self.qt = np.r_[self.count, 0], np.r_[self.f, 0.0], np.r_[self.qt, 0]
        self.type_on = {t: np.r_[v, 0] for t, v in self.type_on.items()}
        self._share()
        return self.k - 1

    def drop_server(self, j: int) -> None:
        """Server churn: j leaves; the caller re-places its queries (as new ones, §6.1.2)."""
        self.live[j] = False
        self._share()
