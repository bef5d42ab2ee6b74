"""The baselines of Chapter 6: exhaustive search, random placement along paths, SBON relaxation.

- Exhaustive (§6.4): every placement of the unpinned operators, Θ(N^M), the optimum under all
  constraints. Vectorised with numpy in chunks (costs, CPU per site, bandwidth per link and
  Eq. 4.5 latencies for a chunk of placements at once); for small networks.
- Random (§6.2.3): an operator goes to one of four stages along the path from a source to the
  sink: the source's site, a site of the source's zone, a site of the sink's zone, the sink's
  site; stages never go back towards the source (an operator's stage is at least its
  children's), transitions chosen at random.
- Relaxation (SBON, Pietzuch et al. 2006, as in §6.3.3): sites embedded in SBON's latency cost
  space, Vivaldi's 2-D Euclidean coordinates (`vivaldi_samples`: Vivaldi's own decentralised
  algorithm, each node sampling its neighbours; `vivaldi_space`: the minimum of Vivaldi's spring
  energy Σ (‖x_i − x_j‖ − Lat_ij)², computed centrally by SMACOF from the classical-MDS start,
  which no deployed Vivaldi reaches; no load dimension, as Formula 6.1 has no CPU term);
  unpinned operators relaxed as springs (each
  moves to the rate-weighted centroid of its neighbours: the fixed point of Σ rate·dist²,
  Formula 6.1) until they move less than 1e-6; each is then mapped to the nearest site.
  `cost_space` (classical MDS, any dimension) is the embedding of the first pass (3-D), kept as
  the bench's `--cost-space mds3`: it fits our routed latencies far better than Vivaldi's
  2-D space, and relaxation in it lands much nearer the optimum than the thesis's.
"""

from __future__ import annotations

import math

import numpy as np

from placement.sprawl.dp import tree_of
from placement.sprawl.instance import Instance

__all__ = ["cost_space", "exhaustive", "random_path", "relaxation", "vivaldi_samples",
           "vivaldi_space"]

CHUNK = 200_000


def _candidates(inst: Instance) -> list[np.ndarray]:
    return [np.flatnonzero(np.isfinite(inst.cpu_cost[op])) for op in range(inst.m)]


def exhaustive(inst: Instance, *, max_placements: int = 50_000_000
               ) -> tuple[np.ndarray | None, float]:
    """The optimal feasible placement by enumeration, or (None, inf) when none is feasible.

    Per chunk, placements are costed, sorted, and checked for feasibility cheapest first in
    growing batches, stopping at the first feasible one (the chunk's optimum): the same answer
    as checking all, with far fewer checks when cheap placements fit."""
    cands = _candidates(inst)
    sizes = [len(c) for c in cands]
    total = math.prod(sizes)
    if total > max_placements:
        raise ValueError(f"exhaustive: {total} placements exceed {max_placements}")
    ctx = _Checks(inst)
    best_x, best = None, math.inf
    for start in range(0, total, CHUNK):
        flat = np.arange(start, min(total, start + CHUNK))
        idx = np.unravel_index(flat, sizes)
        x = np.empty((len(flat), inst.m), dtype=np.int64)
        for op in range(inst.m):
            x[:, op] = cands[op][idx[op]] if sizes[op] > 1 else cands[op][0]
        cost = np.zeros(len(flat))
        for op in range(inst.m):
            cost += inst.cpu_cost[op, x[:, op]]
        for u, v, rate in inst.edges:
            cost += rate * inst.weight[x[:, u], x[:, v]]
        head = min(256, len(cost))
        first = np.argpartition(cost, head - 1)[:head]  # the cheapest few, unsorted
        first = first[np.argsort(cost[first], kind="stable")]
        ok = ctx.feasible(x[first]) & (cost[first] < best)
        if ok.any():
            i = int(first[int(np.argmax(ok))])
            best, best_x = float(cost[i]), x[i].copy()
            continue
        order = np.argsort(cost, kind="stable")[head:]
        order = order[cost[order] < best]
        size = 1024
        pos = 0
        while pos < len(order):
            batch = order[pos:pos + size]
            ok = ctx.feasible(x[batch])
            if ok.any():
                i = int(batch[int(np.argmax(ok))])
                best, best_x = float(cost[i]), x[i].copy()
                break
            pos += size
            size *= 4
    return best_x, best


