"""ALBIC step 1, "Calculate scores" (paper §4.3.2, Algorithm 2 lines 1–13).

For every operator O and key group g_k ∈ O:
    output(g_k) = Σ_{DO ∈ O.down} Σ_{g_j ∈ DO} out(g_k, g_j)
    avg(g_k)    = output(g_k) / Σ_{DO ∈ O.down} |DO.keygroups|
and a pair (g_k, g_j) is beneficial when out(g_k, g_j) > avg(g_k)·sF. Beneficial pairs already
on one node go to colGrps, the others to toBeColGrps.

O.down (the downstream operators of O) is not given to the planner; it is read off the
communication graph: the operators of every key group that a key group of O sends to. So every
edge from g_k leads into O.down, output(g_k) is simply the sum of g_k's outgoing rates, and
|DO.keygroups| counts all key groups of DO, also those g_k never sent to (the paper's "total
number of downstream key groups"). Parallel edges (same src, dst) are summed; self-edges are
not inter-key-group traffic and are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from placement.graphpart import pair_rates
from placement.model import ClusterState

__all__ = ["Scores", "calc_scores", "pair_rates"]

Pair = tuple[str, str]


@dataclass(frozen=True)
class Scores:
    """out(g_i, g_j), avg(g_k), and the beneficial pairs split by whether they are collocated.

    Both pair tuples are sorted by out(g_i, g_j) descending, then by (g_i, g_j).
    """

    out: Mapping[Pair, float]
    avg: Mapping[str, float]
    col_grps: tuple[Pair, ...]
    to_be_col_grps: tuple[Pair, ...]


def calc_scores(state: ClusterState, assignment: Mapping[str, str], s_f: float) -> Scores:
    """Step 1 on `state`'s communication, with collocation judged on `assignment`."""
    out = pair_rates(state)
    op_of = {k.id: k.operator for k in state.keygroups}
    op_size: dict[str, int] = {}
    for k in state.keygroups:
        op_size[k.operator] = op_size.get(k.operator, 0) + 1
    down: dict[str, set[str]] = {}
    output: dict[str, float] = {}
    for (src, dst), rate in out.items():
        down.setdefault(op_of[src], set()).add(op_of[dst])
        output[src] = output.get(src, 0.0) + rate
    avg: dict[str, float] = {}
    for kg, total in output.items():
        n_down = sum(op_size[o] for o in down[op_of[kg]])
        avg[kg] = total / n_down
    col: list[Pair] = []
    to_be: list[Pair] = []
    for (src, dst), rate in out.items():
        if rate > 0 and rate > avg[src] * s_f:
            (col if assignment[src] == assignment[dst] else to_be).append((src, dst))

    def order(p: Pair) -> tuple[float, str, str]:
        return (-out[p], p[0], p[1])

    return Scores(out=out, avg=avg, col_grps=tuple(sorted(col, key=order)),
                  to_be_col_grps=tuple(sorted(to_be, key=order)))
