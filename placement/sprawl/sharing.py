"""Multi-query sharing (Ch. 5, the four steps of §5.2.6) and multi-output plans (§5.3).

Queries arrive one at a time (§6.2.2). For a new plan p:
1. covered and equivalent operators (§5.2.1, Definitions 1–2): an operator whose key equals a
   deployed operator's is equivalent to it; a filter over a stream is covered by a deployed
   filter over the same stream with a wider range (choice: the thesis's "F4 ⇒ F2, edge
   F2 → F4" reading of §5.2.2/§5.2.4, i.e. the covered operator reads the covering one's output);
2. reordering (§5.2.4): when two of p's leaves are joined by a deployed join that p does not
   have, p' joins them first; both are placed and the cheaper kept;
3. cost adjustment (§5.2.2): the BWCost of an input becomes the minimum over every provider of
   the same data (the original child subtree, a deployed equivalent/covering operator at its
   fixed site, or any site the same data already flows to for an earlier query: the shared
   data links; 0 when co-located), and a reused subtree's CPUCost is 0 (it is not placed);
4. the DP (Algorithm 1 with these alternatives) places the new operators, deployed ones fixed.
Because every alternative is an extra option of the DP, a query's marginal cost with sharing is
never above its cost without sharing on the same network (tested).

A batch of queries whose equivalent operators are merged is a multi-output plan (§5.3): it is
placed by the undirected-tree DP from any root (Theorem 5.3.1), or, when merging closes a cycle,
left unmerged (`merge_plans` reports it; the MILP is exact there).

CPU weights follow load (§3.2.1, soft constraints of §4.3.1): w^CPU_n grows as site n fills,
w_n = base_n · (1 + used_n / cap_n), so later queries move to less loaded sites.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from placement.sprawl.distributed import Zones, distributed_dp
from placement.sprawl.dp import NotATree, algorithm1
from placement.sprawl.instance import Instance, Objective, QueryIdx, evaluate
from placement.sprawl.topology import Routing
from placement.sprawl.workload import QueryPlan, QuerySpec, build, reorder

__all__ = ["Deployment", "Placed", "batch_cost", "instance_of", "merge_plans", "place_query",
           "register_placed"]


def instance_of(plans: Sequence[QueryPlan], routing: Routing, *, beta: float = 1.0,
                objective: Objective = "resource", cpu_weight: np.ndarray | None = None,
                cpu_cap: np.ndarray | None = None, link_cap: np.ndarray | None = None
                ) -> Instance:
    """The instance of some query plans side by side (pinned sources and sinks, CPUCost
    w_n · CPU_op, or 0 under the SBON objective)."""
    ops: list[str] = []
    cpu: list[float] = []
    rows: list[np.ndarray] = []
    edges: list[tuple[int, int, float]] = []
    queries: list[QueryIdx] = []
    w = cpu_weight if cpu_weight is not None else np.ones(routing.n)
    for plan in plans:
        base = len(ops)
        for i, op in enumerate(plan.ops):
            ops.append(f"{plan.id}.{i}")
            cpu.append(op.cpu)
            row = np.zeros(routing.n) if objective == "sbon" else w * op.cpu
            if op.site is not None:
                row = np.full(routing.n, np.inf)
                row[op.site] = 0.0 if objective == "sbon" else w[op.site] * op.cpu
            rows.append(row)
        edges.extend((base + u, base + v, r) for u, v, r in plan.edges)
        queries.append(QueryIdx(base + plan.sink, plan.bound, plan.client))
    return Instance(routing, tuple(ops), np.array(cpu), np.array(rows), tuple(edges), beta,
                    objective, cpu_cap, link_cap, tuple(queries))


@dataclass
class Deployment:
    """What runs already: operators by key with their site and output rate; CPU per site."""

    routing: Routing
    cap: np.ndarray
    base_weight: np.ndarray
    beta: float = 1.0
    by_key: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    #: deployed filters by input key: (lo, hi, site, output rate), for Definition 1
    filters: dict[str, list[tuple[float, float, int, float]]] = field(default_factory=dict)
    used: np.ndarray | None = None
    link_bw: np.ndarray | None = None
    #: place with the distributed DP over these zones (§5.2.5) instead of Algorithm 1
    zones: Zones | None = None

    def __post_init__(self) -> None:
        if self.used is None:
            self.used = np.zeros(self.routing.n)
        if self.link_bw is None:
            self.link_bw = np.zeros(len(self.routing.links))

    def weight(self) -> np.ndarray:
        assert self.used is not None
        return np.asarray(self.base_weight * (1.0 + self.used / self.cap))


@dataclass(frozen=True)
class Placed:
    """One placed query: its plan, sites (-1: reused), marginal cost, whether p' won, and the
    sites and links its data passes (its own and the reused providers')."""

    plan: QueryPlan
    x: np.ndarray
    cost: float
    reordered: bool
    sites: frozenset[int] = frozenset()
    links: frozenset[int] = frozenset()


def _alternatives(plan: QueryPlan, inst: Instance, dep: Deployment) -> dict[int, np.ndarray]:
    """Step 3: per data edge u → v, the cheapest way to get u's data from a deployed provider."""
    alt: dict[int, np.ndarray] = {}
    w = inst.weight
    for e, (u, v, _) in enumerate(plan.edges):
        best = np.full(inst.n, np.inf)
        for site, r_out in dep.by_key.get(plan.ops[u].key, []):  # equivalent (Def. 2)
            best = np.minimum(best, r_out * w[site])
        cov = plan.ops[v].covers
        if cov is not None and plan.ops[u].key == cov[0]:  # v covered by a wider filter (Def. 1)
            for lo, hi, site, r_out in dep.filters.get(cov[0], []):
                if lo <= cov[1] and hi >= cov[2]:
                    best = np.minimum(best, r_out * w[site])
        if np.isfinite(best).any():
            alt[e] = best
    return alt


def _place(plan: QueryPlan, dep: Deployment, sharing: bool) -> tuple[np.ndarray, float]:
    inst = instance_of([plan], dep.routing, beta=dep.beta, cpu_weight=dep.weight())
    alt = _alternatives(plan, inst, dep) if sharing else None
    if dep.zones is not None:  # §5.2.5: the distributed DP with the same alternatives
        dist = distributed_dp(inst, dep.zones, alternatives=alt)
        return dist.x, dist.cost
    res = algorithm1(inst, alternatives=alt)
    return res.x, res.cost


def place_query(spec: QuerySpec, dep: Deployment, *, sharing: bool) -> Placed:
    """Steps 1–4 for one arriving query; the deployment is updated with what was placed."""
    plan = build(spec)
    x, cost = _place(plan, dep, sharing)
    reordered = False
    if sharing:
        leaf_keys = [_leaf_key(spec, i) for i in range(len(spec.leaves))]
        have = {op.key for op in plan.ops}
        for i in range(len(leaf_keys)):
            for j in range(i + 1, len(leaf_keys)):
                ka, kb = sorted((leaf_keys[i], leaf_keys[j]))
                jk = f"J({ka}|{kb})"
                if jk in dep.by_key and jk not in have:
                    alt_plan = build(reorder(spec, (i, j)))
                    x2, cost2 = _place(alt_plan, dep, sharing)
                    if cost2 < cost:
                        plan, x, cost, reordered = alt_plan, x2, cost2, True
    sites, links = register_placed(plan, x, dep)
    return Placed(plan, x, cost, reordered, sites, links)


def _leaf_key(spec: QuerySpec, i: int) -> str:
    site, rng = spec.leaves[i]
    return f"S{site}" if rng is None else f"F(S{site},{rng[0]:g},{rng[1]:g})"


def register_placed(plan: QueryPlan, x: np.ndarray, dep: Deployment
              ) -> tuple[frozenset[int], frozenset[int]]:
    """Add what was placed to the deployment; the sites and links the query relies on."""
    assert dep.used is not None and dep.link_bw is not None
    sites: set[int] = set()
    links: set[int] = set()
    for u, v, rate in plan.edges:
        if x[u] >= 0 and x[v] >= 0:
            path = dep.routing.path_links(int(x[u]), int(x[v]))
        elif x[v] >= 0:  # the input came from a deployed provider: its nearest copy
            prov = dep.by_key.get(plan.ops[u].key) or [
                (s, r) for lo, hi, s, r in dep.filters.get(
                    (plan.ops[v].covers or ("",))[0], [])]
            if not prov:
                continue
            site = min((s for s, _ in prov), key=lambda s: dep.routing.latency[s, x[v]])
            sites.add(site)
            path = dep.routing.path_links(site, int(x[v]))
        else:
            continue
        links.update(path)
        for lk in path:
            dep.link_bw[lk] += rate
        # u's data now also arrives at v's site: a copy later queries may take (§5.2.2)
        dep.by_key.setdefault(plan.ops[u].key, []).append((int(x[v]), plan.ops[u].rate_out))
    for i, op in enumerate(plan.ops):
        if x[i] >= 0:
            sites.add(int(x[i]))
            dep.used[x[i]] += op.cpu
            if op.kind != "sink":
                dep.by_key.setdefault(op.key, []).append((int(x[i]), op.rate_out))
            if op.covers is not None:
                dep.filters.setdefault(op.covers[0], []).append(
                    (op.covers[1], op.covers[2], int(x[i]), op.rate_out))
    return frozenset(sites), frozenset(links)


def merge_plans(plans: Sequence[QueryPlan], routing: Routing, *, beta: float = 1.0
                ) -> tuple[Instance, bool]:
    """A batch with equivalent operators merged into one multi-output plan (§5.3); returns
    (instance, merged). When merging closes an undirected cycle the plans are kept apart."""
    ops: list[str] = []
    index: dict[str, int] = {}
    cpu: list[float] = []
    rows: list[np.ndarray] = []
    edges: dict[tuple[int, int], float] = {}
    queries: list[QueryIdx] = []
    for plan in plans:
        local = []
        for op in plan.ops:
            if op.key not in index:
                index[op.key] = len(ops)
                ops.append(op.key)
                cpu.append(op.cpu)
                row = np.ones(routing.n) * op.cpu
                if op.site is not None:
                    row = np.full(routing.n, np.inf)
                    row[op.site] = op.cpu
                rows.append(row)
            local.append(index[op.key])
        for u, v, r in plan.edges:
            edges[(local[u], local[v])] = r
        queries.append(QueryIdx(local[plan.sink], plan.bound, plan.client))
    inst = Instance(routing, tuple(ops), np.array(cpu), np.array(rows),
                    tuple((u, v, r) for (u, v), r in edges.items()), beta,
                    queries=tuple(queries))
    try:
        algorithm1(inst)
    except NotATree:
        return instance_of(plans, routing, beta=beta), False
    return inst, True


def batch_cost(plans: Sequence[QueryPlan], routing: Routing, *, beta: float = 1.0,
               root: int | None = None) -> tuple[float, float, bool]:
    """(shared cost, unshared cost, merged) of placing a batch at once with Algorithm 1."""
    shared, merged = merge_plans(plans, routing, beta=beta)
    res = algorithm1(shared, roots=[root] if root is not None else ())
    alone = algorithm1(instance_of(plans, routing, beta=beta))
    assert math.isclose(evaluate(shared, res.x).total, res.cost, rel_tol=1e-9, abs_tol=1e-9)
    return res.cost, alone.cost, merged