class _Checks:
    """Vectorised constraint checks of many placements at once (CPU, bandwidth, Eq. 4.5)."""

    def __init__(self, inst: Instance) -> None:
        self.inst = inst
        self.order = _topological(inst)
        self.incoming: dict[int, list[int]] = {}
        for u, v, _ in inst.edges:
            self.incoming.setdefault(v, []).append(u)
        self.use = inst.routing.link_incidence() if inst.link_cap is not None else None

    def feasible(self, x: np.ndarray) -> np.ndarray:
        """Which placements meet every constraint; each check runs only on the survivors of
        the previous one (CPU, then latency, then bandwidth, the costliest)."""
        inst = self.inst
        alive = np.arange(len(x))
        if inst.cpu_cap is not None:
            load = np.zeros((len(x), inst.n))
            rows = np.arange(len(x))
            for op in range(inst.m):  # one site per (row, op): plain fancy += is exact
                load[rows, x[:, op]] += inst.cpu[op]
            alive = alive[np.all(load <= inst.cpu_cap[None, :] + 1e-9, axis=1)]
        if len(alive) and any(math.isfinite(q.bound) for q in inst.queries):
            xs = x[alive]
            lat = inst.routing.latency
            arrive = np.zeros((len(xs), inst.m))
            for op in self.order:
                for u in self.incoming.get(op, []):
                    arrive[:, op] = np.maximum(arrive[:, op],
                                               arrive[:, u] + lat[xs[:, u], xs[:, op]])
            ok = np.ones(len(xs), dtype=bool)
            for q in inst.queries:
                total_lat = arrive[:, q.sink]
                if q.client is not None:
                    total_lat = total_lat + lat[xs[:, q.sink], q.client]
                ok &= total_lat <= q.bound + 1e-9
            alive = alive[ok]
        if len(alive) and self.use is not None and inst.link_cap is not None:
            xs = x[alive]
            bw = np.zeros((len(xs), self.use.shape[2]))
            for u, v, rate in inst.edges:
                bw += rate * self.use[xs[:, u], xs[:, v]]
            alive = alive[np.all(bw <= inst.link_cap[None, :] + 1e-9, axis=1)]
        out = np.zeros(len(x), dtype=bool)
        out[alive] = True
        return out


def _topological(inst: Instance) -> list[int]:
    """Operators in data-flow order (Kahn), so Eq. 4.5 sees inputs first (any DAG)."""
    indeg = [0] * inst.m
    out: dict[int, list[int]] = {}
    for u, v, _ in inst.edges:
        indeg[v] += 1
        out.setdefault(u, []).append(v)
    ready = [op for op in range(inst.m) if indeg[op] == 0]
    order: list[int] = []
    while ready:
        op = ready.pop()
        order.append(op)
        for v in out.get(op, []):
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    return order


def random_path(inst: Instance, rng: np.random.Generator) -> np.ndarray:
    """§6.2.3: monotone random stages source site → source zone → sink zone → sink site."""
    r = inst.routing
    tree = tree_of(inst.m, inst.edges, [q.sink for q in inst.queries])
    children: dict[int, list[int]] = {}
    for child, (par, _, _) in tree.parent.items():
        children.setdefault(par, []).append(child)
    zones = np.array(r.zone)
    fixed = {op: int(np.flatnonzero(np.isfinite(inst.cpu_cost[op]))[0]) for op in range(inst.m)
             if np.isfinite(inst.cpu_cost[op]).sum() == 1}
    stage = np.zeros(inst.m, dtype=np.int64)
    source = np.zeros(inst.m, dtype=np.int64)
    x = np.full(inst.m, -1, dtype=np.int64)
    for root in tree.roots:
        sink_site = fixed.get(root, int(rng.integers(inst.n)))
        for op in tree.postorder:
            kids = children.get(op, [])
            if op in fixed and not kids:
                x[op], source[op], stage[op] = fixed[op], fixed[op], 0
                continue
            src = int(source[kids[int(rng.integers(len(kids)))]]) if kids else int(
                rng.integers(inst.n))
            low = max((int(stage[k]) for k in kids), default=0)
            s = int(rng.integers(low, 4))
            source[op], stage[op] = src, s
            if op in fixed:
                x[op] = fixed[op]
                continue
            if s == 0:
                site = src
            elif s == 1:
                site = int(rng.choice(np.flatnonzero(zones == zones[src])))
            elif s == 2:
                site = int(rng.choice(np.flatnonzero(zones == zones[sink_site])))
            else:
                site = sink_site
            x[op] = site if np.isfinite(inst.cpu_cost[op, site]) else int(
                np.argmin(inst.cpu_cost[op]))
    return x


def cost_space(latency: np.ndarray, dims: int = 3) -> np.ndarray:
    """Classical MDS of the latency matrix: site coordinates in a `dims`-dimensional space
    (3 by default, as many numbers as a Vivaldi coordinate with height)."""
    n = latency.shape[0]
    d2 = latency ** 2
    j = np.eye(n) - 1.0 / n
    b = -0.5 * j @ d2 @ j
    vals, vecs = np.linalg.eigh(b)
    top = np.argsort(vals)[::-1][:dims]
    return np.asarray(vecs[:, top] * np.sqrt(np.maximum(vals[top], 0.0)))


