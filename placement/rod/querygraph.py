"""Load coefficients from a query graph (Xing et al. 2006 §2.2 Example 1, §6.2) and the §7.1
random query graphs.

`linearise` propagates rates along the dataflow in topological order: an operator's input rate
is a linear form over the variables (the input streams I_k, plus §6.2's new variables); its load
is l^o_j = c_j · (input rate); its output rate is s_j · (input rate). Two kinds of operator
break linearity and get a new rate variable for their output ("cutting" the graph, Fig. 13):
- "variable": a selectivity that varies (o_1 of Example 3): load c_j·r_in stays linear, the
  output becomes the new variable;
- "join": a time-window join, load c_j·w·r_u·r_v and output s_j·w·r_u·r_v; with the output as
  the new variable r_new its load is (c_j / s_j)·r_new.
As §6.2 advises, no other variable is introduced. Each arc's tuple rate (the upstream output)
is returned too: the communication model of §6.3 charges it to both ends of a crossing arc.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from placement.model import ClusterState

__all__ = ["Linearised", "Operator", "QueryGraph", "cluster_state", "linearise", "random_trees"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Operator:
    """o_j: cost c_j per input tuple, selectivity s_j, and its kind (see the module doc)."""

    id: str
    cost: float
    selectivity: float = 1.0
    kind: Literal["linear", "variable", "join"] = "linear"

    def __post_init__(self) -> None:
        if not (self.cost >= 0 and np.isfinite(self.cost)):
            raise ValueError(f"operator {self.id!r}: cost must be finite and >= 0")
        if not (self.selectivity >= 0 and np.isfinite(self.selectivity)):
            raise ValueError(f"operator {self.id!r}: selectivity must be finite and >= 0")
        if self.kind == "join" and self.selectivity <= 0:
            raise ValueError(f"join {self.id!r}: selectivity must be > 0 (its load is "
                             "(c/s)·r_out, §6.2)")


@dataclass(frozen=True)
class QueryGraph:
    """Operators, arcs (upstream, downstream), and which operators read each input stream."""

    operators: tuple[Operator, ...]
    arcs: tuple[tuple[str, str], ...]
    inputs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Linearised:
    """L^o over the variables, and the tuple rate of every arc as a linear form."""

    operators: tuple[str, ...]
    variables: tuple[str, ...]
    coefficients: Array  # m × d'
    arc_rates: Array  # arcs × d'
    arcs: tuple[tuple[int, int], ...]


def _topological(graph: QueryGraph) -> list[int]:
    index = {o.id: j for j, o in enumerate(graph.operators)}
    indeg = [0] * len(index)
    down: list[list[int]] = [[] for _ in index]
    for u, v in graph.arcs:
        if u not in index or v not in index:
            raise ValueError(f"query graph: arc {u!r}->{v!r} names an unknown operator")
        down[index[u]].append(index[v])
        indeg[index[v]] += 1
    ready = [j for j, k in enumerate(indeg) if k == 0]
    out = []
    while ready:
        j = ready.pop()
        out.append(j)
        for w in down[j]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    if len(out) != len(index):
        raise ValueError("query graph: the arcs form a cycle; ROD needs an acyclic graph")
    return out


def linearise(graph: QueryGraph) -> Linearised:
    """The load coefficients of every operator on the input streams and §6.2's variables."""
    ops = graph.operators
    index = {o.id: j for j, o in enumerate(ops)}
    variables = list(graph.inputs)
    variables += [f"{op.id}.out" for op in ops if op.kind != "linear"]
    var = {v: k for k, v in enumerate(variables)}
    d = len(variables)
    rate_in = np.zeros((len(ops), d))
    for k, stream in enumerate(graph.inputs):
        for reader in graph.inputs[stream]:
            if reader not in index:
                raise ValueError(f"query graph: stream {stream!r} feeds unknown operator "
                                 f"{reader!r}")
            rate_in[index[reader], k] += 1.0
    topo = _topological(graph)  # also checks the arcs' ends
    ups: list[list[int]] = [[] for _ in ops]
    for u, v in graph.arcs:
        ups[index[v]].append(index[u])
    rate_out = np.zeros((len(ops), d))
    coef = np.zeros((len(ops), d))
    for j in topo:
        o = ops[j]
        for up in ups[j]:
            rate_in[j] += rate_out[up]
        if o.kind == "linear":
            rate_out[j] = o.selectivity * rate_in[j]
            coef[j] = o.cost * rate_in[j]
        else:
            rate_out[j] = 0.0
            rate_out[j, var[f"{o.id}.out"]] = 1.0
            coef[j] = (o.cost * rate_in[j] if o.kind == "variable"
                       else (o.cost / o.selectivity) * rate_out[j])
    arcs = tuple((index[u], index[v]) for u, v in graph.arcs)
    arc_rates = np.array([rate_out[u] for u, _ in arcs]).reshape(len(arcs), d)
    return Linearised(tuple(o.id for o in ops), tuple(variables), coef, arc_rates, arcs)


