"""The experiments of Xing et al. 2006 §7 behind `reconf bench rod`, one function per figure.

Each returns JSON rows. Shared setup (§7.1): d operator trees of equal size from
`placement.rod.querygraph.random_trees`, n = 10 equal nodes, F/F* by randomized QMC
(`placement.rod.measures`; exact where the figure needs it). Choices where §7 is silent
(docs/algorithms.md, ROD): the load balancers' random rate points are uniform in the ideal
simplex; Max-Rate-LB balances at the per-stream maximum of 10 such points; Fig. 9's random
L^n splits each l_k over the nodes by a Dirichlet(1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from placement.rod.algorithm import rod_assign
from placement.rod.baselines import connected_lb, llf, optimal, random_equal
from placement.rod.clustering import clustered_rod, comm_weights
from placement.rod.measures import (
    exact_ratio,
    feasible_set_ratio,
    plane_distance,
    simplex_points,
)
from placement.rod.model import weights
from placement.rod.querygraph import Linearised, Operator, QueryGraph, linearise, random_trees

__all__ = ["BASELINES", "fig9", "fig14", "fig15", "fig16", "fig17", "fig18", "fig19",
           "vs_optimal"]

Array = NDArray[np.float64]
Bins = NDArray[np.int64]
NODES = 10
BASELINES = ("llf", "connected", "random", "max_rate")
REPEATS = 10  # §7.3.1: every algorithm but ROD is repeated ten times
POINTS = 1024  # QMC points per replicate (8 replicates)


def _neighbours(lin: Linearised) -> list[list[int]]:
    near: list[set[int]] = [set() for _ in lin.operators]
    for u, v in lin.arcs:
        near[u].add(v)
        near[v].add(u)
    return [sorted(s) for s in near]


def _rate_points(lin: Linearised, count: int, rng: np.random.Generator) -> Array:
    """Random rate points uniform in the ideal simplex: r_k = x_k / l_k (C_T scales away)."""
    return np.asarray(simplex_points(rng.random((count, len(lin.variables))))
                      / lin.coefficients.sum(axis=0), dtype=float)


def _ratio(norm: Array, bins: Bins, share: Array, seed: int = 0) -> float:
    return feasible_set_ratio(weights(norm, bins, share), method="qmc", points=POINTS,
                              seed=seed).value


def plans(lin: Linearised, name: str, rng: np.random.Generator, n: int = NODES) -> list[Bins]:
    """The plans of one algorithm on `lin`: ROD once, the others REPEATS times (§7.3.1)."""
    coef = lin.coefficients
    norm, share = coef / coef.sum(axis=0), np.full(n, 1.0 / n)
    caps = np.ones(n)
    if name == "rod":
        return [rod_assign(coef, norm, share, neighbours=_neighbours(lin))]
    out = []
    for _ in range(REPEATS):
        if name == "llf":
            out.append(llf(coef, _rate_points(lin, 1, rng)[0], caps))
        elif name == "connected":
            out.append(connected_lb(coef, _rate_points(lin, 1, rng)[0], caps, _neighbours(lin)))
        elif name == "random":
            out.append(random_equal(len(coef), n, rng))
        elif name == "max_rate":
            out.append(llf(coef, _rate_points(lin, 10, rng).max(axis=0), caps))
        else:
            raise ValueError(f"unknown algorithm {name!r}")
    return out


def _mean_ratio(lin: Linearised, name: str, rng: np.random.Generator) -> float:
    coef = lin.coefficients
    norm, share = coef / coef.sum(axis=0), np.full(NODES, 1.0 / NODES)
    return float(np.mean([_ratio(norm, b, share) for b in plans(lin, name, rng)]))


def fig9(samples: int, seed: int = 9, n: int = NODES, d: int = 3) -> list[dict[str, Any]]:
    """Random L^n (n = 10, d = 3): F/F* (exact) against r/r*, and the hypersphere bound."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(samples):
        w = rng.dirichlet(np.ones(n), size=d).T * n
        r = plane_distance(w)
        ball = math.pi ** (d / 2) * r**d / math.gamma(d / 2 + 1) / 2**d * math.factorial(d)
        rows.append({"figure": "9", "r_ratio": r * math.sqrt(d), "ratio": exact_ratio(w),
                     "sphere_bound": ball})
    return rows


def fig14(sizes: tuple[int, ...], graphs: int, d: int = 5, seed: int = 14
          ) -> list[dict[str, Any]]:
    """F/F* against the number of operators (d = 5, n = 10), ROD and every baseline."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in sizes:
        for g in range(graphs):
            lin = linearise(random_trees(d, m // d, rng))
            for name in ("rod", *BASELINES):
                rows.append({"figure": "14", "operators": m, "graph": g, "algorithm": name,
                             "ratio": _mean_ratio(lin, name, rng)})
    return rows


def fig15(dims: tuple[int, ...], graphs: int, per_stream: int = 10, seed: int = 15
          ) -> list[dict[str, Any]]:
    """Each baseline's F/F* over ROD's against the number of input streams d."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in dims:
        for g in range(graphs):
            lin = linearise(random_trees(d, per_stream, rng))
            rod = _mean_ratio(lin, "rod", rng)
            for name in BASELINES:
                ratio = _mean_ratio(lin, name, rng)
                rows.append({"figure": "15", "d": d, "graph": g, "algorithm": name,
                             "rod_ratio": rod, "ratio": ratio,
                             "relative": ratio / rod if rod > 0 else None})
    return rows


