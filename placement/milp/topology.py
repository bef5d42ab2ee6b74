"""The job's topology constraints as rows of the MILP (placement/milp/model.py).

With x_{i,k} the MILP's allocation, a unit fixed at its base node b_k counted as a constant, and
A0_c the current assignment's violation amount of constraint c (placement/constraints.py), each
constraint keeps its amount at most A0_c (so at 0 when the current assignment keeps it):

    count_z(G)  = Σ_{k∈G} Σ_{i: label_i = z} x_{i,k}          (units of G in domain z)
    spread max: e_z ≥ count_z(G) − M,  e_z ≥ 0,  Σ_z e_z ≤ A0
    spread min: y_z ∈ {0,1},  y_z ≤ count_z(G),  Σ_z y_z ≥ min(Z, |G|) − A0
    anti-affinity S: e_i ≥ Σ_{k∈S} x_{i,k} − 1,  Σ_i e_i ≤ A0
    pin P to L: Σ_{k∈P} Σ_{i: L ⊄ labels_i} x_{i,k} ≤ A0
    max units M: e_i ≥ Σ_k x_{i,k} − M,  Σ_i e_i ≤ A0
    excluded E: Σ_k Σ_{i∈E, i ≠ q_k} x_{i,k} ≤ 0

The summed amount Σ_c amount_c (the e's, the shortfall, the pin's count) also enters the
objective with the weight w_T (`topology_weight`), larger than any change of the rest of the
objective can be worth, so the MILP repairs what the budget allows before it balances: a
constraint the current assignment breaks is a debt, not a permission.

`add_topology` adds them and returns the auxiliary variables' values for a given assignment,
so the warm start covers every variable, and the amount's terms for the objective.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import pulp

from placement.constraints import amounts
from placement.model import ClusterState
from schemas.constraints import Spread

__all__ = ["add_topology", "topology_weight"]

Aux = Callable[[Mapping[str, str]], dict[pulp.LpVariable, float]]


def topology_weight(state: ClusterState, w1: float, w2: float, w_b: float) -> float:
    """w_T: one unit of violation outweighs any change of w1·d − w2·(d_u + d_l) + w_b·L_B,
    none of which can exceed the utilisation of all load on the smallest node."""
    total = sum(k.load for k in state.keygroups)
    span = total / min(n.capacity for n in state.nodes) + 1.0
    return 2.0 * (w1 * span + 2.0 * w2 * span + w_b * total) + 1.0


def add_topology(prob: pulp.LpProblem, state: ClusterState,
                 x: Mapping[tuple[str, str], pulp.LpVariable], movers: set[str],
                 base: Mapping[str, str]) -> tuple[Aux, dict[pulp.LpVariable, float]]:
    """Add the rows above for `state.constraints`; the aux variables' values of an assignment,
    and the summed violation amount's variable terms (its constant does not matter)."""
    cons = state.constraints
    limit = amounts(state, state.assignment)
    labels = {n.id: dict(n.labels) for n in state.nodes}
    units = [k.id for k in state.keygroups]
    by_unit: dict[str, list[tuple[str, pulp.LpVariable]]] = {}
    for (k, node), var in x.items():
        by_unit.setdefault(k, []).append((node, var))
    aux: list[tuple[pulp.LpVariable, Callable[[Mapping[str, str]], float]]] = []
    seq = iter(range(1_000_000))
    penalty: dict[pulp.LpVariable, float] = {}

    def count(group: list[str], where: Callable[[str], bool]) -> tuple[dict[pulp.LpVariable,
                                                                           float], float]:
        """Σ x over `group` × nodes where `where` holds, split as (variables, constant)."""
        row: dict[pulp.LpVariable, float] = {}
        const = 0.0
        for k in group:
            if k in movers:
                for node, var in by_unit.get(k, []):
                    if where(node):
                        row[var] = row.get(var, 0.0) + 1.0
            elif where(base[k]):
                const += 1.0
        return row, const

    def excess(group: list[str], where: Callable[[str], bool], cap: int) -> pulp.LpVariable:
        """e ≥ count − cap, e ≥ 0; its value for an assignment is the excess itself."""
        e = prob.add_variable(f"topo_e_{next(seq)}", lowBound=0)
        row, const = count(group, where)
        row[e] = -1.0
        prob.addConstraint(pulp.LpConstraint(row, pulp.LpConstraintLE, f"topo_{e.name}",
                                             cap - const))
        aux.append((e, lambda a: max(0.0, sum(1.0 for k in group if where(a[k])) - cap)))
        return e

    def at_most(terms: Mapping[pulp.LpVariable, float], const: float, rhs: float, name: str
                ) -> None:
        prob.addConstraint(pulp.LpConstraint(dict(terms), pulp.LpConstraintLE,
                                             f"topo_{name}_{next(seq)}", rhs - const))

    for s in cons.spread:
        group = [k.id for k in state.keygroups if k.operator == s.operator] if s.operator \
            else [u for u in s.units if u in state.assignment]
        values = sorted({ls[s.label] for ls in labels.values() if s.label in ls})
        penalty.update(_spread(prob, s, group, values, labels, limit[s.name], excess, count, aux,
                               seq))
    for a in cons.anti_affinity:
        group = [u for u in a.units if u in state.assignment]
        es = [excess(group, _on(i), 1) for i in labels]
        at_most(dict.fromkeys(es, 1.0), 0.0, limit[a.name], "anti")
        penalty.update(dict.fromkeys(es, 1.0))
    for p in cons.pin:
        group = [u for u in p.units if u in state.assignment]
        row, const = count(group, _misses(labels, p.labels))
        at_most(row, const, limit[p.name], "pin")
        for var, coef in row.items():
            penalty[var] = penalty.get(var, 0.0) + coef
    if cons.max_units_per_node is not None:
        cap = cons.max_units_per_node
        es = [excess(units, _on(i), cap) for i in labels]
        at_most(dict.fromkeys(es, 1.0), 0.0, limit[f"at most {cap} units per node"], "max")
        penalty.update(dict.fromkeys(es, 1.0))
    if cons.exclude_nodes:
        row = {var: 1.0 for (k, node), var in x.items()
               if node in cons.exclude_nodes and node != state.assignment[k]}
        if row:
            at_most(row, 0.0, 0.0, "exclude")
    return (lambda a: {var: value(a) for var, value in aux}), penalty


