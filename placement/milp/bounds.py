"""A certified lower bound on the MILP's d that needs no solver.

Used when the solver's own bound does not cover the full problem (restricted candidate moves,
CBC through PuLP, which does not report its best bound). It relaxes the MILP to counting
arguments, so it is valid for every assignment the budget allows:

- a node above mean + δ must shed at least (load_i − mean − δ)·cap_i of load, which takes at
  least as many key groups as its largest movable ones need, and at least the fractional-
  knapsack cost of its cheapest-per-load movable ones;
- a node of A below mean − δ must receive at least (mean − δ − load_i)·cap_i, which takes at
  least as many key groups as the largest movable ones of the cluster need, and
  deficit·min(mc/load);
- *the window*: a node of A must end within [mean − δ, mean + δ], so what it sheds (or takes)
  must also stay below (dev_i + δ)·cap_i. Departures only, with the fewest key groups (k), are
  possible only if its k smallest movable key groups fit below that; otherwise at least one
  more migration touches the node (an extra departure, or an arrival that compensates). The same
  holds for arrivals with the cluster's k smallest movable key groups. This is what makes the
  bound bite on nodes a fraction of a key group away from mean, which need an exchange (two
  migrations), not a move;
- every move leaves one node and enters one node, so the moves needed are at least the larger of
  the departure and arrival sums (and so is the cost), and at least half the sum over nodes of
  the migrations that must touch each node;
- Lemma 4.2 as a bound: the load left on B, at least L_B minus what the budget can drain from B,
  pushes the average of A below mean, so δ ≥ (L_B − drainable) / Σ_{A} cap_i.

The smallest δ that passes all the tests is found by bisection (the tests are monotone in δ).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

from placement.common import EPS
from placement.metrics import max_deviation, mean_load
from placement.model import Budget, ClusterState, KeyGroup


@dataclass(frozen=True)
class _NodeInfo:
    util: float
    cap: float
    in_b: bool
    prefix_big: tuple[float, ...]  # prefix sums of movable loads, largest first
    prefix_small: tuple[float, ...]  # prefix sums of movable loads, smallest first
    by_ratio: tuple[tuple[float, float], ...]  # (load, cost), cheapest cost per load first


def _min_cost_to_shed(items: tuple[tuple[float, float], ...], amount: float) -> float:
    """Fractional knapsack: the least cost that sheds `amount` of load (inf if impossible)."""
    cost = 0.0
    for load, mc in items:
        if amount <= EPS:
            return cost
        take = min(load, amount)
        cost += mc * take / load
        amount -= take
    return cost if amount <= EPS else math.inf


def _max_shed(items: list[tuple[float, float]], max_count: int | None, max_cost: float | None
              ) -> float:
    """An upper bound on the load a budget can drain from a set of key groups."""
    by_load = sorted((load for load, _ in items), reverse=True)
    limit = sum(by_load) if max_count is None else sum(by_load[:max_count])
    if max_cost is not None:
        budget = max_cost
        shed = 0.0
        for load, mc in sorted(items, key=lambda it: it[1] / it[0] if it[0] > 0 else math.inf):
            if mc <= budget:
                shed += load
                budget -= mc
            else:
                shed += load * budget / mc
                break
        limit = min(limit, shed)
    return limit


def lower_bound_d(
    state: ClusterState, budget: Budget, movable: Callable[[KeyGroup], bool]
) -> float:
    """A lower bound on min d over every assignment the budget allows (see module docstring)."""
    mean = mean_load(state)
    current_d = max_deviation(state, state.assignment)
    per_node: dict[str, list[KeyGroup]] = {n.id: [] for n in state.nodes}
    for kg in state.keygroups:
        per_node[state.assignment[kg.id]].append(kg)
    raw = {n: sum(k.load for k in kgs) for n, kgs in per_node.items()}
    movers = [k for k in state.keygroups if movable(k) and k.load > 0]
    if not movers:
        return current_d
    all_big = tuple(accumulate(sorted((k.load for k in movers), reverse=True)))
    all_small = tuple(accumulate(sorted(k.load for k in movers)))
    min_ratio = min(k.migration_cost / k.load for k in movers)
    infos = []
    for n in state.nodes:
        mine = [k for k in per_node[n.id] if movable(k) and k.load > 0]
        big = sorted((k.load for k in mine), reverse=True)
        ratio = sorted(((k.load, k.migration_cost) for k in mine), key=lambda t: t[1] / t[0])
        infos.append(_NodeInfo(raw[n.id] / n.capacity, n.capacity, n.marked_for_removal,
                               tuple(accumulate(big)), tuple(accumulate(reversed(big))),
                               tuple(ratio)))
    cap_a = sum(n.capacity for n in state.nodes if not n.marked_for_removal)
    load_b = sum(raw[n.id] for n in state.nodes if n.marked_for_removal)
    b_items = [(k.load, k.migration_cost) for n in state.nodes if n.marked_for_removal
               for k in per_node[n.id] if movable(k) and k.load > 0]
    left_on_b = load_b - _max_shed(b_items, budget.max_migrations, budget.max_migration_cost)
    lemma_bound = max(0.0, left_on_b / cap_a)

    def feasible(delta: float) -> bool:
        out_n = in_n = touch = 0
        out_c = in_c = 0.0
        for info in infos:
            excess = (info.util - mean - delta) * info.cap
            if excess > EPS:
                k = bisect.bisect_left(info.prefix_big, excess - EPS) + 1
                if k > len(info.prefix_big):
                    return False
                out_n += k
                out_c += _min_cost_to_shed(info.by_ratio, excess)
                window = (info.util - mean + delta) * info.cap  # shed at most this (A only)
                touch += k + int(not info.in_b and info.prefix_small[k - 1] > window + EPS)
            deficit = (mean - delta - info.util) * info.cap
            if not info.in_b and deficit > EPS:
                k = bisect.bisect_left(all_big, deficit - EPS) + 1
                if k > len(all_big):  # more arrivals than there is movable load
                    return False
                in_n += k
                in_c += deficit * min_ratio
                window = (mean + delta - info.util) * info.cap  # take at most this
                touch += k + int(all_small[k - 1] > window + EPS)
        moves = max(out_n, in_n, (touch + 1) // 2)
        if budget.max_migrations is not None and moves > budget.max_migrations:
            return False
        cost_cap = budget.max_migration_cost
        return cost_cap is None or max(out_c, in_c) <= cost_cap + EPS

    lo, hi = lemma_bound, current_d
    if hi <= lo or feasible(lo):
        return min(lo, current_d)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if feasible(mid):
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-9 * max(1.0, hi):
            break
    return max(0.0, lo - 1e-9)
