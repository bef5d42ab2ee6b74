"""`reconf bench sprawl`: the constrained experiments of Mei 2015 §6.4 and the §6.2 simulation.

§6.4.1: one query at a time on a fresh single-cluster network (a connected random graph, link
probability 0.4; CPU and link weights U(1,3)), 10 operators (4 pinned sources, 3 joins, 1 filter, 1 aggregate, 1 pinned
sink). CPU: an operator needs its input rate over the mean source rate (sources 1), a site
holds U(1,10) of that; a link carries U(0.5,3) mean source rates. L_q ~ U[Lat_min, Lat_min +
diameter] with Lat_min = max over sources of Lat(source, sink), the least any placement can do
(choice: the thesis's "shortest to longest path latency from source to sink" read so that some
queries fit). SPRAWL = Algorithm 1, then Algorithm 3 (or 2) when a constraint binds; Exhaustive =
the optimum by enumeration; the MILP certifies the gap on the first fitted queries.
§6.4.2: the same queries deployed one after the other on three such clusters joined by
wide-area links, each algorithm on its own copy, until 20 failures in a row.
§6.2: a cost-model simulation of the EC2 run (see `cloud`).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from placement.sprawl.baselines import exhaustive, random_path
from placement.sprawl.constrained import algorithm3
from placement.sprawl.dp import algorithm1
from placement.sprawl.instance import Instance, QueryIdx, evaluate
from placement.sprawl.milp import solve_milp
from placement.sprawl.netgen import clusters
from placement.sprawl.sharing import Deployment, instance_of, place_query, register_placed
from placement.sprawl.topology import Routing, routing_of
from placement.sprawl.workload import QuerySpec, build, random_spec

__all__ = ["cloud", "multi_query", "runtimes", "single_query"]

P_LINK = 0.4  # a cluster's link density in §6.4 (routes share links, so bandwidth binds)


def _spec(rng: np.random.Generator, qid: str, r: Routing, sources: list[int],
          sinks: list[int]) -> QuerySpec:
    """The §6.4.1 query: 4 sources (one filtered), 3 joins, 1 aggregate, 1 sink."""
    leaves = []
    filtered = int(rng.integers(4))
    for i in range(4):
        site = int(rng.choice(sources))
        lo = float(rng.uniform(0, 60))
        leaves.append((site, (lo, lo + float(rng.uniform(5, 40))) if i == filtered else None))
    merges, width = [], 4
    for _ in range(3):
        a, b = sorted(rng.choice(width, size=2, replace=False).tolist())
        merges.append((int(a), int(b)))
        width -= 1
    sink = int(rng.choice(sinks))
    lat_min = max(float(r.latency[s, sink]) for s, _ in leaves)
    bound = float(rng.uniform(lat_min, lat_min + r.latency.max()))
    return QuerySpec(qid, tuple(leaves), tuple(merges), ("aggregate",), sink, bound)


def _instance(spec: QuerySpec, r: Routing, w: np.ndarray, cpu_cap: np.ndarray,
              link_cap: np.ndarray, latency: bool) -> Instance:
    plan = build(spec)
    base = instance_of([plan], r)
    src_rate = np.mean([op.rate_out for op in plan.ops if op.kind == "source"])
    cpu = np.array([1.0 if op.kind == "source" else
                    sum(rt for _, v, rt in plan.edges if v == i) / src_rate
                    for i, op in enumerate(plan.ops)])
    cost = np.where(np.isfinite(base.cpu_cost), cpu[:, None] * w[None, :], np.inf)
    q = QueryIdx(plan.sink, plan.bound if latency else math.inf, plan.client)
    return Instance(r, base.ops, cpu, cost, base.edges, 1.0, "resource", cpu_cap, link_cap,
                    (q,))


def _sprawl(inst: Instance, latency: bool) -> np.ndarray | None:
    x = algorithm1(inst).x
    if evaluate(inst, x).feasible:
        return x
    return algorithm3(inst, latency=latency).x


def _caps(r: Routing, rng: np.random.Generator, scale: float, src_rate: float
          ) -> tuple[np.ndarray, np.ndarray]:
    cpu = scale * rng.uniform(1, 10, r.n)
    links = scale * src_rate * rng.uniform(0.5, 3, len(r.links))
    return cpu, links


def single_query(trials: int, queries: int, size: int = 8, gap_queries: int = 10
                 ) -> list[dict[str, Any]]:
    """§6.4.1, Tables 6.5–6.6: one row per (constraints, trial, query)."""
    rows = []
    for latency in (True, False):
        for t in range(trials):
            net = clusters(10 + t, zones=1, size=size, borders=0, p_link=P_LINK)
            r, w = routing_of(net), np.array([site.cpu_cost for site in net.sites])
            rng = np.random.default_rng(300 + t)
            sites = list(range(r.n))
            gaps = 0
            for q in range(queries):
                spec = _spec(rng, f"q{q}", r, sites, sites)
                cpu_cap, link_cap = _caps(r, rng, 1.0, 8.0)
                inst = _instance(spec, r, w, cpu_cap, link_cap, latency)
                t0 = time.perf_counter()
                x = _sprawl(inst, latency)
                t1 = time.perf_counter()
                best_x, best = exhaustive(inst)
                t2 = time.perf_counter()
                row: dict[str, Any] = {
                    "experiment": "6.4.1", "constraints": "all" if latency else "cpu+bw",
                    "trial": t, "query": q, "sprawl_fit": x is not None,
                    "exhaustive_fit": best_x is not None,
                    "sprawl_cost": evaluate(inst, x).total if x is not None else None,
                    "exhaustive_cost": best if best_x is not None else None,
                    "sprawl_s": t1 - t0, "exhaustive_s": t2 - t1}
                if x is not None and gaps < gap_queries:
                    m = solve_milp(inst, start=x, time_limit_s=10.0)
                    row["milp_bound"] = m.lower_bound
                    row["milp_status"] = m.status
                    row["gap"] = (row["sprawl_cost"] - m.lower_bound) / row["sprawl_cost"]
                    gaps += 1
                rows.append(row)
    return rows


def runtimes(measure_10: bool) -> list[dict[str, Any]]:
    """Table 6.4: SPRAWL vs Exhaustive on a 3-cluster, 30-node network, 6/10/12 operators
    (3/5/7 unpinned); Exhaustive is measured where it finishes and extrapolated from its
    measured placements per second otherwise."""
    r = routing_of(clusters(4, zones=3, size=10))
    rng = np.random.default_rng(4)
    sites = list(range(r.n))
    rows = []
    rate = None
    for size, joins in ((6, 1), (10, 3), (12, 3)):
        inst = instance_of([build(random_spec(rng, f"t{size}", size, joins, sites, sites))], r,
                           cpu_cap=np.full(r.n, 1e9))
        t0 = time.perf_counter()
        for _ in range(5):
            algorithm3(inst)
        sprawl_s = (time.perf_counter() - t0) / 5
        free = int(sum(np.isfinite(inst.cpu_cost[o]).sum() > 1 for o in range(inst.m)))
        count = r.n ** free
        if size == 6 or (size == 10 and measure_10):
            t1 = time.perf_counter()
            exhaustive(inst, max_placements=10**8)
            ex_s = time.perf_counter() - t1
            rate = count / ex_s
            measured = True
        else:
            ex_s = count / rate if rate else math.nan
            measured = False
        rows.append({"experiment": "6.4", "operators": size, "unpinned": free,
                     "sprawl_s": sprawl_s, "exhaustive_s": ex_s, "measured": measured})
    return rows


def multi_query(scale: float, size: int = 4, stop_after: int = 20) -> list[dict[str, Any]]:
    """§6.4.2, Tables 6.7–6.8: queries deployed until `stop_after` failures in a row."""
    rows = []
    for latency in (True, False):
        net = clusters(21, zones=3, size=size, p_link=P_LINK)
        r, w = routing_of(net), np.array([site.cpu_cost for site in net.sites])
        rng = np.random.default_rng(21)
        cpu0, link0 = _caps(r, rng, scale, 8.0)
        caps = {"sprawl": (cpu0.copy(), link0.copy()), "exhaustive": (cpu0.copy(), link0.copy())}
        fails = dict.fromkeys(caps, 0)
        q = 0
        sites = list(range(r.n))
        while min(fails.values()) < stop_after and q < 2000:
            spec = _spec(rng, f"q{q}", r, sites, sites)
            for name, (cpu, link) in caps.items():
                if fails[name] >= stop_after:
                    continue
                inst = _instance(spec, r, w, cpu, link, latency)
                x = _sprawl(inst, latency) if name == "sprawl" else exhaustive(inst)[0]
                ok = x is not None
                cost = evaluate(inst, x).total if x is not None else None
                if x is not None:
                    used = evaluate(inst, x)
                    cpu -= used.node_cpu
                    link -= used.link_bw
                fails[name] = 0 if ok else fails[name] + 1
                rows.append({"experiment": "6.4.2", "constraints": "all" if latency else
                             "cpu+bw", "query": q, "algorithm": name, "fit": ok, "cost": cost})
            q += 1
    return rows


def cloud(queries: int, seed: int = 6) -> list[dict[str, Any]]:
    """§6.2 as a cost-model simulation: 3 zones × 10 sites (2 sources, 4 sinks per zone),
    `queries` queries of 8–12 operators; SPDPS (DP + sharing), SPDP (DP alone), Random (§6.2.3).
    Each site's CPU holds 100 %, a wide-area link carries 12.5 rate units (100 Mbit/s with
    1 unit = 1 MB/s), a local link 125. A query delivers its output rate times the smallest
    capacity/demand ratio over the sites and links its data uses (1 if none is saturated);
    dollars are $0.20 per GB over wide-area links, each source sending 10 GB (Table 6.1)."""
    net = clusters(seed, zones=3, size=10, borders=2, bandwidth=125.0, wan_bandwidth=12.5,
                   wan_cost=2.26)
    r = routing_of(net)
    zone_sites = [[r.index[f"z{z}.{i}"] for i in range(10)] for z in range(3)]
    sources = [s for z in zone_sites for s in z[2:4]]
    sinks = [s for z in zone_sites for s in z[6:10]]
    cap = np.full(r.n, 100.0)
    w_base = np.array([s.cpu_cost for s in net.sites])
    rng = np.random.default_rng(seed)
    specs = []
    for q in range(queries):
        size = int(rng.choice([8, 10, 12]))
        specs.append(random_spec(rng, f"q{q}", size, 2 if size == 8 else 3, sources, sinks,
                                 grid=4))
    out = []
    for name in ("SPDPS", "SPDP", "Random"):
        dep = Deployment(r, cap, w_base)
        placed = []
        prng = np.random.default_rng(seed)
        for spec in specs:
            if name == "Random":
                plan = build(spec)
                inst = instance_of([plan], r, cpu_weight=dep.weight())
                x = random_path(inst, prng)
                sites, links = register_placed(plan, x, dep)
                placed.append((plan, sites, links, False))
            else:
                p = place_query(spec, dep, sharing=name == "SPDPS")
                placed.append((p.plan, p.sites, p.links, bool((p.x < 0).any())))
        assert dep.used is not None and dep.link_bw is not None
        link_cap = np.array([lk.bandwidth for lk in r.links])
        wan = np.array([r.zone[r.index[lk.a]] != r.zone[r.index[lk.b]] for lk in r.links])
        throughput = 0.0
        for plan, sites, links, _ in placed:
            ratio = min([1.0] + [cap[s] / dep.used[s] for s in sites if dep.used[s] > 0]
                        + [link_cap[lk] / dep.link_bw[lk] for lk in links
                           if dep.link_bw[lk] > 0])
            throughput += plan.ops[plan.sink].cpu / 0.02 * ratio  # the sink's input rate
        src_rate = float(np.mean([5.0 + s % 7 for s in sources]))
        gb_per_unit = 10.0 / src_rate  # each source sends 10 GB over the run
        dollars = 0.20 * float(dep.link_bw[wan].sum()) * gb_per_unit
        out.append({"experiment": "6.2", "deployment": name, "throughput": throughput,
                    "dollars": dollars, "shared_queries": sum(p[3] for p in placed),
                    "queries": queries})
    return out
