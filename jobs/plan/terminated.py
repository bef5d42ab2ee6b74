"""Units left on a node that a published version terminated: moved off before the strategy runs.

A published version that terminates a node (a healing's dead node, a scale-in) is a promise to
the runtime: every later version lives without that node. The runtime keeps that promise on its
side: a version it jumps to is checked against the nodes every version in between leaves
(runtime/client.py `nodes_after_skipped`), so a version that places a unit on such a node is
refused. When the runtime stopped (or failed) a terminating version before its node was empty
(`reconf stop` between waves), the next plan starts from the partial assignment, which still
has units there; planned like any other period, it could leave them there and every later
version would be refused — a wedged job.

So the plan of such a period first moves every unit off the terminated nodes T, as healing
moves a dead node's units (placement/healing.py, step 1: largest load first, to the least
utilised allowed node), counts those moves against the period's budget, and lets the strategy
plan the rest with the budget left on the cluster without T (an empty node of T is left out
too: the strategy must not move a unit onto it). The plan is then stated against
the real starting point, with T marked for removal (set B), so its moves, its metrics and the
publish stage's budget check cover the evacuation too. More units on T than the budget allows is
a refusal that says so: a partial evacuation would publish a version the runtime refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from jobs.errors import StageError
from placement.common import present_state
from placement.healing import HealingRefused, HealingRequest, heal
from placement.metrics import plan_metrics
from placement.model import Budget, ClusterState, Plan, moves_between
from schemas.manifest import ManifestError, read_manifest

__all__ = ["Evacuation", "evacuate", "terminated_after"]


def terminated_after(published_root: Path, job_id: str, running: int | None,
                     newest: int | None) -> frozenset[str]:
    """The nodes the versions after `running` (None: the initial allocation) up to `newest`
    terminate: the ones the runtime drops on its way to the next version."""
    if newest is None or (running is not None and running >= newest):
        return frozenset()
    out: set[str] = set()
    for version in range((running or 0) + 1, newest + 1):
        try:
            scaling = read_manifest(published_root, job_id, version).scaling
        except ManifestError as exc:
            raise StageError(
                f"v{version} lies between the version the runtime runs "
                f"(v{running or 0}) and the newest (v{newest}), and cannot be read: {exc}",
                where=str(published_root / job_id),
                fix=f"republish v{version} from the assignments table, then plan again (the "
                    "runtime refuses every version after an unreadable one as well)",
            ) from exc
        out = (out - set(scaling.nodes_to_add)) | set(scaling.nodes_to_terminate)
    return frozenset(out)


@dataclass(frozen=True)
class Evacuation:
    """The cluster the strategy plans on once the units on T are moved off: `state` (without T,
    the evacuated assignment), `budget` (what the evacuation left) and what `restate` needs."""

    state: ClusterState
    budget: Budget
    start: ClusterState  # the real starting point, T included
    gone: frozenset[str]
    stranded: int

    def restate(self, plan: Plan, solved: ClusterState) -> tuple[Plan, ClusterState]:
        """`plan` (made on `state`, for `solved`) against the real starting point, and the state
        it is for: `solved` with T back, marked for removal."""
        base = replace(solved, nodes=tuple(sorted(
            (*solved.nodes, *(replace(n, marked_for_removal=True)
                              for n in self.start.nodes if n.id in self.gone)),
            key=lambda n: n.id)), assignment=dict(self.start.assignment))
        note = (f"{self.stranded} unit(s) moved off {', '.join(sorted(self.gone))}, terminated "
                "by a published version the runtime has not applied whole (a stopped or failed "
                "schedule), before the rest was planned with the budget left"
                ) if self.stranded else ""
        return replace(plan, moves=moves_between(base, plan.assignment),
                       before=plan_metrics(present_state(base), base.assignment),
                       after=plan_metrics(base, plan.assignment),
                       message="; ".join(m for m in (note, plan.message) if m)), base


def evacuate(state: ClusterState, budget: Budget, gone: frozenset[str], job_id: str
             ) -> Evacuation | None:
    """The units on `gone` moved off it (the module docstring's rule), or None when the state
    has none of those nodes (plan it as it is). The strategy never sees `gone`, even empty, so
    it places no unit there."""
    gone = gone & frozenset(state.node_ids)
    if not gone:
        return None
    stranded = sorted(u for u, n in state.assignment.items() if n in gone)
    cost = {k.id: k.migration_cost for k in state.keygroups}
    if budget.max_migrations is not None and len(stranded) > budget.max_migrations:
        raise _refused(job_id, gone, len(stranded),
                       f"the budget allows {budget.max_migrations} move(s)")
    spent = sum(cost[u] for u in stranded)
    if budget.max_migration_cost is not None and spent > budget.max_migration_cost * (1 + 1e-9):
        raise _refused(job_id, gone, len(stranded),
                       f"moving them costs {spent:.6g}, over the budget's cost "
                       f"{budget.max_migration_cost:.6g}")
    try:
        evacuated = heal(state, HealingRequest(dead=gone, over=frozenset(),
                                               budget=len(stranded))).assignment
    except HealingRefused as exc:
        raise _refused(job_id, gone, len(stranded), exc.what) from None
    left = Budget(
        max_migration_cost=None if budget.max_migration_cost is None
        else max(0.0, budget.max_migration_cost - spent),
        max_migrations=None if budget.max_migrations is None
        else budget.max_migrations - len(stranded))
    without = replace(state, nodes=tuple(n for n in state.nodes if n.id not in gone),
                      assignment=dict(evacuated))
    return Evacuation(without, left, state, gone, len(stranded))


def _refused(job_id: str, gone: frozenset[str], stranded: int, why: str) -> StageError:
    return StageError(
        f"{stranded} unit(s) still run on {', '.join(sorted(gone))}, which a published version "
        f"terminated, and cannot all be moved off: {why}",
        where=f"job {job_id!r}",
        fix="raise the job's max_migrations for one period, or `reconf rollback` to a version "
            "that keeps the node(s), then plan again",
    )
