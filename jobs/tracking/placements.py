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
from schemas.tracking import Artifact

__all__ = ["PLACEMENTS_ARTIFACT", "PLACEMENT_COLUMNS", "placement_rows", "placements_csv"]

PLACEMENTS_ARTIFACT = Artifact.PLACEMENTS_CSV
PLACEMENT_COLUMNS = ("keygroup", "how", "node_before", "node_after", "sources",
                     "already_on_node", "traffic_added", "rule")


def placement_rows(state: ClusterState, plan: Plan, ran: Mapping[str, str], rule: str
                   ) -> list[dict[str, Any]]:
    """The rows of `placements.csv` (PLACEMENT_COLUMNS); `state` is the one the plan stage built
    (arrivals still unplaced), `ran` where the runtime ran each unit, `rule` how arrivals were
    placed."""
    rate = {s.id: s.rate for s in state.sources}
    reads = state.subscriptions
    stays = {u: n for u, n in state.assignment.items() if plan.assignment.get(u) == n}
    shipped: dict[str, set[str]] = {}
    for unit, node in stays.items():
        shipped.setdefault(node, set()).update(reads.get(unit, ()))
    rows = []
    for unit in sorted(state.arrivals):
        node = plan.assignment[unit]
        mine = sorted(reads.get(unit, ()))
        there = [s for s in mine if s in shipped.get(node, set())]
        rows.append(_row(unit, "arrival", ran.get(unit, ""), node, mine, there, rate, rule))
        shipped.setdefault(node, set()).update(mine)
    final: dict[str, dict[str, int]] = {}
    for unit, node in plan.assignment.items():
        for source in reads.get(unit, ()):
            final.setdefault(node, {}).setdefault(source, 0)
            final[node][source] += 1
    for move in plan.moves:
        mine = sorted(reads.get(move.keygroup, ()))
        there = [s for s in mine if final.get(move.dst, {}).get(s, 0) > 1]
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
