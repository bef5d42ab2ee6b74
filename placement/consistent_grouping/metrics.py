"""Consistent Grouping's metrics of an assignment (Nasir et al. §3, §6.1.2, Table 1, Table 4).

- `utilisation_imbalance`: I = max_w U_w − avg_w U_w over the nodes of A, U_w in % of the
  node's capacity (the plain mean of §3, not reconf's capacity-weighted `mean_load`);
- `normalized_imbalance`: I / avg_w U_w (Table 1);
- `vw_gap`: ½ Σ_w |α_w − α*_w|, the VWs that sit away from the capacity-proportional optimum
  α*_w = c_w·n·α (§6.1.2; VWs of every operator counted, α*_w = 0 on B);
- `vw_max_rel_error`: max_w |α_w / α*_w − 1| over A;
- per node (clusters of up to `PER_NODE_LIMIT` nodes): `utilisation_pct/<node>`,
  `vws/<node>` and `vws_optimal/<node>` (α* does not depend on the assignment: `plan_cg` logs
  it once, after), so MLflow groups each family in one chart section.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from placement.consistent_grouping.pairing import imbalance, normalized_imbalance
from placement.metrics import node_loads
from placement.model import ClusterState

__all__ = ["PER_NODE_LIMIT", "cg_metrics", "vw_counts"]

#: above this many nodes the per-node metrics are left out (MLflow would list thousands)
PER_NODE_LIMIT = 64


def vw_counts(state: ClusterState, assignment: Mapping[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """(α_w, α*_w) per node in `state.nodes` order."""
    index = {n: i for i, n in enumerate(state.node_ids)}
    alpha = np.zeros(len(index))
    for kg in state.keygroups:
        alpha[index[assignment[kg.id]]] += 1
    cap = np.array([0.0 if n.marked_for_removal else n.capacity for n in state.nodes])
    return alpha, len(state.keygroups) * cap / cap.sum()


def cg_metrics(state: ClusterState, assignment: Mapping[str, str]) -> dict[str, float]:
    """The metrics above for `assignment` (every key group placed)."""
    loads = node_loads(state, assignment)
    in_a = [n for n in state.nodes if not n.marked_for_removal]
    util = np.array([loads[n.id] for n in in_a])
    alpha, optimum = vw_counts(state, assignment)
    a_mask = np.array([not n.marked_for_removal for n in state.nodes])
    rel = np.abs(alpha[a_mask] / np.maximum(optimum[a_mask], 1e-12) - 1.0)
    out = {
        "utilisation_imbalance": imbalance(util),
        "normalized_imbalance": normalized_imbalance(util),
        "vw_gap": float(np.abs(alpha - optimum).sum() / 2.0),
        "vw_max_rel_error": float(rel.max()) if len(rel) else 0.0,
    }
    if len(state.nodes) <= PER_NODE_LIMIT:
        for i, n in enumerate(state.nodes):
            out[f"utilisation_pct/{n.id}"] = loads[n.id]
            out[f"vws/{n.id}"] = float(alpha[i])
            out[f"vws_optimal/{n.id}"] = float(optimum[i])
    return out
