"""What makes a plan reproducible, recorded on the plan (`Plan.determinism`).

A plan is a binding preview only if the same inputs, budget, parameters and time limit give
the same plan. Every strategy is deterministic in its inputs (seeded generators, canonical
order: placement/canonical.py) except where a wall clock stops a step early: a MILP solve cut
by HiGHS's `time_limit`, or a search loop stopped by its deadline; where it stops then depends
on the machine's load. HiGHS offers no deterministic work limit (its options list `time_limit`,
`mip_max_nodes`, `mip_max_leaves`, `simplex_iteration_limit`, `random_seed`); so the
deterministic budget here is a node budget (`StrategyParams.node_limit` → `mip_max_nodes`)
with a fixed `random_seed` (the params' seed), and every clock cut is recorded.

The registry opens a `Watch` around each strategy call (`watching`); the solver bridge and
the search loops report clock cuts to it (`clock_cut`) and read the node budget
(`solver_budget`). The registry then writes the plan's record: "deterministic: …" or
"clock-limited: …, a rerun may differ".
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["Watch", "clock_cut", "describe", "solver_budget", "watching"]


@dataclass
class Watch:
    """One strategy call's solve budget and the steps a clock cut."""

    seed: int = 0
    node_limit: int | None = None
    cut: list[str] = field(default_factory=list)


_CURRENT: contextvars.ContextVar[Watch | None] = contextvars.ContextVar("reconf_watch",
                                                                        default=None)


@contextmanager
def watching(seed: int, node_limit: int | None) -> Iterator[Watch]:
    """Watch one strategy call (nested calls, ALBIC's inner MILP, report to the outer one)."""
    outer = _CURRENT.get()
    if outer is not None:
        yield outer
        return
    watch = Watch(seed, node_limit)
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


def solver_budget() -> tuple[int, int | None]:
    """(HiGHS random_seed, mip_max_nodes) of the current strategy call; (0, None) outside."""
    watch = _CURRENT.get()
    return (0, None) if watch is None else (watch.seed, watch.node_limit)


def describe(watch: Watch) -> str:
    """The plan's record of what made it deterministic, or what did not."""
    nodes = (f"HiGHS node budget {watch.node_limit} (mip_max_nodes)" if watch.node_limit
             else "no node budget")
    if watch.cut:
        return (f"clock-limited: the time limit stopped {', '.join(watch.cut)}, so a rerun may "
                f"differ (seed {watch.seed}, {nodes}); set node_limit in strategy_params or "
                "raise solver_time_limit_s")
    return (f"deterministic: seed {watch.seed}, {nodes}, canonical input order, no clock limit "
            "reached; the same inputs, budget and parameters give this plan")
