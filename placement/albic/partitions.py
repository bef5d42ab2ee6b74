"""ALBIC step 2, "Maintain collocation" (paper §4.3.2, Algorithm 2 lines 15–23).

calcSets merges the collocated pairs (colGrps) into a minimum number of sets: any two sets that
intersect are replaced by their union (union-find). Every set S is split into
max(p1, p2) partitions, p1 = ⌈Pmc / maxMigrCost⌉ and p2 = ⌈PL / maxPL⌉, by balanced graph
partitioning: vertices are S's key groups, edge weight out(g_i, g_j) (both directions summed),
vertex weight mc_i when Pmc/maxMigrCost > PL/maxPL, else gLoad_i (ties at random, seeded). A
part that still violates either limit is split again. Each resulting partition of two or more
key groups moves as one indivisible unit in the MILP; a single key group is no constraint.

With a count budget (max_migrations, the paper's §5 variant), Pmc/maxMigrCost reads
|P| / max_migrations and the migration-cost vertex weight is 1 per key group: a partition with
more key groups than the budget allows could never move. With both budgets, the larger ratio
binds. A zero or absent budget gives p1 = 1 (no partition is too expensive to move then).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping

from placement.common import EPS
from placement.graphpart import graph_part, undirected_weights
from placement.model import Budget, ClusterState

__all__ = ["calc_sets", "load_ratio", "maintain_collocation", "migration_ratio"]



def calc_sets(pairs: Iterable[tuple[str, str]]) -> list[frozenset[str]]:
    """Union of intersecting pairs, as sets; sorted by their smallest member for determinism."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[str, set[str]] = {}
    for x in list(parent):
        groups.setdefault(find(x), set()).add(x)
    return sorted((frozenset(g) for g in groups.values()), key=min)


def migration_ratio(members: Iterable[str], cost: Mapping[str, float], budget: Budget
                    ) -> tuple[float, bool]:
    """(Pmc / maxMigrCost, whether the count budget is the binding one); 0 without a budget."""
    members = list(members)
    by_cost = by_count = 0.0
    if budget.max_migration_cost:
        by_cost = sum(cost[k] for k in members) / budget.max_migration_cost
    if budget.max_migrations:
        by_count = len(members) / budget.max_migrations
    return max(by_cost, by_count), by_count > by_cost


def load_ratio(members: Iterable[str], load: Mapping[str, float], max_pl: float) -> float:
    """PL / maxPL."""
    return sum(load[k] for k in members) / max_pl


def _parts_needed(ratio: float, most: int) -> int:
    """⌈ratio⌉, at least 1 and at most `most` (a set splits into single key groups at most; a
    budget of 1e-310 makes the ratio overflow to inf)."""
    if not ratio < most:
        return most
    return max(1, math.ceil(ratio - EPS))


def maintain_collocation(
    state: ClusterState,
    col_grps: Iterable[tuple[str, str]],
    out: Mapping[tuple[str, str], float],
    budget: Budget,
    max_pl: float,
    rng: random.Random,
    *,
    seed: int = 0,
) -> list[frozenset[str]]:
    """Step 2: the partitions (two or more key groups each) that move as indivisible units.

    `max_pl <= 0` means one partition per key group: no partition at all is returned.
    """
    if max_pl <= 0:
        return []
    load = {k.id: k.load for k in state.keygroups}
    cost = {k.id: k.migration_cost for k in state.keygroups}
    partitions: list[frozenset[str]] = []
    for s in calc_sets(col_grps):
        queue = [s]
        while queue:
            part = queue.pop()
            if len(part) < 2:
                continue
            r_mc, by_count = migration_ratio(part, cost, budget)
            r_pl = load_ratio(part, load, max_pl)
            k = max(_parts_needed(r_mc, len(part)), _parts_needed(r_pl, len(part)))
            if k <= 1:
                partitions.append(part)
                continue
            use_mc = r_mc > r_pl or (r_mc == r_pl and rng.random() < 0.5)
            if use_mc:
                weight = {g: 1.0 if by_count else cost[g] for g in part}
            else:
                weight = {g: load[g] for g in part}
            edges = undirected_weights(out, part)
            pieces = graph_part(sorted(part), weight, edges, k, seed=seed)
            queue.extend(frozenset(p) for p in pieces)
    return sorted(partitions, key=min)