def _on(node: str) -> Callable[[str], bool]:
    return lambda n: n == node


def _misses(labels: Mapping[str, Mapping[str, str]], want: Mapping[str, str]
            ) -> Callable[[str], bool]:
    """True for a node whose labels lack one of `want`'s pairs."""
    return lambda n: any(labels[n].get(k) != v for k, v in want.items())


def _occupied(group: list[str], where: Callable[[str], bool]
              ) -> Callable[[Mapping[str, str]], float]:
    return lambda a: float(any(where(a[k]) for k in group))


def _spread(prob: pulp.LpProblem, s: Spread, group: list[str], values: list[str],
            labels: Mapping[str, Mapping[str, str]], limit: int,
            excess: Callable[[list[str], Callable[[str], bool], int], pulp.LpVariable],
            count: Callable[[list[str], Callable[[str], bool]],
                            tuple[dict[pulp.LpVariable, float], float]],
            aux: list[tuple[pulp.LpVariable, Callable[[Mapping[str, str]], float]]],
            seq: Iterator[int]) -> dict[pulp.LpVariable, float]:
    """The spread rows of one group (module docstring). With both bounds, the amount is the sum
    of the two parts, so each part gets the whole limit and their sum is bounded as well."""
    def in_z(z: str) -> Callable[[str], bool]:
        return lambda n: labels[n].get(s.label) == z

    total: dict[pulp.LpVariable, float] = {}
    if s.max_per_domain is not None:
        for z in values:
            total[excess(group, in_z(z), s.max_per_domain)] = 1.0
    if s.min_domains is not None and group:
        need = min(s.min_domains, len(group))
        shortfall = prob.add_variable(f"topo_short_{next(seq)}", lowBound=0)
        row_y: dict[pulp.LpVariable, float] = {shortfall: 1.0}
        for z in values:
            y = prob.add_variable(f"topo_y_{next(seq)}", cat=pulp.LpBinary)
            row, const = count(group, in_z(z))
            row = {v: -c for v, c in row.items()}
            row[y] = 1.0
            prob.addConstraint(pulp.LpConstraint(row, pulp.LpConstraintLE, f"topo_y_{y.name}",
                                                 const))
            row_y[y] = 1.0
            aux.append((y, _occupied(group, in_z(z))))
        # shortfall ≥ need − Σ_z y_z
        prob.addConstraint(pulp.LpConstraint(row_y, pulp.LpConstraintGE,
                                             f"topo_need_{shortfall.name}", float(need)))
        aux.append((shortfall, lambda a: max(0.0, need - len(
            {labels[a[k]].get(s.label) for k in group} - {None}))))
        total[shortfall] = 1.0
    if total:
        prob.addConstraint(pulp.LpConstraint(total, pulp.LpConstraintLE,
                                             f"topo_spread_{next(seq)}", float(limit)))
    return total
