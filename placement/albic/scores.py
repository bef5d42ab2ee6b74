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

import numpy as np

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
    #: out(g_i, g_j) of each pair of `to_be_col_grps`, in its order: step 3 orders the pairs by
    #: it every maxPL level, and a lookup per pair in `out` costs seconds at 10^5 pairs
    to_be_col_rates: tuple[float, ...] = ()


def calc_scores(state: ClusterState, assignment: Mapping[str, str], s_f: float) -> Scores:
    """Step 1 on `state`'s communication, with collocation judged on `assignment`.

    On the columns (placement/comm.py): output(g_k) adds g_k's pairs in pair order, as a loop
    over out() would, plus the rate of the pairs a top-k landing dropped, so avg(g_k) is the
    average over all of g_k's traffic, not over its heaviest pairs only."""
    out = pair_rates(state)
    comm = state.comm
    cols = state.columns
    if len(out) == 0:
        return Scores(out=out, avg={}, col_grps=(), to_be_col_grps=())
    ops, op_code = np.unique(np.asarray([k.operator for k in state.keygroups], dtype=object),
                             return_inverse=True)
    op_size = np.bincount(op_code, minlength=len(ops))
    unit_op = np.append(op_code, 0)[cols.comm_unit]  # the operator of each vocabulary unit
    src, dst, rate = out.src, out.dst, out.rate
    # O.down per operator: every operator a key group of O sends to
    down = np.unique(unit_op[src] * len(ops) + unit_op[dst])
    n_down = np.bincount(down // len(ops), weights=op_size[down % len(ops)],
                         minlength=len(ops))
    has_output = np.zeros(len(comm.units), bool)
    has_output[src] = True
    output = out.output() + comm.dropped
    avg_of = np.zeros(len(comm.units))
    avg_of[has_output] = output[has_output] / n_down[unit_op[has_output]]
    avg = {comm.units[i]: float(avg_of[i]) for i in np.flatnonzero(has_output)}
    beneficial = (rate > 0) & (rate > avg_of[src] * s_f)
    node = np.append(cols.node_codes(assignment), -1)[cols.comm_unit]
    b_src, b_dst, b_rate = src[beneficial], dst[beneficial], rate[beneficial]
    order = np.lexsort((comm.rank[b_dst], comm.rank[b_src], -b_rate))
    together = (node[b_src] == node[b_dst])[order]
    pairs = [(comm.units[a], comm.units[b])
             for a, b in zip(b_src[order].tolist(), b_dst[order].tolist(), strict=True)]
    apart = ~together
    return Scores(out=out, avg=avg,
                  col_grps=tuple(p for p, t in zip(pairs, together.tolist(), strict=True) if t),
                  to_be_col_grps=tuple(p for p, t in zip(pairs, together.tolist(), strict=True)
                                       if not t),
                  to_be_col_rates=tuple(b_rate[order][apart].tolist()))
