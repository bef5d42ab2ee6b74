"""Plan metrics, one definition used everywhere (DESIGN.md, "Metrics").

Every strategy, the pipeline and the benchmarks score an assignment with these functions, so a
"load distance" means the same number in MLflow, in a benchmark table and in a test.

Choices (recorded in docs/algorithms.md):
- `mean` is the total key-group load divided by the total capacity weight of the nodes not
  marked for removal (A). With unit capacities this is the paper's (1/|A|)·Σ_{n_i∈N} load_i;
  it is independent of the assignment, which keeps the MILP linear.
- No ceil on `mean`: loads are in % of a reference node, so the paper's ceil would round the
  mean to a whole percent and report LD > 0 for a perfectly balanced cluster.
- The collocation factor of a job without inter-key-group traffic is 100.0 (nothing crosses a
  node boundary, so nothing is lost); self-edges (src == dst) are not inter-key-group traffic.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from placement.model import ClusterState, PlanMetrics

__all__ = [
    "collocation_factor",
    "load_distance",
    "load_index",
    "max_deviation",
    "mean_load",
    "node_loads",
    "plan_metrics",
]


def check_assignment(state: ClusterState, assignment: Mapping[str, str]) -> None:
    """Raise ValueError unless `assignment` puts every key group of `state` on a known node."""
    codes = state.columns.node_codes(assignment)
    if (codes < 0).any():  # the first unit without a (known) node, in the state's order
        kg = state.keygroups[int(np.flatnonzero(codes < 0)[0])]
        node = assignment.get(kg.id)
        if node is None:
            raise ValueError(f"assignment: key group {kg.id!r} has no node")
        raise ValueError(f"assignment: key group {kg.id!r} is on unknown node {node!r}")
    if len(assignment) != len(state.keygroups):
        extra = sorted(set(assignment) - set(state.columns.units))
        raise ValueError(f"assignment: names unknown key group(s) {extra[:5]!r}")


def _raw_loads(state: ClusterState, codes: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """Σ gLoad_k per node, added in the state's unit order (the floats a loop would give)."""
    cols = state.columns
    return np.asarray(np.bincount(codes, weights=cols.load, minlength=len(cols.nodes)), np.float64)


def node_loads(state: ClusterState, assignment: Mapping[str, str]) -> dict[str, float]:
    """Utilisation of every node: Σ gLoad_k of its key groups / its capacity weight."""
    check_assignment(state, assignment)
    cols = state.columns
    util = _raw_loads(state, cols.node_codes(assignment)) / cols.capacity
    return dict(zip(cols.nodes, util.tolist(), strict=True))


def mean_load(state: ClusterState) -> float:
    """The paper's `mean`: all load spread over the capacity of the nodes in A (no ceil)."""
    cols = state.columns
    total = sum(cols.load.tolist())
    cap_a = sum(cols.capacity[~cols.marked].tolist())
    return total / cap_a


def load_distance(state: ClusterState, assignment: Mapping[str, str]) -> float:
    """LD = max_{n_i ∈ A} |load_i − mean| (paper §4.3.1), loads divided by capacity weight."""
    loads = node_loads(state, assignment)
    mean = mean_load(state)
    return max(abs(loads[n.id] - mean) for n in state.nodes if not n.marked_for_removal)


def max_deviation(state: ClusterState, assignment: Mapping[str, str]) -> float:
    """The MILP's d for an assignment: LD, or how far a node in B sits above `mean` if further.

    Constraint (3) bounds every node (B too) from above, constraint (4) only nodes in A, so the
    smallest d an assignment admits is max(LD, max_{n_i∈B} (load_i − mean), 0).
    """
    loads = node_loads(state, assignment)
    mean = mean_load(state)
    d = 0.0
    for n in state.nodes:
        dev = loads[n.id] - mean
        d = max(d, dev if n.marked_for_removal else abs(dev))
    return d


def collocation_factor(state: ClusterState, assignment: Mapping[str, str]) -> float:
    """% of inter-key-group traffic (Σ edge rates, self-edges excluded) kept on one node.

    With top-k communication (placement/comm.py) the dropped pairs' traffic counts in the total
    as traffic that crosses nodes: the factor never overstates the true one."""
    check_assignment(state, assignment)
    cols = state.columns
    # a communication id that is not a unit of the state (an arrival's, after present_state)
    # has comm_unit -1: the appended -1 gives it no node
    return state.comm.collocation(np.append(cols.node_codes(assignment), -1)[cols.comm_unit])


def plan_metrics(state: ClusterState, assignment: Mapping[str, str]) -> PlanMetrics:
    """LD, the most loaded node of N, the least loaded node of A, and the collocation factor."""
    loads = node_loads(state, assignment)
    mean = mean_load(state)
    in_a = [loads[n.id] for n in state.nodes if not n.marked_for_removal]
    return PlanMetrics(
        load_distance=max(abs(v - mean) for v in in_a),
        max_node_load=max(loads.values()),
        min_node_load=min(in_a),
        collocation_factor=collocation_factor(state, assignment),
    )


def load_index(state: ClusterState, warmup: ClusterState | float) -> float:
    """Load index (paper §5), in %: average system load / average system load after warm-up.

    The average system load is `mean_load` (all key-group load over the capacity of A); with
    loads that include the cost of remote traffic, collocation lowers it (100 → 50 in the
    paper's Real Job 2). `warmup` is the state measured right after warm-up, or its mean load.
    """
    ref = mean_load(warmup) if isinstance(warmup, ClusterState) else float(warmup)
    if not ref > 0 or ref != ref or ref == float("inf"):
        raise ValueError(f"load index: the warm-up system load must be a finite number > 0, "
                         f"got {ref!r}")
    return 100.0 * mean_load(state) / ref
