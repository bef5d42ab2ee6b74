"""Applying the newest published version wave by wave, for a runtime that moves units itself.

The synthetic job and the replay engine share this flow: decide what to run next
(runtime/client.py `next_state`), keep the partial assignment of a version whose schedule was
stopped or failed, run the schedule's waves (runtime/execution.py `execute`), saving the
runtime's state after each, and end on the version's own state. What differs is how one wave's
units move (the engine's callback) and how the result is worded; the Kafka Streams runtime and
the query replay apply versions their own way and do not use it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from runtime.client import next_state
from runtime.execution import Execution, execute, failing_units, load_execution
from runtime.source import ApplyResult, RuntimeState
from schemas.manifest import Manifest
from schemas.schedule import ScheduledMove

__all__ = ["Describe", "Keep", "MoveWave", "apply_in_waves"]

#: the engine moves one wave: the wave's moves that do not fail, the assignment after them and
#: the nodes that run meanwhile -> (units moved, state bytes, the engine's seconds for it)
MoveWave = Callable[[tuple[ScheduledMove, ...], Mapping[str, str], tuple[str, ...]],
                    tuple[tuple[str, ...], float, float]]
#: the runtime adopts and persists a state (after each wave, and the version's own at the end)
Keep = Callable[[RuntimeState], None]
#: once the waves ran: (units moved, the reason an applied result gives)
Describe = Callable[[Manifest, Execution], tuple[tuple[str, ...], str]]


def _ignore(_: Execution) -> None:
    return None


def apply_in_waves(published_root: Path, state_root: Path, current: RuntimeState,
                   units: Iterable[str], move: MoveWave, keep: Keep, describe: Describe, *,
                   require_schedule: bool,
                   recorded: Callable[[Execution], None] = _ignore) -> ApplyResult:
    """Apply the newest version to `current` (a runtime running `units`), one wave at a time.

    `recorded` sees the execution record the result stands on: the stopped or failed one that
    is kept, or the one the waves just wrote. A stop request or a unit that cannot move ends the
    schedule between waves with the partial assignment (`partial`); otherwise the version's state
    is kept after `move` is asked for no moves on its nodes (terminated nodes leave)."""
    outcome = next_state(published_root, current, units, require_schedule=require_schedule)
    if isinstance(outcome, ApplyResult):
        return outcome
    manifest, new = outcome
    last = load_execution(state_root, current.job_id)
    if last is not None and last.version == manifest.version and last.status in (
            "stopped", "failed"):
        recorded(last)
        return ApplyResult("unchanged", current.version,
                           f"keeps the partial assignment of {last.summary()}; the next "
                           "published version starts from it")
    during = tuple(sorted(set(current.nodes) | set(new.nodes)))
    fail = failing_units()
    running = current

    def wave(moves: tuple[ScheduledMove, ...]) -> tuple[tuple[str, ...], float, float,
                                                        tuple[str, ...]]:
        nonlocal running
        failed = tuple(m.keygroup for m in moves if m.keygroup in fail)
        assignment = dict(running.assignment)
        for m in moves:
            if m.keygroup not in failed:
                assignment[m.keygroup] = m.dst
        moved, state_bytes, seconds = move(
            tuple(m for m in moves if m.keygroup not in failed), assignment, during)
        running = RuntimeState(current.job_id, running.version, assignment, during)
        keep(running)
        return moved, state_bytes, seconds, failed

    execution = execute(manifest, current.assignment, wave, state_root, current.job_id)
    recorded(execution)
    moved, reason = describe(manifest, execution)
    if execution.status != "done":
        return ApplyResult("partial", running.version, execution.summary(), moved)
    move((), new.assignment, new.nodes)
    keep(new)
    return ApplyResult("applied", new.version, reason, moved)
