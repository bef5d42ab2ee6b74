"""The simulator of Consistent Grouping's evaluation (Nasir et al. §6, §7): streams, queues, pairing.

Streams: Zipf keys standing in for the private WP / TW traces, the exponent solved so that the top
key's share p₁ is Table 2's (or the 24.7 % that Table 1's TW column implies).

Model (§6, "supermarket model"): one message per tick, fed round robin to S sources; each source
routes with its own state (runtime/routing/) to one of b = α·n virtual workers (VWs); a VW belongs
to one worker; worker w serves its FIFO queue with deterministic service at speed μ_w ∝ c_w,
Σμ = 1/ρ (ρ the offered load; 0.8 as in §7.2). It is a vectorised model rather than a
discrete-event loop: with deterministic service a worker's finish times have a closed form,
f_j = (j+1)·s + max(free, max_{i≤j}(a_i − i·s)) (Lindley's recursion unrolled), evaluated with
`np.maximum.accumulate`; capacity changes are exact through work time (the work a worker can do
by tick t is piecewise linear in t, and `np.interp` maps ticks to work and back).

CG (§5.2): every t₀ ticks each worker's utilisation U_w (its demand over the period: the work
queued at the period's start plus the work that arrived, over the work it could do; the queue
term is the paper's U = L/c, the arrivals its CPU utilisation, §7.1) classifies it busy
(U_w > θ_b = 0.85) or idle
(U_w < θ_i = 0.75); two FCFS queues of signals pair busy with idle workers and move one VW per
pair (the busy worker's lowest-numbered VW), with no state migration: only later messages follow
the new VW owner. An unpaired signal waits in its queue.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from runtime.routing import KeyTable, RouterState, route

__all__ = [
    "SimResult",
    "Workload",
    "memory",
    "normalized_imbalance",
    "simulate",
    "solve_zipf",
    "zipf_keys",
]


def _harmonic(n_keys: int, z: float) -> float:
    return float(np.sum(np.arange(1, n_keys + 1, dtype=np.float64) ** -z))


def solve_zipf(n_keys: int, p1: float) -> float:
    """The exponent z with 1 / H(n_keys, z) = p1 (bisection; p₁ grows with z)."""
    lo, hi = 0.0, 5.0
    for _ in range(50):
        mid = (lo + hi) / 2
        if 1.0 / _harmonic(n_keys, mid) < p1:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def zipf_keys(n: int, n_keys: int, z: float, seed: int) -> np.ndarray:
    """n keys drawn i.i.d. from Zipf(z) over ranks 0..n_keys-1 (inverse CDF)."""
    cdf = np.cumsum(np.arange(1, n_keys + 1, dtype=np.float64) ** -z)
    cdf /= cdf[-1]
    u = np.random.default_rng(seed).random(n)
    return np.minimum(np.searchsorted(cdf, u), n_keys - 1).astype(np.int64)


@dataclass(frozen=True)
class Workload:
    """A stand-in trace: its name, key count, the p₁ it reproduces and the solved exponent."""

    name: str
    n_keys: int
    p1: float
    z: float = 0.0

    def solved(self) -> Workload:
        return Workload(self.name, self.n_keys, self.p1, solve_zipf(self.n_keys, self.p1))

    def keys(self, n: int, seed: int = 1) -> np.ndarray:
        return zipf_keys(n, self.n_keys, self.z, seed)


def normalized_imbalance(counts: np.ndarray) -> float:
    """(max − avg) / avg of message counts per bin or worker (Table 1)."""
    mean = float(counts.mean())
    return float(counts.max() - mean) / mean if mean > 0 else 0.0


def memory(keys: np.ndarray, where: np.ndarray) -> int:
    """Σ over bins (or workers) of the distinct keys each received (§5.1's memory)."""
    return len(np.unique(keys * (int(where.max()) + 1) + where))


def sources_of(n: int, sources: int) -> np.ndarray:
    """Message t goes to source t mod S (sources fed by shuffle grouping, §7.1)."""
    return np.arange(n, dtype=np.int64) % sources


@dataclass(frozen=True, eq=False)
class SimResult:
    """Per period (t₀ ticks): queue lengths, utilisation, VWs (periods × workers), latency."""

    policy: str
    queue: np.ndarray
    utilisation: np.ndarray
    vws: np.ndarray
    latency: np.ndarray
    moves: int
    worker_memory: int
    capacity: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def spread(self, what: str, tail: float = 0.25) -> float:
        """max − min over workers, averaged over the last `tail` of the run."""
        arr = getattr(self, what)
        last = arr[int(len(arr) * (1 - tail)):]
        return float(np.mean(last.max(axis=1) - last.min(axis=1)))

    def mean_latency(self) -> float:
        return float(np.mean(self.latency))


def _work_clock(change_ticks: list[int], speeds: list[np.ndarray], w: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Breakpoints (ticks, cumulative work) of worker w's work clock, extended far right."""
    ticks = [float(t) for t in change_ticks] + [1e15]
    work = [0.0]
    for k in range(1, len(ticks)):
        work.append(work[-1] + (ticks[k] - ticks[k - 1]) * float(speeds[k - 1][w]))
    return np.array(ticks), np.array(work)


def simulate(keys: np.ndarray, capacity: np.ndarray, *, policy: str, vws_per_worker: int = 10,
             epsilon: float = 0.01, sources: int = 1, load: float = 0.8, t0: int = 10_000,
             pairing: bool = False, busy_above: float = 0.85, idle_below: float = 0.75,
             changes: tuple[tuple[int, np.ndarray], ...] = (), seed: int = 1) -> SimResult:
    """Run the stream through sources, VWs and workers' queues; CG = PORC + `pairing`.

    `capacity` (n workers) is relative; `changes` replace it from a tick on (multiples of t₀).
    """
    n, b = len(capacity), len(capacity) * vws_per_worker
    table = KeyTable.build(int(keys.max()) + 1, b, seed=seed)
    owner = np.tile(np.arange(n), vws_per_worker)  # VW v on worker v mod n: SG's round robin
    change_ticks = [0] + [t for t, _ in changes]
    caps = [np.asarray(capacity, float)] + [np.asarray(c, float) for _, c in changes]
    speeds = [c / c.sum() / load for c in caps]  # Σμ = 1/ρ messages per tick
    clocks = [_work_clock(change_ticks, speeds, w) for w in range(n)]
    state = RouterState.zeros(sources, b)
    free = np.zeros(n)  # work time at which each worker is done with its queue
    busy_q: deque[int] = deque()
    idle_q: deque[int] = deque()
    periods = len(keys) // t0
    queue, util, vws, lat = (np.zeros((periods, n)), np.zeros((periods, n)),
                             np.zeros((periods, n), dtype=np.int64), np.zeros(periods))
    seen_keys, seen_workers, moves = [], [], 0
    for p in range(periods):
        lo, hi = p * t0, (p + 1) * t0
        chunk = keys[lo:hi]
        bins, state = route(policy, chunk, table, state=state, epsilon=epsilon,
                            sources=sources_of(hi, sources)[lo:hi])
        workers = owner[bins]
        seen_keys.append(chunk)
        seen_workers.append(workers)
        arrival = np.arange(lo, hi, dtype=np.float64) + 1.0
        total_latency = 0.0
        for w in range(n):
            ticks, work = clocks[w]
            start_w = float(np.interp(float(lo), ticks, work))
            backlog = max(0.0, free[w] - start_w)  # work queued when the period starts
            a = arrival[workers == w]
            wa = np.interp(a, ticks, work)  # arrivals in work time; each message is 1 unit
            if len(a):
                idx = np.arange(len(a), dtype=np.float64)
                finish_w = idx + 1.0 + np.maximum(free[w], np.maximum.accumulate(wa - idx))
                free[w] = finish_w[-1]
                total_latency += float(np.sum(np.interp(finish_w, work, ticks) - a))
            end_w = float(np.interp(float(hi), ticks, work))
            queue[p, w] = np.ceil(max(0.0, free[w] - end_w) - 1e-9)
            util[p, w] = (len(a) + backlog) / max(end_w - start_w, 1e-12)
        lat[p] = total_latency / len(chunk)
        vws[p] = np.bincount(owner, minlength=n)
        if pairing:
            moves += _pair(util[p], owner, busy_q, idle_q, busy_above, idle_below)
    all_keys, all_workers = np.concatenate(seen_keys), np.concatenate(seen_workers)
    return SimResult(policy, queue, util, vws, lat, moves, memory(all_keys, all_workers),
                     np.asarray(capacity, float))


def _pair(u: np.ndarray, owner: np.ndarray, busy_q: deque[int], idle_q: deque[int],
          busy_above: float, idle_below: float) -> int:
    """One signalling round (§5.2.1): signals join FCFS queues, stale ones leave, pairs move one
    VW each; returns the number of VWs moved."""
    busy = set(np.flatnonzero(u > busy_above).tolist())
    idle = set(np.flatnonzero(u < idle_below).tolist())
    for q, now in ((busy_q, busy), (idle_q, idle)):
        kept = [w for w in q if w in now]
        q.clear()
        q.extend(kept)
        q.extend(sorted(now - set(kept)))
    moved = 0
    while busy_q and idle_q:
        src, dst = busy_q.popleft(), idle_q.popleft()
        mine = np.flatnonzero(owner == src)
        if len(mine) <= 1:
            continue
        owner[mine[0]] = dst
        moved += 1
    return moved
