"""What makes a plan reproducible, recorded on the plan (`Plan.determinism`).

A plan is a binding preview only if the same inputs, budget, parameters and time limit give
the same plan. Every strategy is deterministic in its inputs (seeded generators, canonical
order: placement/canonical.py) except where a wall clock stops a step early: a MILP solve cut
by HiGHS's `time_limit`, or a search loop stopped by its deadline; where it stops then depends
on the machine's load. HiGHS 1.15 has no deterministic *time* (its maintainers plan "synthetic
work units"); its deterministic limits are counts: `mip_max_nodes`, `mip_max_leaves`,
`mip_max_improving_sols`, and `simplex_iteration_limit`, which does not reach the LPs inside
the MIP solver. None of them bounds the root node (presolve, the cut loop, the root
heuristics), where our models spend most of their time: a 4 000-binary model ran 30 s at the
root without reaching node 1. What does bound it: HiGHS calls its MIP interrupt callback at
fixed points of its search (each root cut round, each heuristic, each node), so the number of
those calls is a deterministic count of work, the same on a busy machine as on a quiet one
(measured: identical plans with a busy loop beside, tests/placement/test_determinism.py).

The work budget is therefore two counts per HiGHS solve: `work_limit` checkpoints (the
interrupt callback interrupts at the count; `StrategyParams.work_limit`, default
`DEFAULT_WORK_LIMIT`) and `node_limit` nodes (`mip_max_nodes`, default `DEFAULT_NODE_LIMIT`),
with a fixed `random_seed` (the params' seed); the MILP's own loops count steps, not seconds
(placement/milp/). The time limit stays as a safety net: a step it cuts is recorded, and the
plan says so loudly.

The registry opens a `Watch` around each strategy call (`watching`); the solver bridge and
the search loops report clock cuts to it (`clock_cut`), read the node budget (`solver_budget`)
and ask whether they run on a work budget (`work_budgeted`: then a loop's clock is only the
safety net, never the budget). The registry then writes the plan's record: "deterministic: …"
or "clock-limited: …, a rerun may differ" (the summary line and audit then warn in capitals).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

# the budget is configuration: it lives with the parameters, which the config loader reads
# without this module (placement/params.py)
from placement.params import DEFAULT_NODE_LIMIT, DEFAULT_WORK_LIMIT, SolverBudget

__all__ = [
    "CLOCK_LIMITED",
    "DEFAULT_NODE_LIMIT",
    "DEFAULT_WORK_LIMIT",
    "SolverBudget",
    "Watch",
    "alarm",
    "clock_cut",
    "describe",
    "solver_budget",
    "watching",
    "work_budgeted",
]

#: the first word of a plan's record when a clock cut a step (summary lines and audit match it)
CLOCK_LIMITED = "clock-limited"


@dataclass
class Watch:
    """One strategy call's solve budget and the steps a clock cut."""

    budget: SolverBudget = field(default_factory=SolverBudget)
    cut: list[str] = field(default_factory=list)


_CURRENT: contextvars.ContextVar[Watch | None] = contextvars.ContextVar("reconf_watch",
                                                                        default=None)


@contextmanager
def watching(budget: SolverBudget) -> Iterator[Watch]:
    """Watch one strategy call (nested calls, ALBIC's inner MILP, report to the outer one)."""
    outer = _CURRENT.get()
    if outer is not None:
        yield outer
        return
    watch = Watch(budget)
    token = _CURRENT.set(watch)
    try:
        yield watch
    finally:
        _CURRENT.reset(token)


def clock_cut(where: str) -> None:
    """Record that the wall clock stopped `where` early (no-op outside a strategy call)."""
    watch = _CURRENT.get()
    if watch is not None and where not in watch.cut:
        watch.cut.append(where)


def solver_budget() -> SolverBudget:
    """The HiGHS budget of the current strategy call; outside one (a solver called directly,
    as the benchmarks do): seed 0 and the default budget."""
    watch = _CURRENT.get()
    return SolverBudget() if watch is None else watch.budget


def work_budgeted() -> bool:
    """True when the current call runs on a work budget (the default): its loops then stop on
    counts, and their clocks are only the safety net. False only for a call made with
    `node_limit=None, work_limit=None` (clock-limited on purpose: the benchmarks' comparison)."""
    return solver_budget().budgeted


def _limits(budget: SolverBudget) -> str:
    if not budget.budgeted:
        return "no work budget"
    parts = [f"{budget.work_limit} HiGHS checkpoints" if budget.work_limit else "",
             f"{budget.node_limit} nodes (mip_max_nodes)" if budget.node_limit else ""]
    return "work budget " + " and ".join(p for p in parts if p) + " per solve"


def describe(watch: Watch) -> str:
    """The plan's record of what made it deterministic, or what did not."""
    budget = watch.budget
    if watch.cut:
        fix = ("raise solver_time_limit_s (the safety net) or lower work_limit / node_limit "
               "in strategy_params" if budget.budgeted
               else "set work_limit or node_limit in strategy_params")
        return (f"{CLOCK_LIMITED}: the time limit stopped {', '.join(watch.cut)}, so a rerun "
                f"may differ (seed {budget.seed}, {_limits(budget)}); {fix}")
    return (f"deterministic: seed {budget.seed}, {_limits(budget)}, canonical input order, no "
            "clock limit reached; the same inputs, budget and parameters give this plan")


def alarm(record: str | None) -> str:
    """The warning a summary line or audit carries for a plan's record (`describe`): "" for a
    deterministic plan; for one a clock cut, in capitals, what it means for a dry run."""
    if not record or not record.startswith(CLOCK_LIMITED):
        return ""
    return ("CLOCK-LIMITED: the time limit (the safety net) cut this plan, so a dry run of it is "
            "no binding preview; " + record.split("; ")[-1])
