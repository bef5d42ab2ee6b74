"""What a plan's MLflow run holds per unit, bounded: O(nodes + moves + top pairs), never O(units).

The run of a plan is where an operator audits it (jobs/tracking/store.py); the lake keeps the
whole record (the plans table's `plan_json` with the full assignment, the assignments table).
A run of a job of up to `KEYGROUPS_LOGGED` key groups logs every key group, as it always did;
a larger job's run logs in `keygroups.csv` the key groups that moved and the `KEYGROUPS_LOGGED`
heaviest (by load), and its `plan.json` says how many key groups the assignment has and where
it is instead of listing it. Metrics and params are a fixed set (plus the facets' own, a fixed
set per facet); moves.csv is O(moves), nodes.csv and node_loads.png O(nodes), comm_graph.png the
heaviest pairs. So the bytes of a run stop growing with the job's key groups at fixed nodes and
moves (tests/jobs/test_tracking_bounded.py).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["KEYGROUPS_LOGGED", "logged_keygroups", "logged_plan_json"]

KEYGROUPS_LOGGED = 1000


def logged_keygroups(rows: Sequence[Mapping[str, Any]], limit: int = KEYGROUPS_LOGGED
                     ) -> list[Mapping[str, Any]]:
    """The rows of keygroups.csv (jobs/tracking/audit_trail.py `keygroup_rows`): all of them up
    to `limit`, else the moved ones and the `limit` heaviest, in the rows' order."""
    if len(rows) <= limit:
        return list(rows)
    heaviest = {id(r) for r in heapq.nlargest(limit, rows, key=lambda r: float(r["load_pct"]))}
    return [r for r in rows if r["moved"] or id(r) in heaviest]


def logged_plan_json(plan_json: Mapping[str, Any], limit: int = KEYGROUPS_LOGGED
                     ) -> Mapping[str, Any]:
    """plan.json of the run: the plan's record, its assignment only up to `limit` key groups
    (the plans table holds it whole)."""
    assignment = plan_json.get("assignment") or {}
    if len(assignment) <= limit:
        return plan_json
    return {**plan_json, "assignment": None, "assignment_keygroups": len(assignment),
            "assignment_in": "the lake: plans.plan_json of this plan_id, and the assignments "
                             "table once published"}