def random_trees(d: int, per_tree: int, rng: np.random.Generator) -> QueryGraph:
    """§7.1: d operator trees of `per_tree` operators each, rooted at the input streams; each
    tree node gets 1–3 children (equally likely) until the tree is full; costs U[0.1, 1] ms;
    a random half of the operators selectivity 1, the rest U[0.5, 1]."""
    if d < 1 or per_tree < 1:
        raise ValueError("random_trees: d and per_tree must be >= 1")
    m = d * per_tree
    sel = rng.uniform(0.5, 1.0, m)
    sel[rng.permutation(m)[: m // 2]] = 1.0
    cost = rng.uniform(0.1, 1.0, m)
    ops = tuple(Operator(f"o{j}", float(cost[j]), float(sel[j])) for j in range(m))
    arcs: list[tuple[str, str]] = []
    inputs: dict[str, tuple[str, ...]] = {}
    for k in range(d):
        base = k * per_tree
        inputs[f"I{k + 1}"] = (f"o{base}",)
        frontier, made, head = [base], 1, 0
        while made < per_tree:
            parent = frontier[head]
            head += 1
            for _ in range(int(rng.integers(1, 4))):
                if made == per_tree:
                    break
                child = base + made
                arcs.append((f"o{parent}", f"o{child}"))
                frontier.append(child)
                made += 1
    return QueryGraph(ops, tuple(arcs), inputs)


def cluster_state(lin: Linearised, nodes: int, *, utilisation: float = 0.5,
                  rates: NDArray[np.float64] | None = None, seed: int = 0) -> ClusterState:
    """A ClusterState with the load-model facet for `lin`: `nodes` reference nodes, the
    variables as streams at `rates` (default 1 each), the coefficients scaled so the cluster
    runs at `utilisation` at those rates, the arcs as edges (their tuple rates), units
    currently placed round-robin in a seeded random order, migration cost 1 each."""
    from placement.facets import Stream
    from placement.model import Edge, KeyGroup, Node

    d = len(lin.variables)
    r = np.ones(d) if rates is None else np.asarray(rates, dtype=float)
    raw = lin.coefficients @ r
    scale = utilisation * 100.0 * nodes / raw.sum() if raw.sum() > 0 else 1.0
    coef = lin.coefficients * scale
    order = np.random.default_rng(seed).permutation(len(lin.operators))
    node_ids = [f"n{i}" for i in range(nodes)]
    where = {lin.operators[j]: node_ids[i % nodes] for i, j in enumerate(order)}
    return ClusterState(
        nodes=tuple(Node(n) for n in node_ids),
        keygroups=tuple(KeyGroup(o, o, float(coef[j] @ r), migration_cost=1.0)
                        for j, o in enumerate(lin.operators)),
        assignment=where,
        edges=tuple(Edge(lin.operators[u], lin.operators[v], float(lin.arc_rates[a] @ r))
                    for a, (u, v) in enumerate(lin.arcs)),
        streams=tuple(Stream(v, float(r[k])) for k, v in enumerate(lin.variables)),
        load_model={o: {v: float(coef[j, k]) for k, v in enumerate(lin.variables)
                        if coef[j, k] > 0} for j, o in enumerate(lin.operators)})