def vivaldi_space(latency: np.ndarray, dims: int = 2, *, tol: float = 1e-4,
                  iterations: int = 300) -> np.ndarray:
    """Vivaldi's coordinates (Dabek et al. 2004, the cost space of SBON): the positions whose
    distances fit the latencies with the least spring energy Σ_{i<j} (‖x_i − x_j‖ − Lat_ij)²,
    which Vivaldi's nodes approach by local spring moves; here centrally, by SMACOF (Guttman
    transforms, each never raising the energy) from classical MDS until it falls by less than
    `tol` (relative)."""
    n = latency.shape[0]
    x = cost_space(latency, dims)
    before = math.inf
    for _ in range(iterations):
        sq = (x * x).sum(axis=1)
        dist = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2.0 * (x @ x.T), 0.0))
        energy = float(((dist - latency) ** 2).sum())
        if before - energy < tol * before:
            break
        before = energy
        np.fill_diagonal(dist, 1.0)
        b = -latency / np.maximum(dist, 1e-9)
        np.fill_diagonal(b, 0.0)
        b[np.diag_indices(n)] = -b.sum(axis=1)
        x = b @ x / n
    return x


def vivaldi_samples(latency: np.ndarray, dims: int = 2, *, neighbours: int = 32,
                    rounds: int = 2000, cc: float = 0.25, ce: float = 0.25, seed: int = 0
                    ) -> np.ndarray:
    """Vivaldi as deployed (Dabek et al. 2004, the adaptive timestep of its Figure 3): each
    node samples the latency to one of its `neighbours` random neighbours per round and moves
    along the spring by δ = cc·w (w = e_i / (e_i + e_j), its error weighted against the
    neighbour's); its error e_i follows the sample's relative error with gain ce·w. All nodes
    update at once per round, from the origin (a zero spring pushes in a random direction)."""
    rng = np.random.default_rng(seed)
    n = latency.shape[0]
    k = min(neighbours, n - 1)
    nbrs = np.array([rng.choice(np.delete(np.arange(n), i), k, replace=False)
                     for i in range(n)])
    x = np.zeros((n, dims))
    err = np.ones(n)
    rows = np.arange(n)
    for _ in range(rounds):
        j = nbrs[rows, rng.integers(0, k, n)]
        rtt = latency[rows, j]
        diff = x - x[j]
        dist = np.linalg.norm(diff, axis=1)
        away = rng.normal(size=(n, dims))
        unit = np.where(dist[:, None] > 1e-9, diff / np.maximum(dist, 1e-9)[:, None],
                        away / np.linalg.norm(away, axis=1)[:, None])
        w = err / (err + err[j])
        err = np.abs(dist - rtt) / rtt * ce * w + err * (1 - ce * w)
        x = x + (cc * w * (rtt - dist))[:, None] * unit
    return x


def relaxation(inst: Instance, coords: np.ndarray, *, iterations: int = 10_000) -> np.ndarray:
    """SBON's spring relaxation in the cost space, then the nearest allowed site."""
    fixed = {op: int(np.argmin(inst.cpu_cost[op])) for op in range(inst.m)
             if np.isfinite(inst.cpu_cost[op]).sum() == 1}
    pos = np.zeros((inst.m, coords.shape[1]))
    centre = coords[list(fixed.values())].mean(axis=0) if fixed else coords.mean(axis=0)
    for op in range(inst.m):
        pos[op] = coords[fixed[op]] if op in fixed else centre
    nbrs: dict[int, list[tuple[int, float]]] = {op: [] for op in range(inst.m)}
    for u, v, rate in inst.edges:
        nbrs[u].append((v, rate))
        nbrs[v].append((u, rate))
    free = [op for op in range(inst.m) if op not in fixed and nbrs[op]]
    for _ in range(iterations):
        moved = 0.0
        for op in free:
            wsum = sum(max(rt, 1e-12) for _, rt in nbrs[op])
            new = sum(max(rt, 1e-12) * pos[nb] for nb, rt in nbrs[op]) / wsum
            moved = max(moved, float(np.abs(new - pos[op]).max()))
            pos[op] = new
        if moved < 1e-6:
            break
    x = np.zeros(inst.m, dtype=np.int64)
    for op in range(inst.m):
        if op in fixed:
            x[op] = fixed[op]
            continue
        d = np.linalg.norm(coords - pos[op], axis=1)
        d[~np.isfinite(inst.cpu_cost[op])] = np.inf
        x[op] = int(np.argmin(d))
    return x
