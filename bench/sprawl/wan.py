"""`reconf bench sprawl`: the wide-area experiments of Mei 2015 §6.3 and the speed checks.

§6.3 (Figure 6-2, Tables 6.2–6.3): transit–stub networks of 1,550 nodes (placement/sprawl/
netgen.py), queries of 4/6/10/12 operators (1/1/3/3 joins, sources and the sink pinned at stub
nodes uniformly over the 10 domains), Formula 6.1 (Σ rate·Lat², no CPU term). SP-Central is
Algorithm 1, SP-Distribute the distributed DP (zones = transit domains), Relaxation SBON's
spring relaxation in its cost space (`space`: "vivaldi", Vivaldi's 2-D coordinates as its own
decentralised algorithm finds them, by default; "vivaldi2", the minimum of Vivaldi's energy,
computed centrally; "mds3", the 3-D classical MDS of the first pass), Random the §6.2.3 walk. §6.3.7:
50-node random networks on a 100×100 plane, edge connectivity 1.0 and 0.1.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from placement.sprawl.baselines import (
    cost_space,
    random_path,
    relaxation,
    vivaldi_samples,
    vivaldi_space,
)
from placement.sprawl.distributed import distributed_dp, zones_of
from placement.sprawl.dp import algorithm1
from placement.sprawl.instance import evaluate
from placement.sprawl.netgen import random_plane, transit_stub
from placement.sprawl.sharing import Deployment, instance_of, place_query
from placement.sprawl.topology import routing_of
from placement.sprawl.workload import build, random_spec

__all__ = ["COST_SPACES", "connectivity", "speed", "wan"]

SIZES = {4: 1, 6: 1, 10: 3, 12: 3}  # operators -> joins (§6.3.4)
RTT_S = 0.150  # the simulated wide-area round trip of Table 6.3
#: SBON's cost space: Vivaldi's 2-D coordinates, or the first pass's 3-D classical MDS
COST_SPACES: dict[str, Any] = {"vivaldi": vivaldi_samples, "vivaldi2": vivaldi_space,
                               "mds3": lambda lat: cost_space(lat, 3)}


def _stub_sites(r: Any) -> list[int]:
    return [i for i, s in enumerate(r.sites) if s.startswith("s")]


def wan(networks: int, per_size: int, seed: int = 1, space: str = "vivaldi"
        ) -> list[dict[str, Any]]:
    """One row per (network, size, query): costs of the four deployments, times, agreement."""
    rows = []
    for net_i in range(networks):
        r = routing_of(transit_stub(seed + net_i))
        coords = COST_SPACES[space](r.latency)
        stubs = _stub_sites(r)
        rng = np.random.default_rng(100 + net_i)
        zones = zones_of(r)
        _warm_up(r, zones, stubs)
        for size, joins in SIZES.items():
            for q in range(per_size):
                spec = random_spec(rng, f"q{q}", size, joins, stubs, stubs)
                inst = instance_of([build(spec)], r, objective="sbon")
                t0 = time.perf_counter()
                central = algorithm1(inst)
                t1 = time.perf_counter()
                dist = distributed_dp(inst, zones)
                t2 = time.perf_counter()
                levels = _levels(inst, dist.zone_of_op)
                rows.append({
                    "experiment": "6.3", "network": net_i, "operators": size,
                    "central": evaluate(inst, central.x).total,
                    "distributed": evaluate(inst, dist.x).total,
                    "relaxation": evaluate(inst, relaxation(inst, coords)).total,
                    "random": evaluate(inst, random_path(inst, rng)).total,
                    "same": bool(np.array_equal(central.x, dist.x)),
                    "central_s": t1 - t0, "distributed_s": t2 - t1,
                    "distributed_rtt_s": (t2 - t1) + 2 * levels * RTT_S,
                    "max_zone_work": max(dist.work.values()),
                    "central_work": int(sum(r.n * r.n for _ in inst.edges))})
    return rows


def _warm_up(r: Any, zones: Any, stubs: list[int]) -> None:
    """Build the per-network tables once, untimed, as the routing is: the N×N cost table of
    the central DP and the zones' routes composed at their borders (each cluster's own)."""
    rng = np.random.default_rng(0)  # not the queries' generator: the same queries as before
    plan = build(random_spec(rng, "warm", 4, 1, stubs, stubs))
    for objective in ("sbon", "resource"):
        inst = instance_of([plan], r, objective=objective)
        algorithm1(inst)
        distributed_dp(inst, zones)


def _levels(inst: Any, zone_of_op: np.ndarray) -> int:
    """Cross-zone hops on the longest leaf-to-root path: message rounds up (and back down)."""
    depth = {}
    incoming: dict[int, list[int]] = {}
    for u, v, _ in inst.edges:
        incoming.setdefault(v, []).append(u)

    def d(op: int) -> int:
        if op not in depth:
            depth[op] = max((d(u) + int(zone_of_op[u] != zone_of_op[op])
                             for u in incoming.get(op, [])), default=0)
        return depth[op]

    return max(d(q.sink) for q in inst.queries)


def connectivity(trials: int, per_trial: int, seed: int = 1, space: str = "vivaldi"
                 ) -> list[dict[str, Any]]:
    """§6.3.7: central vs relaxation vs random on 50-node planes at connectivity 1.0 and 0.1."""
    rows = []
    for conn in (1.0, 0.1):
        for t in range(trials):
            r = routing_of(random_plane(seed + t, n=50, connectivity=conn))
            coords = COST_SPACES[space](r.latency)
            rng = np.random.default_rng(200 + t)
            sites = list(range(r.n))
            for q in range(per_trial):
                size = list(SIZES)[q % len(SIZES)]
                inst = instance_of([build(random_spec(rng, f"q{q}", size, SIZES[size], sites,
                                                      sites))], r, objective="sbon")
                rows.append({
                    "experiment": "6.3.7", "connectivity": conn, "trial": t, "operators": size,
                    "central": algorithm1(inst).cost,
                    "relaxation": evaluate(inst, relaxation(inst, coords)).total,
                    "random": evaluate(inst, random_path(inst, rng)).total})
    return rows


def speed(queries: int, seed: int = 1) -> list[dict[str, Any]]:
    """Algorithm 1 for 12-operator queries on 1,550 nodes; the distributed DP's work per zone;
    `queries` queries placed one after the other with sharing (§5.2) on the same network."""
    t0 = time.perf_counter()
    r = routing_of(transit_stub(seed))
    routing_s = time.perf_counter() - t0
    stubs = _stub_sites(r)
    rng = np.random.default_rng(7)
    times, dtimes, work = [], [], []
    zones = zones_of(r)
    _warm_up(r, zones, stubs)
    for q in range(5):
        inst = instance_of([build(random_spec(rng, f"q{q}", 12, 3, stubs, stubs))], r)
        t1 = time.perf_counter()
        algorithm1(inst)
        times.append(time.perf_counter() - t1)
        t2 = time.perf_counter()
        dist = distributed_dp(inst, zones)
        dtimes.append(time.perf_counter() - t2)
        work.append(dist.work)
    sources = stubs[:: max(1, len(stubs) // 60)]
    dep = Deployment(r, np.full(r.n, 1e4), np.ones(r.n), zones=zones)
    t3 = time.perf_counter()
    reused = 0
    for q in range(queries):
        size = (8, 10, 12)[q % 3]
        spec = random_spec(rng, f"s{q}", size, 3, sources, stubs, grid=4)
        reused += int((place_query(spec, dep, sharing=True).x < 0).sum())
    shared_s = time.perf_counter() - t3
    per_zone = [v for w in work for v in w.values() if v]
    return [{"experiment": "speed", "routing_s": routing_s, "alg1_12op_s": max(times),
             "alg1_12op_mean_s": float(np.mean(times)), "distributed_s": float(np.mean(dtimes)),
             "zone_work_max": max(per_zone), "zone_work_mean": float(np.mean(per_zone)),
             "central_work": 11 * r.n * r.n, "shared_queries": queries,
             "shared_s": shared_s, "reused_operators": reused}]
