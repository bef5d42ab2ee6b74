"""Shadow plans: other strategies plan the state a published plan was made on, isolated.

A shadow plan is a dry run of a registered strategy on the same `ClusterState`, with the same
migration budget and solver time limit as the plan in force (docs/algorithms.md, "What-if"). It
must never fail or stall the cycle, so each one runs in a worker subprocess (`python -m
jobs.shadow`) that the parent kills at a hard cap: a strategy's own time limit cannot stop a
solver stuck in C code, a leaked thread or a run-away heuristic, and a crash (a segfault in a
solver, an OOM kill) takes down only the worker. One worker runs the shadows one after the other
(the import of the planner is paid once); after a kill the next shadow gets a new worker.

The outcome of every shadow is recorded, whatever happens: `planned`, `failed` (the strategy
raised, or its worker died), `timed_out` (killed at its cap) or `skipped` (the state lacks a
facet the strategy needs, or the period's shadow time budget was used up).

Fault injection (as jobs/faults.py for the stages): `RECONF_SHADOW_FAULT="greedy:raise,flux:hang"`
makes the worker raise in, or hang instead of, the named strategies, so a test can check that a
failing or slow shadow is recorded as such and the cycle still succeeds.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from placement.model import Budget, ClusterState, Plan
from schemas.config import PROJECT_ROOT, JobConfig
from schemas.strategies import STRATEGIES

__all__ = ["SHADOW_FAULT_ENV", "STATUSES", "ShadowOutcome", "ShadowTask", "choose_shadows",
           "hard_cap", "plan_one", "run_shadows"]

SHADOW_FAULT_ENV = "RECONF_SHADOW_FAULT"
STATUSES = ("planned", "failed", "timed_out", "skipped")
#: a shadow may run this much past its solver time limit (model building, the worker's start)
GRACE_S, GRACE_FRACTION = 5.0, 0.5


@dataclass(frozen=True)
class ShadowTask:
    """One shadow plan to make: the strategy, its params and the problem of the plan in force."""

    strategy: str
    params: Mapping[str, Any]
    state: ClusterState
    budget: Budget
    time_limit_s: float | None


@dataclass(frozen=True)
class ShadowOutcome:
    """What became of one shadow: its plan when `status` is "planned", else why not."""

    strategy: str
    status: str
    plan: Plan | None
    wall_s: float
    message: str = ""


def choose_shadows(job: JobConfig, state: ClusterState, in_force: str
                   ) -> tuple[list[str], dict[str, str]]:
    """The shadow strategies of a period, and those left out with the reason (facets missing).

    Default (`shadow_strategies` unset): every registered strategy, in the table's order, whose
    facets `state.facets` provides, except the one in force (its plan is the comparison's first
    row already). A named strategy whose facets are missing is left out with the reason.
    """
    if job.shadow_time_budget_s <= 0:
        return [], {}
    named = job.shadow_strategies is not None
    wanted = job.shadow_strategies if named else tuple(STRATEGIES)
    chosen: list[str] = []
    left_out: dict[str, str] = {}
    for name in wanted or ():
        if name == in_force or name not in STRATEGIES:
            continue
        missing = sorted(set(STRATEGIES[name].facets) - state.facets)
        if not missing:
            chosen.append(name)
        elif named:
            left_out[name] = f"the period's statistics lack the facet(s) {', '.join(missing)}"
    return chosen, left_out


def hard_cap(time_limit_s: float | None, remaining_s: float) -> float:
    """The wall time a shadow may take: its time limit plus grace, never past the budget left."""
    own = (remaining_s if time_limit_s is None
           else time_limit_s + max(GRACE_S, GRACE_FRACTION * time_limit_s))
    return max(0.0, min(own, remaining_s))


def _fault(strategy: str) -> str | None:
    for item in os.environ.get(SHADOW_FAULT_ENV, "").split(","):
        name, _, kind = item.strip().partition(":")
        if name == strategy:
            return kind or "raise"
    return None


def plan_one(task: ShadowTask) -> ShadowOutcome:
    """Plan one shadow in this process (a worker, an executor, or a test by hand); never raises."""
    from placement.registry import get_strategy

    t0 = time.perf_counter()
    try:
        fault = _fault(task.strategy)
        if fault == "hang":
            while True:
                time.sleep(60)
        if fault is not None:
            raise RuntimeError(f"fault injected by {SHADOW_FAULT_ENV}")
        plan = get_strategy(task.strategy)(task.state, task.budget,
                                           time_limit_s=task.time_limit_s, **task.params)
        return ShadowOutcome(task.strategy, "planned", plan, time.perf_counter() - t0)
    except Exception as exc:  # a shadow's failure is its outcome, never the cycle's
        last = traceback.extract_tb(exc.__traceback__)[-1:]
        at = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
        return ShadowOutcome(task.strategy, "failed", None, time.perf_counter() - t0,
                             f"{type(exc).__name__}: {exc}{at}"[:2000])


class _Worker:
    """A `python -m jobs.shadow` subprocess: pickled tasks in on stdin, outcomes out on stdout."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p)}
        self.proc = subprocess.Popen([sys.executable, "-m", "jobs.shadow"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, start_new_session=True)

    def run(self, task: ShadowTask, cap_s: float) -> ShadowOutcome | None:
        """The outcome, or None when the cap passed first (the worker is then killed)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        t0 = time.perf_counter()
        try:
            pickle.dump(task, self.proc.stdin)
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], cap_s)
            if not ready:
                self.stop()
                return None
            outcome: ShadowOutcome = pickle.load(self.proc.stdout)
            return outcome
        except (EOFError, BrokenPipeError, pickle.UnpicklingError):
            code = self.proc.wait()
            return ShadowOutcome(task.strategy, "failed", None, time.perf_counter() - t0,
                                 f"the shadow worker died (exit code {code})")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, *, kill: bool = True) -> None:
        """End this worker: kill it (at a cap), or close its input so that it exits."""
        if not kill and self.proc.stdin is not None:
            self.proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()


def run_shadows(tasks: Sequence[ShadowTask], budget_s: float) -> list[ShadowOutcome]:
    """Run `tasks` one after the other in worker subprocesses, within `budget_s` in all.

    Each shadow's cap is its solver time limit plus grace, cut to the budget left; a shadow
    still running at its cap is killed (`timed_out`), and once the budget is used up the rest
    are `skipped`. Always returns one outcome per task, in order.
    """
    started = time.perf_counter()
    outcomes: list[ShadowOutcome] = []
    worker: _Worker | None = None
    try:
        for task in tasks:
            remaining = budget_s - (time.perf_counter() - started)
            if remaining <= 0:
                outcomes.append(ShadowOutcome(
                    task.strategy, "skipped", None, 0.0,
                    f"the period's shadow time budget ({budget_s:g} s) was used up"))
                continue
            cap = hard_cap(task.time_limit_s, remaining)
            worker = worker if worker is not None and worker.alive() else _Worker()
            t0 = time.perf_counter()
            outcome = worker.run(task, cap)
            if outcome is None:
                why = ("its time limit plus grace" if cap < remaining
                       else f"the period's shadow time budget ({budget_s:g} s)")
                outcome = ShadowOutcome(task.strategy, "timed_out", None,
                                        time.perf_counter() - t0,
                                        f"stopped after {cap:.1f} s ({why})")
            outcomes.append(outcome)
    finally:
        if worker is not None:
            worker.stop(kill=False)
    return outcomes


def _serve(tasks_in: IO[bytes], outcomes_out: IO[bytes]) -> None:
    while True:
        try:
            task = pickle.load(tasks_in)
        except EOFError:
            return
        pickle.dump(plan_one(task), outcomes_out)
        outcomes_out.flush()


if __name__ == "__main__":
    # The protocol owns the real stdout; whatever a solver prints goes to stderr (the task log).
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    from jobs import shadow  # pickle names the module's classes, not __main__'s

    shadow._serve(sys.stdin.buffer, protocol)
