"""ALBIC step 3 with O(1) checks per pair (placement/albic/collocate.py) gives exactly the
Improvement of the loop it replaced (kept below as the reference: a lookup of out() per pair, a
sum over each candidate unit), for one pair and for `many`, on random §5.3 workloads with nodes
marked for removal and every kind of budget."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from placement.albic.collocate import Constraint, Improvement, improve_collocation
from placement.albic.partitions import maintain_collocation
from placement.albic.scores import calc_scores
from placement.common import fits
from placement.model import Budget, ClusterState, Node
from placement.workloads.comm import comm_workload

Pair = tuple[str, str]


def _candidates(pairs: Sequence[Pair], out: Mapping[Pair, float], rng: random.Random
                ) -> list[Pair]:
    """The pairs by out() descending; pairs with equal out() in a random (seeded) order."""
    keyed = [(-out[p], rng.random(), p) for p in pairs]
    keyed.sort()
    return [p for _, _, p in keyed]


def _reference(
    state: ClusterState,
    to_be_col_grps: Sequence[Pair],
    out: Mapping[Pair, float],
    partitions: Sequence[frozenset[str]],
    allowance: Budget,
    max_pl: float,
    rng: random.Random,
    *,
    many: bool = False,
) -> Improvement:
    """Step 3 (one pair, or as many as `allowance` admits with `many=True`)."""
    where = dict(state.assignment)
    load = {k.id: k.load for k in state.keygroups}
    cost = {k.id: k.migration_cost for k in state.keygroups}
    cap = {n.id: n.capacity for n in state.nodes}
    in_b = {n.id for n in state.nodes if n.marked_for_removal}
    util = {n.id: 0.0 for n in state.nodes}
    for kg, node in where.items():
        util[node] += load[kg] / cap[node]
    units: dict[int, frozenset[str]] = dict(enumerate(partitions))
    unit_of = {kg: i for i, members in units.items() for kg in members}
    pins: dict[int, str] = {}
    result = Improvement(units=[])
    next_id = len(units)
    for gi, gj in _candidates(to_be_col_grps, out, rng):
        ui, uj = unit_of.get(gi), unit_of.get(gj)
        if ui is not None and ui == uj:
            continue
        mem_i = units[ui] if ui is not None else frozenset({gi})
        mem_j = units[uj] if uj is not None else frozenset({gj})
        n1 = pins.get(ui, where[gi]) if ui is not None else where[gi]
        n2 = pins.get(uj, where[gj]) if uj is not None else where[gj]
        case = 1 + (ui is not None) + (uj is not None)
        if case == 2:
            options = [n1] if ui is not None else [n2]
        else:
            options = sorted({n1, n2}, key=lambda n: (util[n], n))
        pinned = [pins[u] for u in (ui, uj) if u is not None and u in pins]
        if pinned:
            if len(set(pinned)) > 1:
                continue
            options = [pinned[0]]
        options = [n for n in options if n not in in_b]
        unit = mem_i | mem_j
        if not options or (max_pl > 0 and sum(load[k] for k in unit) > max_pl):
            continue
        node = options[0]
        movers = [k for k in unit if where[k] != node]
        count = result.forced_count + len(movers)
        spent = result.forced_cost + sum(cost[k] for k in movers)
        if not fits(allowance, count, spent):
            continue
        result.forced_count, result.forced_cost = count, spent
        for k in movers:
            util[where[k]] -= load[k] / cap[where[k]]
            util[node] += load[k] / cap[node]
            where[k] = node
        for u in (ui, uj):
            if u is not None:
                units.pop(u)
                pins.pop(u, None)
        units[next_id] = unit
        pins[next_id] = node
        for k in unit:
            unit_of[k] = next_id
        next_id += 1
        result.constraints.append(Constraint((gi, gj), case, unit, node))
        if not many:
            break
    result.units = [units[i] for i in sorted(units)]
    result.pins = {units[i]: node for i, node in pins.items()}
    return result


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.booleans(), st.sampled_from([0.0, 10.0, 25.0, 60.0]),
       st.integers(0, 3), st.booleans())
def test_step_three_is_the_loop_it_replaced(seed: int, many: bool, max_pl: float, which: int,
                                            removal: bool) -> None:
    w = comm_workload(6, 60, 6, 60.0, seed)
    rng = random.Random(seed)
    assignment = dict(w.initial)
    for src, dst in w.one_to_one:
        if rng.random() < 0.5:
            assignment[dst] = assignment[src]
    state = w.state(assignment)
    if removal:
        state = replace(state, nodes=tuple(
            Node(n.id, n.capacity, marked_for_removal=i == 0) for i, n in enumerate(state.nodes)))
    budget = [Budget(max_migrations=4), Budget(max_migration_cost=0.2),
              Budget(max_migrations=40, max_migration_cost=3.0), Budget()][which]
    scores = calc_scores(state, state.assignment, 1.0)
    parts = maintain_collocation(state, scores.col_grps, scores.out, budget, max_pl or 25.0,
                                 random.Random(seed), seed=seed)
    new = improve_collocation(state, scores.to_be_col_grps, scores.out, parts, budget, max_pl,
                              random.Random(seed + 1), many=many, rates=scores.to_be_col_rates)
    old = _reference(state, scores.to_be_col_grps, scores.out, parts, budget, max_pl,
                     random.Random(seed + 1), many=many)
    assert scores.to_be_col_grps
    assert new.constraints == old.constraints
    assert new.units == old.units and new.pins == old.pins
    assert new.forced_count == old.forced_count
    assert abs(new.forced_cost - old.forced_cost) <= 1e-12 * max(1.0, abs(old.forced_cost))
