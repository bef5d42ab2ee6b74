"""The plan stage's side of Algorithm 1: node set, set B and cool-down history from Delta.

Everything comes from data the pipeline keeps, never from process memory: the scaling sections
of the job's *published* plans for earlier periods (`plans.plan_json["scaling"]`, oldest first),
which are exactly what the manifests told the runtime.

- node set = the nodes the runtime reports (node_stats) and the nodes of the last published
  assignment, plus every node an earlier manifest added (the runtime may not report it yet),
  minus every node an earlier manifest terminated (the runtime may still report it);
- B = the last published plan's `nodes_to_mark` (the whole set B, placement/scaling/cycle.py), minus
  terminated nodes: a node stays in B until it is empty and terminated;
- history = each earlier plan's `decision` ("out", "in", "none"), for the cool-down, and every
  node id ever added or terminated (ids are never reused).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobs.facets.load_model import keep_until_fitted
from jobs.plan.terminated import evacuate
from placement.common import make_plan
from placement.model import Budget, ClusterState, Node, Plan, SolverStatus
from placement.registry import get_strategy
from placement.scaling import ScalingOutcome, scaling_cycle
from placement.scaling.policy import DECISIONS, ScalingHistory, ScalingPolicy
from schemas.config import ScalingConfig

if TYPE_CHECKING:
    from jobs.lake import Lake

__all__ = ["Solved", "earlier_sections", "policy_of", "scaling_json", "solve", "with_scaling_nodes"]


def policy_of(config: ScalingConfig) -> ScalingPolicy:
    return ScalingPolicy(target_utilisation=config.target_utilisation,
                         min_nodes=config.min_nodes, max_nodes=config.max_nodes,
                         cooldown_cycles=config.cooldown_cycles, max_ld=config.max_ld)


def earlier_sections(lake: Lake, job_id: str, before: datetime) -> list[dict[str, Any]]:
    """The scaling sections of the published plans of periods before `before`, oldest first."""
    return [dict(json.loads(r["plan_json"]).get("scaling") or {})
            for r in lake.published_plans(job_id, before)]


def _ids(section: Mapping[str, Any], key: str) -> set[str]:
    return {str(v) for v in section.get(key) or ()}


def history_of(sections: Sequence[Mapping[str, Any]]) -> ScalingHistory:
    decisions = tuple(str(s.get("decision", "none")) for s in sections)
    used: set[str] = set()
    for s in sections:
        used |= _ids(s, "nodes_to_add") | _ids(s, "nodes_to_terminate")
    return ScalingHistory(tuple(d if d in DECISIONS else "none" for d in decisions),
                          frozenset(used))


def with_scaling_nodes(state: ClusterState, sections: Sequence[Mapping[str, Any]],
                       runtime_nodes: frozenset[str] | None = None) -> ClusterState:
    """`state` with the nodes earlier manifests added / terminated and the current set B.

    With the runtime's report (`runtime_nodes`), a node an earlier manifest added counts only if
    the runtime has it: a version it never applied added nothing.
    """
    added: set[str] = set()
    gone: set[str] = set()
    for s in sections:
        added |= _ids(s, "nodes_to_add")
        gone |= _ids(s, "nodes_to_terminate")
    if runtime_nodes is not None:
        added &= runtime_nodes
    marked = (_ids(sections[-1], "nodes_to_mark") if sections else set()) - gone
    busy = set(state.assignment.values())
    nodes = {n.id: n for n in state.nodes if n.id not in gone or n.id in busy}
    for node_id in sorted(added - gone - set(nodes)):
        nodes[node_id] = Node(node_id)
    out = tuple(replace(n, marked_for_removal=n.id in marked)
                for _, n in sorted(nodes.items()))
    if all(n.marked_for_removal for n in out):  # never: the policy keeps A non-empty
        out = tuple(replace(n, marked_for_removal=False) for n in out)
    return replace(state, nodes=out)


def scaling_json(outcome: ScalingOutcome) -> dict[str, Any]:
    """Extra keys of plan_json["scaling"] (publish copies only the manifest's four fields)."""
    return {"decision": outcome.decision.direction,
            "nodes_active": sum(1 for n in outcome.state.nodes if not n.marked_for_removal),
            "nodes_marked": len(outcome.marked)}


@dataclass(frozen=True)
class Solved:
    """A plan, the state it is for (Algorithm 1 may add and mark nodes), and the extra keys of
    its scaling section (None when the job does not scale)."""

    plan: Plan
    state: ClusterState
    scaling_extra: dict[str, Any] | None


def solve(state: ClusterState, budget: Budget, strategy: str, params: Mapping[str, Any],
          time_limit_s: float | None, scaling: ScalingConfig | None,
          sections: Sequence[Mapping[str, Any]] = (),
          runtime_nodes: frozenset[str] | None = None,
          gone: frozenset[str] = frozenset(), job_id: str = "") -> Solved:
    """The one place that decides scale-or-not: Algorithm 1 for a job with a `[scaling]` table
    (`sections`: earlier published scaling sections), else the strategy alone, after the units
    on `gone` (nodes a published version the runtime has not applied whole terminates) are
    moved off them (jobs/plan/terminated.py). Pure: the plan stage and fleet planning's
    executors both call it."""
    evacuation = evacuate(state, budget, gone, job_id)
    if evacuation is None:
        return _solve(state, budget, strategy, params, time_limit_s, scaling, sections,
                      runtime_nodes)
    solved = _solve(evacuation.state, evacuation.budget, strategy, params, time_limit_s,
                    scaling, sections, runtime_nodes)
    plan, planned = evacuation.restate(solved.plan, solved.state)
    return Solved(plan, planned, solved.scaling_extra)


def _solve(state: ClusterState, budget: Budget, strategy: str, params: Mapping[str, Any],
           time_limit_s: float | None, scaling: ScalingConfig | None,
           sections: Sequence[Mapping[str, Any]], runtime_nodes: frozenset[str] | None
           ) -> Solved:
    if not state.keygroups:  # a dynamic job every unit of which has left: nothing to place
        empty = make_plan(state, {}, status=SolverStatus.OPTIMAL, lower_bound=0.0,
                          message=f"{strategy}: no unit runs this period (every unit has "
                                  "left); the assignment is empty")
        return Solved(replace(empty, strategy=strategy), state, None)
    if (kept := keep_until_fitted(state, strategy)) is not None:  # no load model yet
        return Solved(kept, state, None)
    if scaling is None:
        plan = get_strategy(strategy)(state, budget, time_limit_s=time_limit_s, **params)
        return Solved(plan, state, None)
    outcome = scaling_cycle(with_scaling_nodes(state, sections, runtime_nodes), budget,
                            strategy=strategy, policy=policy_of(scaling),
                            history=history_of(sections), time_limit_s=time_limit_s, **params)
    return Solved(outcome.plan, outcome.state, scaling_json(outcome))
