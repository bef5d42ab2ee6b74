"""Algorithm 1, the SPRAWL DP without constraints (§4.2), on trees and multi-output trees (§5.3).

Eq. 4.4: OPCost_{i,j} = Σ_{t ∈ children(i)} min_k (OPCost_{t,k} + BWCost_{t,k,j}) + CPUCost_{i,j}.
Operators are visited in postorder; for each child t the N×N table OPCost_{t,k} + BWCost_{k,j}
is reduced over k in one numpy call (the loops of lines 7–13), the argmin kept as COPT (line 15),
and `deploy` walks back down from the root's cheapest site (lines 16–26). Time O(M·N²), memory
O(M·N).

The plan is treated as an undirected tree (§5.3.2): a multi-output plan (several sinks sharing
operators) is solved the same way from any root, with each edge's BWCost taken in its data-flow
direction, and Theorem 5.3.1 makes the optimum independent of the root. A communication graph
whose undirected form has a cycle is `NotATree` (the MILP, placement/sprawl/milp.py, handles it).

`alternatives` serve multi-query sharing (§5.2.2): for a data edge u → v, a vector over v's
sites with the cost of taking the same data from an operator already deployed; where it is
cheaper the subtree of u is not placed at all (its result is reused) and u's site is -1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from placement.sprawl.instance import Instance

__all__ = ["DPResult", "NotATree", "Tree", "algorithm1", "tree_of"]


class NotATree(ValueError):
    """The undirected communication graph has a cycle: the DP is not exact there (§5.3)."""


@dataclass(frozen=True)
class Tree:
    """A rooted traversal of a forest: postorder of each component, parent links."""

    roots: tuple[int, ...]
    postorder: tuple[int, ...]  # children before parents, roots last in their component
    parent: Mapping[int, tuple[int, int, bool]]  # child -> (parent, edge index, child is source)


def tree_of(m: int, edges: Sequence[tuple[int, int, float]],
            preferred_roots: Sequence[int] = ()) -> Tree:
    """Root every component of the undirected graph (a preferred root first, e.g. a sink;
    otherwise an operator without outputs), or NotATree if it has a cycle."""
    adj: dict[int, list[tuple[int, int, bool]]] = {i: [] for i in range(m)}
    for e, (u, v, _) in enumerate(edges):
        adj[u].append((v, e, False))  # seen from u: the neighbour v consumes u's data
        adj[v].append((u, e, True))
    has_out = {u for u, _, _ in edges}
    order = list(preferred_roots) + [i for i in range(m) if i not in has_out] + list(range(m))
    seen: set[int] = set()
    roots: list[int] = []
    post: list[int] = []
    parent: dict[int, tuple[int, int, bool]] = {}
    for root in order:
        if root in seen:
            continue
        roots.append(root)
        seen.add(root)
        stack: list[tuple[int, int]] = [(root, -1)]
        visit: list[int] = []
        while stack:
            node, via = stack.pop()
            visit.append(node)
            for nb, e, nb_is_src in adj[node]:
                if e == via:
                    continue
                if nb in seen:
                    raise NotATree("the communication graph has a cycle (undirected), so "
                                   "Algorithm 1 is not exact; use the MILP")
                seen.add(nb)
                parent[nb] = (node, e, nb_is_src)
                stack.append((nb, e))
        post.extend(reversed(visit))
    return Tree(tuple(roots), tuple(post), parent)


@dataclass(frozen=True)
class DPResult:
    """A placement (site per operator, -1 when reused through sharing) and its DP cost."""

    x: np.ndarray
    cost: float
    opcost: np.ndarray  # OPCost[op][n]; at a root, the optimum of its component per site
    tree: Tree


def algorithm1(inst: Instance, *, roots: Sequence[int] = (),
               alternatives: Mapping[int, np.ndarray] | None = None,
               cpu_cost: np.ndarray | None = None) -> DPResult:
    """Algorithm 1 (exact on forests): postorder accumulation, then `deploy` top-down."""
    if not roots:
        roots = [q.sink for q in inst.queries]
    tree = tree_of(inst.m, inst.edges, roots)
    opcost = np.array(inst.cpu_cost if cpu_cost is None else cpu_cost, dtype=np.float64)
    copt: dict[int, np.ndarray] = {}
    elided: dict[int, np.ndarray] = {}
    w = inst.weight
    buf = np.empty_like(w)
    cols = np.arange(inst.n)
    for op in tree.postorder:
        if op not in tree.parent:
            continue
        par, e, is_src = tree.parent[op]
        rate = inst.edges[e][2]
        fin = np.flatnonzero(np.isfinite(opcost[op]))  # a pinned child: one row, not N
        if len(fin) == 0:
            raise ValueError(f"operator {inst.ops[op]!r} has no site it may run on")
        wd = w if is_src else w.T
        if len(fin) < len(opcost[op]):
            table = opcost[op][fin][:, None] + rate * wd[fin]
        else:  # one N×N buffer, no temporaries: the O(N²) step of lines 9–13
            table = np.multiply(wd, rate, out=buf)
            table += opcost[op][:, None]
        arg = table.argmin(axis=0)
        best = table[arg, cols]
        if len(fin) < len(opcost[op]):
            arg = fin[arg]
        if alternatives and is_src and e in alternatives:
            alt = alternatives[e]
            take = alt < best
            best = np.where(take, alt, best)
            elided[op] = take
        copt[op] = arg
        opcost[par] += best
    x = np.full(inst.m, -1, dtype=np.int64)
    total = 0.0
    for root in tree.roots:
        x[root] = int(np.argmin(opcost[root]))
        total += float(opcost[root][x[root]])
    for op in reversed(tree.postorder):  # parents before children: deploy()
        if op in tree.parent:
            par = tree.parent[op][0]
            if x[par] < 0 or (op in elided and elided[op][x[par]]):
                continue
            x[op] = copt[op][x[par]]
    return DPResult(x, total, opcost, tree)
