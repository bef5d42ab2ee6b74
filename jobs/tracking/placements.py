"""Where a unit of a job with sources went and why: the `placements.csv` artifact of a cycle.

For a state with sources and subscriptions (Herding, Zong et al. 2015 §2) the plan stage stores,
with the cycle's MLflow run, one row per unit the plan placed or moved: an arrival (no current
node; placed by the strategy, or pre-placed by jobs/facets/dynamic.py when the strategy does not
place arrivals) or a moved unit. Each row names the unit's sources S_q, which of them were
already shipped to the chosen node, and the traffic its placement adds there: w of the others
(a source is shipped once per node, so only sources new to the node cost traffic, eq. 1).

"Already there" follows the order the online rule places units in (§5: arrivals one at a time,
in unit-id order): the sources read by the units that stay on the node, plus those of the
arrivals placed there before this one. A moved unit is judged against the final assignment
without itself. `reconf audit --key-group <unit>` reads the row back (reconf/audit.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobs.tracking.audit_trail import to_csv
from placement.model import ClusterState, Plan
from placement.subscriptions import Subscriptions
from schemas.tracking import Artifact

__all__ = ["PLACEMENTS_ARTIFACT", "PLACEMENT_COLUMNS", "placement_rows", "placements_csv"]

PLACEMENTS_ARTIFACT = Artifact.PLACEMENTS_CSV
PLACEMENT_COLUMNS = ("keygroup", "how", "node_before", "node_after", "sources",
                     "already_on_node", "traffic_added", "rule")


def placement_rows(state: ClusterState, plan: Plan, ran: Mapping[str, str], rule: str
                   ) -> list[dict[str, Any]]:
    """The rows of `placements.csv` (PLACEMENT_COLUMNS); `state` is the one the plan stage built
    (arrivals still unplaced), `ran` where the runtime ran each unit, `rule` how arrivals were
    placed.

    What every unit's sources put on each node (the stayers' shipped sources, the final
    readers per (node, source)) is counted over S_q's CSR columns (placement/subscriptions.py),
    not unit by unit: only the rows written (arrivals and moves) are Python objects."""
    import numpy as np
    import pandas as pd

    rate = {s.id: s.rate for s in state.sources}
    reads = Subscriptions.of(state.subscriptions)
    units = pd.Index(reads.units, dtype=object)
    before = pd.Series(dict(state.assignment), dtype=object).reindex(units)
    after = pd.Series(dict(plan.assignment), dtype=object).reindex(units)
    codes, vocab = pd.factorize(pd.concat([before, after], ignore_index=True))
    b, a = codes[:len(units)], codes[len(units):]
    node_code = {str(v): j for j, v in enumerate(vocab)}
    src_code = {s: i for i, s in enumerate(reads.source_ids)}
    m = max(len(reads.source_ids), 1)
    row, src = np.repeat(np.arange(len(units)), np.diff(reads.indptr)), reads.indices
    # (node, source) keys j*m + s: shipped there by a unit that stays; read there in the end
    shipped = set((b[row] * m + src)[((b >= 0) & (b == a))[row]].tolist())
    final, readers = np.unique((a[row] * m + src)[a[row] >= 0], return_counts=True)

    def key(node: str, source: str) -> int:
        return node_code.setdefault(node, len(node_code)) * m + src_code[source]

    def read_by_others(node: str, source: str) -> bool:
        at = int(np.searchsorted(final, key(node, source)))
        return at < len(final) and int(final[at]) == key(node, source) and readers[at] > 1

    rows = []
    for unit in sorted(state.arrivals):
        node = plan.assignment[unit]
        mine = sorted(reads.get(unit, ()))
        there = [s for s in mine if key(node, s) in shipped]
        rows.append(_row(unit, "arrival", ran.get(unit, ""), node, mine, there, rate, rule))
        shipped.update(key(node, s) for s in mine)
    for move in plan.moves:
        mine = sorted(reads.get(move.keygroup, ()))
        there = [s for s in mine if read_by_others(move.dst, s)]
        rows.append(_row(move.keygroup, "moved", move.src, move.dst, mine, there, rate,
                         f"moved by {plan.strategy} within the migration budget"))
    return rows


def _row(unit: str, how: str, before: str, after: str, mine: list[str], there: list[str],
         rate: Mapping[str, float], rule: str) -> dict[str, Any]:
    return {"keygroup": unit, "how": how, "node_before": before, "node_after": after,
            "sources": ";".join(mine), "already_on_node": ";".join(there),
            "traffic_added": sum(rate.get(s, 0.0) for s in mine if s not in there),
            "rule": rule}


def placements_csv(state: ClusterState, plan: Plan, ran: Mapping[str, str], rule: str
                   ) -> str | None:
    """The artifact's text, or None for a state without sources."""
    if "sources" not in state.facets:
        return None
    return to_csv(placement_rows(state, plan, ran, rule), PLACEMENT_COLUMNS)