def vs_optimal(cases: list[tuple[int, int]], seed: int = 7) -> list[dict[str, Any]]:
    """§7.3.1: ROD against exhaustive Optimal on 2 nodes, (d, operators per tree) cases; ROD
    with Fig. 10's raw sort key (the default) and with §3.3's normalised one."""
    rng = np.random.default_rng(seed)
    rows = []
    share = np.array([0.5, 0.5])
    for d, per_tree in cases:
        lin = linearise(random_trees(d, per_tree, rng))
        coef = lin.coefficients
        norm = coef / coef.sum(axis=0)
        rod = rod_assign(coef, norm, share)
        by_norm = rod_assign(coef, norm, share, sort="normalised")  # §3.3's reading of phase 1
        _, best = optimal(norm, share, keep=16, points=2048)
        mine, alt = (feasible_set_ratio(weights(norm, b, share), method="exact").value
                     for b in (rod, by_norm))
        top = max(best, mine, alt)
        rows.append({"figure": "optimal", "d": d, "operators": len(coef), "rod": mine,
                     "rod_normalised": alt, "optimal": top, "relative": mine / top,
                     "relative_normalised": alt / top})
    return rows


def fig16(sizes: tuple[int, ...], samples: int, d: int = 5, seed: int = 16
          ) -> list[dict[str, Any]]:
    """§7.3.3: the penalty of planning from the origin (or a wrong Z) when rates are ≥ B."""
    rng = np.random.default_rng(seed)
    rows = []
    share = np.full(NODES, 1.0 / NODES)
    for m in sizes:
        lin = linearise(random_trees(d, m // d, rng))
        coef = lin.coefficients
        norm = coef / coef.sum(axis=0)
        origin = rod_assign(coef, norm, share)
        for s in range(samples):
            b, z = simplex_points(rng.random((2, d)))
            with_b = rod_assign(coef, norm, share, lower=b)
            with_z = rod_assign(coef, norm, share, lower=z)
            fss = {k: feasible_set_ratio(weights(norm, p, share), b, method="qmc",
                                         points=POINTS, seed=s).value
                   for k, p in (("b", with_b), ("o", origin), ("z", with_z))}
            if fss["b"] <= 0:
                continue  # no plan is feasible above this B: the penalty is undefined
            rows.append({"figure": "16", "operators": m, "sample": s,
                         "distance_ratio": 1.0 - float(b.sum()),
                         "bz_distance": float(np.linalg.norm(b - z)),
                         "penalty_origin": (fss["b"] - fss["o"]) / fss["b"],
                         "penalty_z": (fss["b"] - fss["z"]) / fss["b"]})
    return rows


def _equal_costs(lin: Linearised, graph: QueryGraph) -> Linearised:
    """Fig. 17: every operator the same per-tuple processing cost (1)."""
    ops = tuple(Operator(o.id, 1.0, o.selectivity, o.kind) for o in graph.operators)
    return linearise(QueryGraph(ops, graph.arcs, graph.inputs))


def fig17(ratios: tuple[float, ...], per_stream: tuple[int, ...], graphs: int, d: int = 5,
          seed: int = 17) -> list[dict[str, Any]]:
    """§7.3.4: communication/processing cost ratio; ROD with and without clustering, and
    Connected-LB, all measured with the communication load of the crossing arcs."""
    rng = np.random.default_rng(seed)
    rows = []
    share = np.full(NODES, 1.0 / NODES)
    for k in per_stream:
        for g in range(graphs):
            graph = random_trees(d, k, rng)
            lin = _equal_costs(linearise(graph), graph)
            coef = lin.coefficients
            totals = coef.sum(axis=0)
            norm = coef / totals
            near = _neighbours(lin)
            plain = rod_assign(coef, norm, share, neighbours=near)
            for ratio in ratios:
                cost = ratio * lin.arc_rates / totals  # t·rate_uv / l_k, processing cost 1
                ratios_arc = np.full(len(lin.arcs), ratio)
                clustered = clustered_rod(coef, norm, share, lin.arcs, ratios_arc, cost).bins
                conn = [connected_lb(coef, r, np.ones(NODES), near)
                        for r in _rate_points(lin, 3, rng)]

                def fss(b: Bins, cost: Array = cost, norm: Array = norm,
                        arcs: tuple[tuple[int, int], ...] = lin.arcs) -> float:
                    return exact_ratio(comm_weights(norm, b, share, arcs, cost))  # tiny sets

                rod, with_c = fss(plain), fss(clustered)
                other = float(np.mean([fss(b) for b in conn]))
                rows.append({"figure": "17", "per_stream": k, "graph": g, "comm_ratio": ratio,
                             "rod": rod, "rod_clustered": with_c, "connected": other,
                             "gain": with_c / rod if rod > 0 else None,
                             "over_connected": with_c / other if other > 0 else None})
    return rows


def _perturbed(graph: QueryGraph, e: float, rng: np.random.Generator) -> QueryGraph:
    ops = tuple(Operator(o.id, o.cost * rng.uniform(1 - e, 1 + e),
                         o.selectivity * rng.uniform(1 - e, 1 + e), o.kind)
                for o in graph.operators)
    return QueryGraph(ops, graph.arcs, graph.inputs)


def fig19(errors: tuple[float, ...], graphs: int, m: int = 100, d: int = 5, seed: int = 19
          ) -> list[dict[str, Any]]:
    """§7.3.6: plans from measured statistics f·v, f ~ U[1−e, 1+e], scored on the true ones."""
    rng = np.random.default_rng(seed)
    rows = []
    share = np.full(NODES, 1.0 / NODES)
    for g in range(graphs):
        graph = random_trees(d, m // d, rng)
        true = linearise(graph)
        norm = true.coefficients / true.coefficients.sum(axis=0)
        for e in errors:
            seen = linearise(_perturbed(graph, e, rng))
            for name in ("rod", *BASELINES):
                ratio = float(np.mean([_ratio(norm, b, share) for b in plans(seen, name, rng)]))
                rows.append({"figure": "19", "graph": g, "error": e, "algorithm": name,
                             "ratio": ratio})
    return rows



def _state(lin: Linearised, coef: Array, rates: Array, where: dict[str, str]) -> Any:
    """One period's ClusterState: fixed coefficients, this period's rates and loads."""
    from placement.facets import Stream
    from placement.model import ClusterState, Edge, KeyGroup, Node

    ops = lin.operators
    return ClusterState(
        nodes=tuple(Node(f"n{i}") for i in range(NODES)),
        keygroups=tuple(KeyGroup(o, o, float(coef[j] @ rates), migration_cost=1.0)
                        for j, o in enumerate(ops)),
        assignment=where,
        edges=tuple(Edge(ops[u], ops[v], float(lin.arc_rates[a] @ rates))
                    for a, (u, v) in enumerate(lin.arcs)),
        streams=tuple(Stream(v, float(rates[k])) for k, v in enumerate(lin.variables)),
        load_model={o: {v: float(coef[j, k]) for k, v in enumerate(lin.variables)}
                    for j, o in enumerate(ops)})


def fig18(periods: int, budget: int, time_limit_s: float, d: int = 5, per_tree: int = 20,
          seed: int = 18) -> list[dict[str, Any]]:
    """Fig. 18 in spirit, in the planner only: bursty rates on a ramp (×1 → ×2.5 → ×0.6 of a
    30 % load), each stream bursting ×U[1.5, 3] with probability 0.2 per period. Every
    strategy makes its own initial placement (unbudgeted, at period 0's rates), then plans on
    period t's statistics under `budget` migrations; its plan runs the rates of period t + 1
    (what a periodic reconfiguration sees). ROD's target does not depend on the rates, so it
    never needs to move again."""
    from placement.model import Budget
    from placement.registry import get_strategy

    rng = np.random.default_rng(seed)
    lin = linearise(random_trees(d, per_tree, rng))
    raw = lin.coefficients @ np.ones(len(lin.variables))
    coef = lin.coefficients * (0.3 * 100.0 * NODES / raw.sum())
    ramp = np.interp(np.arange(periods + 1), [0, periods * 0.2, periods * 0.6, periods],
                     [1.0, 2.5, 2.5, 0.6])
    bursts = np.where(rng.random((periods + 1, d)) < 0.2, rng.uniform(1.5, 3.0, (periods + 1, d)),
                      1.0)
    rates = ramp[:, None] * bursts
    ops = lin.operators
    start = {o: f"n{i % NODES}" for i, o in enumerate(rng.permutation(ops))}
    rows = []
    for name in ("rod", "llf", "milp"):
        extra = {"time_limit_s": time_limit_s} if name == "milp" else {}
        where = dict(get_strategy(name)(_state(lin, coef, rates[0], start), Budget(),
                                        **extra).assignment)  # the initial placement
        for t in range(periods):
            plan = get_strategy(name)(_state(lin, coef, rates[t], where),
                                      Budget(max_migrations=budget), **extra)
            where = dict(plan.assignment)
            util = np.zeros(NODES)
            for j, o in enumerate(ops):
                util[int(where[o][1:])] += coef[j] @ rates[t + 1]
            rows.append({"figure": "18", "algorithm": name, "period": t,
                         "load_factor": float(ramp[t + 1]), "peak_util_pct": float(util.max()),
                         "overloaded": bool(util.max() > 100.0), "migrations": plan.migrations,
                         "feasible_set_ratio": plan.facet_metrics.get("feasible_set_ratio")})
    return rows
