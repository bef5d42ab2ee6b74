"""Helpers shared by the strategies: budget arithmetic, load bookkeeping, and Plan assembly.

A strategy does not check its inputs, time itself or name its plan: the registry's wrapper
does all three (placement/registry.py); `make_plan` leaves `strategy` and `wall_s` to it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from placement.metrics import check_assignment, mean_load, plan_metrics
from placement.model import Budget, ClusterState, Phase, Plan, SolverStatus, moves_between
from schemas.errors import ReconfError


class StrategyInputError(ReconfError, ValueError):
    """An input the strategy cannot handle, refused before solving (what, where, fix): by the
    registry's shared pre-check, or by a strategy for what only it can check (SPRAWL's queries
    against the units and sites)."""

    def __init__(self, what: str, *, where: str, fix: str) -> None:
        super().__init__(what, where=where, fix=fix)


#: tolerance of every load, cost and bound comparison in the planners
EPS = 1e-9
#: the shortest solver time limit a planner passes on (HiGHS and CBC need a moment to start)
MIN_SOLVE_S = 0.05


def present_state(state: ClusterState) -> ClusterState:
    """The cluster as it stands: only the units that have a node (arrivals have none yet), so
    the metrics "before" a plan score what runs now."""
    if not state.arrivals:
        return state
    kgs = tuple(k for k in state.keygroups if k.id not in state.arrivals)
    return ClusterState(state.nodes, kgs, state.assignment,
                        state.comm.without_units(state.arrivals))


def is_frozen(budget: Budget) -> bool:
    """A zero budget (count or cost) means "no migration this round", even for mc_k = 0."""
    return budget.max_migrations == 0 or budget.max_migration_cost == 0


def fits(budget: Budget, count: int, cost: float) -> bool:
    """True if `count` migrations costing `cost` in total stay within the budget."""
    if is_frozen(budget) and count > 0:
        return False
    if budget.max_migrations is not None and count > budget.max_migrations:
        return False
    cap = budget.max_migration_cost
    return cap is None or cost <= cap + EPS


@dataclass
class Loads:
    """Mutable per-node bookkeeping for the heuristics: raw load, capacity, set membership."""

    raw: dict[str, float]
    cap: dict[str, float]
    in_b: dict[str, bool]
    mean: float

    @classmethod
    def of(cls, state: ClusterState, assignment: Mapping[str, str]) -> Loads:
        raw = {n.id: 0.0 for n in state.nodes}
        for kg in state.keygroups:
            raw[assignment[kg.id]] += kg.load
        return cls(
            raw=raw,
            cap={n.id: n.capacity for n in state.nodes},
            in_b={n.id: n.marked_for_removal for n in state.nodes},
            mean=mean_load(state),
        )

    def util(self, node: str) -> float:
        return self.raw[node] / self.cap[node]

    def move(self, load: float, src: str, dst: str) -> None:
        self.raw[src] -= load
        self.raw[dst] += load

    def d(self) -> float:
        """The MILP's d: |dev| over A, upper deviation over B."""
        worst = 0.0
        for node, raw in self.raw.items():
            dev = raw / self.cap[node] - self.mean
            worst = max(worst, dev if self.in_b[node] else abs(dev))
        return worst

    def sq(self) -> float:
        """Σ dev² over A plus Σ max(dev, 0)² over B: a tie-breaker that rewards smoothing."""
        total = 0.0
        for node, raw in self.raw.items():
            dev = raw / self.cap[node] - self.mean
            total += max(dev, 0.0) ** 2 if self.in_b[node] else dev * dev
        return total


def make_plan(
    state: ClusterState,
    assignment: Mapping[str, str],
    *,
    status: SolverStatus,
    lower_bound: float | None,
    message: str = "",
    phases: tuple[Phase, ...] = (),
) -> Plan:
    """Assemble a Plan: moves against the current allocation and metrics before and after.

    The plan's `strategy` ("") and `wall_s` (0) are left to the registry's wrapper, which
    names the plan after the registered strategy and times the whole call."""
    new = dict(assignment)
    check_assignment(state, new)
    if lower_bound is not None and not math.isfinite(lower_bound):
        lower_bound = None
    return Plan(
        strategy="",
        assignment=new,
        moves=moves_between(state, new),
        before=plan_metrics(present_state(state), state.assignment),
        after=plan_metrics(state, new),
        status=status,
        lower_bound=lower_bound,
        wall_s=0.0,
        message=message,
        phases=phases,
    )


def relaxed_five(d: float, mean: float, bound: float) -> str:
    """The note of a plan whose d breaks the MILP's constraint (5) (mean − d ≥ 0; §4.3.1),
    '' when it holds: the MILP and ALBIC, which balances with it, say so alike."""
    if d <= mean + 1e-9 * max(1.0, mean):
        return ""
    why = (f"no plan within the budget has d <= mean (lower bound {bound:.6g} > mean "
           f"{mean:.6g})" if bound > mean + 1e-9 else
           f"no plan found with d <= mean = {mean:.6g}")
    return f"constraint (5) relaxed: {why}; d minimised without it (d = {d:.6g})"
