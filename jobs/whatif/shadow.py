"""Shadow plans: other strategies plan the state a published plan was made on, isolated.

A shadow plan is a dry run of a registered strategy on the same `ClusterState`, with the same
migration budget and solver time limit as the plan in force (docs/algorithms.md, "What-if"). It
must never fail or stall the cycle, so each one runs in a worker subprocess (`python -m
jobs.whatif.shadow`) that the parent kills at a hard cap: a strategy's own time limit cannot stop a
solver stuck in C code, a leaked thread or a run-away heuristic, and a crash (a segfault in a
solver, an OOM kill) takes down only the worker. Up to `worker_count` workers plan side by side,
each taking the next shadow as soon as it is free (the import of the planner is paid once per
worker); after a kill the next shadow gets a new worker. A worker dies with its parent.

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
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import IO, Any

from placement.model import Budget, ClusterState, Plan
from schemas.config import PROJECT_ROOT, JobConfig
from schemas.constraints import Constraints
from schemas.strategies import STRATEGIES

__all__ = ["MAX_WORKERS", "SHADOW_FAULT_ENV", "WORKERS_ENV", "ShadowOutcome", "ShadowStatus",
           "ShadowTask", "choose_shadows", "plan_one", "run_shadows", "shadow_cap",
           "worker_count"]

SHADOW_FAULT_ENV = "RECONF_SHADOW_FAULT"
WORKERS_ENV = "RECONF_SHADOW_WORKERS"
MAX_WORKERS = 4  # the default's ceiling (`worker_count`)
#: a shadow may run this much past its solver time limit (model building, the worker's start)
GRACE_S, GRACE_FRACTION = 5.0, 0.5
MIN_LIMIT_S = 0.5  # the least solver time limit a shrunk per-shadow budget hands a strategy


class ShadowStatus(StrEnum):
    """What became of one shadow (its comparison row's `status`; the in-force row's is its
    plan's status, schemas/attempts.py `PlanStatus`, whose `planned` reads the same)."""

    PLANNED = "planned"
    FAILED = "failed"
    TIMED_OUT = "timed_out"  # stopped at its cap (`shadow_cap`)
    SKIPPED = "skipped"  # not started: the period's shadow time budget was used up


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
    """What became of one shadow: its plan when `status` is PLANNED, else why not."""

    strategy: str
    status: ShadowStatus
    plan: Plan | None
    wall_s: float
    message: str = ""
    #: the wall time it was given (its cap: `shadow_cap`) and the solver time limit it ran
    #: with; None where not set (a shadow not started, the cluster path)
    budget_s: float | None = None
    time_limit_s: float | None = None


def choose_shadows(job: JobConfig, state: ClusterState, in_force: str
                   ) -> tuple[list[str], dict[str, str]]:
    """The shadow strategies of a period, and those left out with the reason (facets missing).

    Default (`shadow_strategies` unset): every registered strategy, in the table's order, whose
    facets `state.facets` provides, except the one in force (its plan is the comparison's first
    row already). A named strategy whose facets are missing is left out with the reason. A
    strategy that cannot hold the job's topology constraints (schemas/strategies.py
    `constraints`) shadow-plans without them (`shadow_state`), and its row names the
    constraints its plan would break (jobs/whatif/stage.py).
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


def shadow_state(state: ClusterState, strategy: str) -> ClusterState:
    """The state a shadow plans: without the topology constraints when the strategy cannot
    hold them (the registry would refuse it), so the what-if shows what it would do and what
    it would break."""
    held = STRATEGIES[strategy].constraints
    if all(k in held for k in state.constraints.kinds):
        return state
    return replace(state, constraints=Constraints())


def shadow_cap(time_limit_s: float | None, remaining_s: float, slots: int, pending: int
               ) -> tuple[float, float | None]:
    """A shadow's per-shadow budget (its cap, wall seconds) and the solver time limit it runs
    with, at its start.

    The cap is its fair share of the worker time left, remaining × slots / pending (the shadows
    not yet finished, itself included), never past the budget left: the what-if budget is what
    the operator gave the shadows, so a shadow whose model building alone outlasts its time
    limit plus grace (at 32,768 units × 1,000 nodes) still plans within its share, every
    shadow of the period starts within the budget however many there are, and one that
    finishes early leaves its time to those after it. The solver time limit is the job's, or,
    when the job's limit plus grace (max(GRACE_S, GRACE_FRACTION · limit)) does not fit the
    share, shrunk so that it does (`share` = limit + grace): a strategy that keeps its limit
    plans rather than being stopped; one that does not (or hangs) is stopped at the cap, and
    its row says so."""
    share = max(0.0, remaining_s) * max(1, slots) / max(1, pending)
    cap = max(0.0, min(share, remaining_s))
    if time_limit_s is None or time_limit_s + max(GRACE_S, GRACE_FRACTION * time_limit_s) <= cap:
        return cap, time_limit_s
    fitted = (cap / (1 + GRACE_FRACTION) if cap * GRACE_FRACTION / (1 + GRACE_FRACTION)
              >= GRACE_S else cap - GRACE_S)
    return cap, min(time_limit_s, max(MIN_LIMIT_S, fitted))


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
        return ShadowOutcome(task.strategy, ShadowStatus.PLANNED, plan, time.perf_counter() - t0)
    except Exception as exc:  # a shadow's failure is its outcome, never the cycle's
        last = traceback.extract_tb(exc.__traceback__)[-1:]
        at = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
        return ShadowOutcome(task.strategy, ShadowStatus.FAILED, None, time.perf_counter() - t0,
                             f"{type(exc).__name__}: {exc}{at}"[:2000])


def worker_count(tasks: int, workers: int | None = None) -> int:
    """How many worker subprocesses plan `tasks` shadows side by side.

    `workers`, else `RECONF_SHADOW_WORKERS`, else min(os.cpu_count(), 4): the machine's cores,
    but at most 4, as the Airflow worker runs other tasks too and each worker holds its own
    solver (more shadows at once belong on a cluster, jobs/whatif/shadow_spark.py). Never more than
    the shadows, never fewer than one.
    """
    if workers is None:
        raw = os.environ.get(WORKERS_ENV, "").strip()
        if raw:
            try:
                workers = int(raw)
            except ValueError:
                workers = 0
            if workers < 1:
                raise ValueError(f"{WORKERS_ENV}={raw!r} is not a number of worker processes: "
                                 f"set it to a whole number >= 1, or unset it for "
                                 f"min(cores, {MAX_WORKERS})")
        else:
            workers = min(os.cpu_count() or 1, MAX_WORKERS)
    return max(1, min(workers, tasks))


_PARENT_ENV = "RECONF_SHADOW_PARENT"  # the starting pid, so a worker whose parent died while it
# imported (before it could ask the kernel to follow its parent) still sees it and exits


class _Worker:
    """A `python -m jobs.whatif.shadow` subprocess: pickled tasks in on stdin, outcomes out on stdout."""

    def __init__(self) -> None:
        env = {**os.environ, _PARENT_ENV: str(os.getpid()), "PYTHONPATH": os.pathsep.join(
            p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p)}
        self.proc = subprocess.Popen([sys.executable, "-m", "jobs.whatif.shadow"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, start_new_session=True)
        self._writer: threading.Thread | None = None

    @property
    def out(self) -> IO[bytes]:
        assert self.proc.stdout is not None
        return self.proc.stdout

    def send(self, blob: bytes) -> None:
        """Hand the worker a pickled task, from a thread: a state larger than the pipe's buffer
        must not hold the parent (and the other shadows' caps) until this worker reads it."""
        self._writer = threading.Thread(target=self._write, args=(blob,), daemon=True)
        self._writer.start()

    def _write(self, blob: bytes) -> None:
        with contextlib.suppress(OSError, ValueError):  # the worker died or was killed
            assert self.proc.stdin is not None
            self.proc.stdin.write(blob)
            self.proc.stdin.flush()

    def receive(self, strategy: str, t0: float) -> ShadowOutcome:
        """The outcome the worker wrote (its stdout is readable), or `failed` if it died."""
        try:
            outcome: ShadowOutcome = pickle.load(self.out)
            return outcome
        except (EOFError, pickle.UnpicklingError):
            code = self.proc.wait()
            return ShadowOutcome(strategy, ShadowStatus.FAILED, None, time.perf_counter() - t0,
                                 f"the shadow worker died (exit code {code})")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close_input(self) -> None:
        """The end of the tasks: an idle worker exits on it."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def stop(self, *, kill: bool = True) -> None:
        """End this worker: kill it (at a cap), or close its input so that it exits."""
        if not kill:
            self.close_input()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self._writer is not None:
            self._writer.join(timeout=5)  # its write fails once the worker is gone
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                with contextlib.suppress(OSError):
                    stream.close()


@dataclass(frozen=True)
class _Running:
    index: int
    worker: _Worker
    t0: float
    cap: float
    remaining: float
    time_limit_s: float | None

    @property
    def deadline(self) -> float:
        return self.t0 + self.cap


def _timed_out(task: ShadowTask, run: _Running, budget_s: float) -> ShadowOutcome:
    why = (f"its per-shadow budget: its share of the period's shadow time budget of "
           f"{budget_s:g} s" if run.cap < run.remaining
           else f"the period's shadow time budget ({budget_s:g} s)")
    size = f"{len(task.state.keygroups):,} units x {len(task.state.nodes):,} nodes"
    return ShadowOutcome(task.strategy, ShadowStatus.TIMED_OUT, None, time.perf_counter() - run.t0,
                         f"stopped after {run.cap:.1f} s ({why}); it does not plan {size} in "
                         "that time: raise shadow_time_budget_s or leave it out of "
                         "shadow_strategies", run.cap, run.time_limit_s)


def run_shadows(tasks: Sequence[ShadowTask], budget_s: float, *,
                workers: int | None = None) -> list[ShadowOutcome]:
    """Run `tasks` in up to `workers` subprocesses side by side (`worker_count`), within
    `budget_s` of wall time in all.

    Each shadow's cap is its share of the budget left when it starts (`shadow_cap`: its
    per-shadow budget, on its outcome), its solver time limit the job's or shrunk to fit that
    share; a shadow still running at its cap is killed (`timed_out`) and the next one gets a
    new worker; a shadow not started before the budget is used up is `skipped`. A worker takes
    the next task in order as soon as it is free. Always returns one outcome per task, in the
    tasks' order; every worker has exited when it returns or raises.
    """
    started = time.perf_counter()
    slots = worker_count(len(tasks), workers)
    outcomes: list[ShadowOutcome | None] = [None] * len(tasks)
    pending = list(range(len(tasks)))[::-1]  # popped from the end: the tasks' order
    pool: list[_Worker] = []  # every worker started, whatever became of it
    idle: list[_Worker] = []
    running: list[_Running] = []
    try:
        while pending or running:
            while pending and len(running) < slots:
                i = pending.pop()
                remaining = budget_s - (time.perf_counter() - started)
                if remaining <= 0:
                    outcomes[i] = ShadowOutcome(
                        tasks[i].strategy, ShadowStatus.SKIPPED, None, 0.0,
                        f"the period's shadow time budget ({budget_s:g} s) was used up")
                    continue
                unfinished = len(pending) + 1 + len(running)
                cap, limit = shadow_cap(tasks[i].time_limit_s, remaining, slots, unfinished)
                try:
                    blob = pickle.dumps(replace(tasks[i], time_limit_s=limit))
                except Exception as exc:  # e.g. a param that cannot cross to a worker
                    outcomes[i] = ShadowOutcome(tasks[i].strategy, ShadowStatus.FAILED, None, 0.0,
                                                f"{type(exc).__name__}: {exc}"[:2000])
                    continue
                if not idle:
                    pool.append(_Worker())
                worker = idle.pop() if idle else pool[-1]
                running.append(_Running(i, worker, time.perf_counter(), cap, remaining, limit))
                worker.send(blob)
            if not running:
                continue
            wait = min(r.deadline for r in running) - time.perf_counter()
            ready, _, _ = select.select([r.worker.out for r in running], [], [], max(0.0, wait))
            for run in list(running):
                if run.worker.out in ready:
                    outcomes[run.index] = replace(
                        run.worker.receive(tasks[run.index].strategy, run.t0),
                        budget_s=run.cap, time_limit_s=run.time_limit_s)
                elif time.perf_counter() >= run.deadline:
                    run.worker.stop()
                    outcomes[run.index] = _timed_out(tasks[run.index], run, budget_s)
                else:
                    continue
                running.remove(run)
                if run.worker.alive():
                    idle.append(run.worker)
    finally:  # idle workers exit at the end of their input, all at once; the rest (an
        for worker in idle:  # exception, an interrupt) are killed: none outlives this call
            worker.close_input()
        for worker in pool:
            worker.stop(kill=worker not in idle)
    assert all(o is not None for o in outcomes)
    return [o for o in outcomes if o is not None]


def _serve(tasks_in: IO[bytes], outcomes_out: IO[bytes]) -> None:
    while True:
        try:
            task = pickle.load(tasks_in)
        except EOFError:
            return
        pickle.dump(plan_one(task), outcomes_out)
        outcomes_out.flush()


def _die_with_parent() -> None:
    """Linux: the kernel kills this worker when its parent dies (even by SIGKILL, where the
    parent's clean-up cannot run), so a hung solver never outlives the task that started it."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError, ValueError):
        parent = int(os.environ.get(_PARENT_ENV) or os.getppid())  # the pid that started us
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl (even during our imports)
            os._exit(1)


if __name__ == "__main__":
    _die_with_parent()
    # The protocol owns the real stdout; whatever a solver prints goes to stderr (the task log).
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    from jobs.whatif import shadow  # pickle names the module's classes, not __main__'s

    shadow._serve(sys.stdin.buffer, protocol)
