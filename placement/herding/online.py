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
        self.count = np.zeros(k, dtype=np.int64)  # |Q_j|
        self.f = np.zeros(k)  # f(Q_j)
        self.qt = np.zeros(k, dtype=np.int64)  # |T(Q_j)|
        self.type_on: dict[int, IntArray] = {}  # type -> queries of that type per server
        self.rr = -1  # round robin's last server

    @property
    def k(self) -> int:
        return len(self.capacity)

    @property
    def n(self) -> int:
        return int(self.count.sum())

    def traffic(self) -> float:
        return float(self.f[self.live].sum() + self.f[~self.live].sum())

    def eligible(self, extra: int = 1) -> npt.NDArray[np.bool_]:
        """eq. 4 with n counting the incoming query: |Q_j| + 1 ≤ d_j(n)."""
        n = self.n + extra
        c = np.where(self.live, self.capacity, 0.0)
        share = n * c / c.sum()
        bound = np.maximum(share + self.alpha, (1.0 + self.nu) * share)
        return self.live & (self.count + 1 <= bound + 1e-9)

    def score(self, sources: IntArray, qtype: int) -> FloatArray:
        """M(Q_j, q) for every server j."""
        if self.metric in ("least_cost", "least_source"):
            missing = self.readers[sources] == 0  # d × k
            added = self.rates[sources] @ missing if len(sources) else np.zeros(self.k)
            return added if self.metric == "least_cost" else self.f + added
        has = self.type_on.get(qtype)
        return (self.qt + 1 - (0 if has is None else (has > 0))).astype(np.float64)

    def choose(self, sources: IntArray, qtype: int = -1) -> int:
        """Fig. 3: a candidate with the least M, then the least loaded, then the lowest index."""
        ok = self.eligible()
        norm = self.count / self.capacity
        if not ok.any():
            return int(np.argmin(np.where(self.live, norm, np.inf)))
        if self.metric == "onrand":
            return int(self.rng.choice(np.flatnonzero(ok)))
        if self.metric == "round_robin":
            cand = np.flatnonzero(ok)
            after = cand[cand > self.rr]
            self.rr = int(after[0] if len(after) else cand[0])
            return self.rr
        m = np.where(ok, self.score(sources, qtype), np.inf)
        tied = m <= m.min() + 1e-9 * max(1.0, abs(float(m.min())))
        return int(np.argmin(np.where(tied, norm, np.inf)))

    def add(self, sources: IntArray, qtype: int, j: int) -> None:
        """Put one query (sources, type) on server j."""
        rows = self.readers[sources, j]
        self.f[j] += float(self.rates[sources[rows == 0]].sum())
        self.readers[sources, j] = rows + 1
        self.count[j] += 1
        if self.metric == "least_qt":
            on = self.type_on.setdefault(qtype, np.zeros(self.k, np.int64))
            if on[j] == 0:
                self.qt[j] += 1
            on[j] += 1

    def remove(self, sources: IntArray, qtype: int, j: int) -> None:
        """A departure: the query (sources, type) leaves server j."""
        rows = self.readers[sources, j] - 1
        self.readers[sources, j] = rows
        self.f[j] -= float(self.rates[sources[rows == 0]].sum())
        self.count[j] -= 1
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
        self.count, self.f, self.qt = np.r_[self.count, 0], np.r_[self.f, 0.0], np.r_[self.qt, 0]
        self.type_on = {t: np.r_[v, 0] for t, v in self.type_on.items()}
        return self.k - 1

    def drop_server(self, j: int) -> None:
        """Server churn: j leaves; the caller re-places its queries (as new ones, §6.1.2)."""
        self.live[j] = False
