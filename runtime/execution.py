"""Executing a manifest's move schedule: wave by wave, with progress, stop and failure.

Any runtime (the replay engine, the Kafka Streams assignor) applies a manifest through
`execute`: it hands over one wave at a time to the runtime's `apply_wave` and, between waves,
records the progress in ``<state_root>/<job_id>/execution.json`` (written atomically) and looks
for the stop flag ``<state_root>/<job_id>/STOP`` that `reconf stop` writes.

- Waves are rebased on what runs (`waves_to_run`): a move whose unit already sits on its
  destination is skipped, and units the schedule does not move but that are not where the
  target puts them (the runtime started from another assignment than the plan: a stopped or
  failed schedule, a restart after kill -9 mid-wave) move in one last wave. So a resumed or
  replaced schedule always ends on the target and never loses a unit: every unit has exactly
  one node in every assignment the runtime saves.
- Stop: the flag is honoured before a wave starts (the current one always finishes) and consumed;
  the execution ends `stopped` and the runtime keeps the partial assignment until a newer version.
- Failure: a unit that could not move stays on its source; the execution ends `failed` after that
  wave, and the runtime keeps what it runs (the units that moved stay moved).
In both cases the period report says what runs (`Execution.summary`), and the next plan starts
from it.
- Write-ahead: before a wave is handed to the runtime, its intent (its number, its moves, the
  wall-clock instant it starts) is saved as the record's `pending` wave. A runtime killed after
  the wave moved its units (its state saved) but before the wave's progress was recorded finds
  the intent on restart and reconciles it with what runs: the pending moves whose unit sits on
  its destination are recorded as that wave (the runtime's own time of it is unknown:
  `transfer_s` null, its duration the byte rate's least), and a wall-clock runtime waits out
  what is left of its pause before the next wave. So `execution.json`, the period report and
  the per-wave MLflow metrics keep every wave, and a kill never lets a wave go faster than R.

Byte rate (`max_bytes_per_second` R in the schedule's limits): waves are paced so that no wave
moves state faster than R. A wave of B bytes lasts max(t, B / R), t being what the runtime took
to move it; the next wave starts only then. The pacing is in the runtime's clock: the replay
and the synthetic runtimes have a simulated one (the replay's is its cost model's pause time,
runtime/replay/costs.py; the synthetic's moves take no time), so their waves' durations are
computed and nothing sleeps; a runtime on wall-clock time passes `sleep` and waits out the
rest. Each wave's record keeps the runtime's own time (`transfer_s`), the paced duration
(`seconds`) and the measured rate B / seconds (`bytes_per_s`), so a rate above R would show.
"""

from __future__ import annotations

import json
import math
import os
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from schemas.manifest import Manifest, atomic_write_bytes
from schemas.schedule import ScheduledMove

__all__ = [
    "EXECUTION_FILE",
    "FAIL_MOVES_ENV",
    "STOP_FILE",
    "ApplyWave",
    "Execution",
    "PendingWave",
    "WaveRun",
    "clear_stop",
    "execute",
    "load_execution",
    "paced_seconds",
    "request_stop",
    "stop_path",
    "stop_requested",
    "waves_to_run",
]

STOP_FILE = "STOP"
EXECUTION_FILE = "execution.json"
#: Fault injection, like jobs/faults.py: units (comma-separated) whose move fails in a runtime.
FAIL_MOVES_ENV = "RECONF_FAIL_MOVES"
_FAILPOINT_ENV = "RECONF_FAILPOINT"
Status = Literal["running", "done", "stopped", "failed"]


@dataclass(frozen=True)
class WaveRun:
    """One applied wave as measured: units moved, state bytes, seconds (paced under a byte rate),
    units that failed, and the runtime's own time to move it before pacing (`transfer_s`)."""

    wave: int
    moved: tuple[str, ...]
    state_bytes: float
    seconds: float
    failed: tuple[str, ...] = ()
    transfer_s: float | None = None

    @property
    def bytes_per_s(self) -> float | None:
        """The measured state byte rate of the wave (None for a wave that took no time)."""
        return self.state_bytes / self.seconds if self.seconds > 0 else None

    def to_dict(self) -> dict[str, Any]:
        rate = self.bytes_per_s
        return {"wave": self.wave, "moved": list(self.moved), "state_bytes": self.state_bytes,
                "seconds": self.seconds, "failed": list(self.failed),
                "transfer_s": self.transfer_s,
                "bytes_per_s": None if rate is None else round(rate, 3)}


@dataclass(frozen=True)
class PendingWave:
    """A wave handed to the runtime whose progress is not recorded yet (the write-ahead intent):
    its number, its moves as handed over, and the wall-clock instant (epoch seconds) it began."""

    wave: int
    moves: tuple[ScheduledMove, ...]
    started: float

    def to_dict(self) -> dict[str, Any]:
        return {"wave": self.wave, "moves": [m.to_dict() for m in self.moves],
                "started": self.started}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PendingWave:
        return cls(int(data["wave"]), tuple(
            ScheduledMove(str(m["keygroup"]), str(m["src"]), str(m["dst"]),
                          float(m["state_bytes"])) for m in data["moves"]),
            float(data["started"]))


@dataclass(frozen=True)
class Execution:
    """The progress of applying one manifest version (`waves` = how many it has to run)."""

    job_id: str
    version: int
    waves: int
    runs: tuple[WaveRun, ...] = ()
    status: Status = "running"
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    max_bytes_per_second: float | None = None
    pending: PendingWave | None = None  # the wave being applied, recorded before it runs

    @property
    def moved(self) -> int:
        return sum(len(r.moved) for r in self.runs)

    @property
    def state_bytes(self) -> float:
        return sum(r.state_bytes for r in self.runs)

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.runs)

    def summary(self) -> str:
        """Progress as the period report and the CLI show it."""
        text = (f"v{self.version}: wave {len(self.runs)} of {self.waves}, {self.moved} unit(s) "
                f"moved, {self.state_bytes:.0f} state bytes, {self.seconds:.2f} s")
        if self.max_bytes_per_second is not None:
            rates = [r.bytes_per_s for r in self.runs if r.bytes_per_s is not None]
            text += (f", paced at most {self.max_bytes_per_second:.6g} B/s (fastest wave "
                     f"{max(rates, default=0.0):.6g} B/s)")
        if self.status == "stopped":
            text += "; stopped between waves on request: the partial assignment runs"
        elif self.status == "failed":
            failed = [u for r in self.runs for u in r.failed]
            text += (f"; failed ({len(failed)} unit(s) could not move: {', '.join(failed[:5])}): "
                     "the units that moved stay moved, the rest run where they were")
        return text

    def to_dict(self) -> dict[str, Any]:
        out = {"format": 1, "job_id": self.job_id, "version": self.version,
               "waves": self.waves, "status": self.status, "started_at": self.started_at,
               "moved": self.moved, "state_bytes": self.state_bytes,
               "seconds": round(self.seconds, 6),
               "max_bytes_per_second": self.max_bytes_per_second,
               "runs": [r.to_dict() for r in self.runs]}
        if self.pending is not None:  # only while a wave is being applied
            out["pending"] = self.pending.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Execution:
        """An execution record (older ones lack the byte rate fields: read as absent)."""
        runs = tuple(WaveRun(int(r["wave"]), tuple(r["moved"]), float(r["state_bytes"]),
                             float(r["seconds"]), tuple(r["failed"]),
                             None if r.get("transfer_s") is None else float(r["transfer_s"]))
                     for r in data["runs"])
        rate = data.get("max_bytes_per_second")
        pending = data.get("pending")
        return cls(str(data["job_id"]), int(data["version"]), int(data["waves"]), runs,
                   data["status"], str(data["started_at"]),
                   None if rate is None else float(rate),
                   None if pending is None else PendingWave.from_dict(pending))


def _dir(state_root: Path, job_id: str) -> Path:
    return Path(state_root) / job_id


def stop_path(state_root: Path, job_id: str) -> Path:
    return _dir(state_root, job_id) / STOP_FILE


def request_stop(state_root: Path, job_id: str, reason: str = "") -> Path:
    """Ask the runtime to finish its current wave and stop (what `reconf stop` does)."""
    path = stop_path(state_root, job_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"requested_at": datetime.now(UTC).isoformat(), "reason": reason}
    atomic_write_bytes(path, (json.dumps(body) + "\n").encode())
    return path


def stop_requested(state_root: Path, job_id: str) -> bool:
    return stop_path(state_root, job_id).is_file()


def clear_stop(state_root: Path, job_id: str) -> None:
    stop_path(state_root, job_id).unlink(missing_ok=True)


def load_execution(state_root: Path, job_id: str) -> Execution | None:
    """The last recorded execution, or None (none yet, or a damaged record: it is advisory)."""
    path = _dir(state_root, job_id) / EXECUTION_FILE
    try:
        return Execution.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_execution(state_root: Path, execution: Execution) -> None:
    path = _dir(state_root, execution.job_id) / EXECUTION_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, (json.dumps(execution.to_dict(), indent=1) + "\n").encode())


def waves_to_run(manifest: Manifest, running: Mapping[str, str]) -> tuple[tuple[ScheduledMove, ...], ...]:
    """The manifest's waves rebased on `running` (see the module docstring); no schedule: one
    wave of every difference (the manifest applied at once, as before schedules)."""
    target = dict(manifest.assignment)
    waves: list[tuple[ScheduledMove, ...]] = []
    scheduled: set[str] = set()
    for wave in (manifest.schedule.waves if manifest.schedule is not None else ()):
        moves = []
        for m in wave.moves:
            scheduled.add(m.keygroup)
            now = running.get(m.keygroup)
            if now is not None and now != m.dst:
                moves.append(ScheduledMove(m.keygroup, now, m.dst, m.state_bytes))
        if moves:
            waves.append(tuple(moves))
    rest = tuple(ScheduledMove(kg, running[kg], target[kg]) for kg in sorted(target)
                 if kg in running and running[kg] != target[kg] and kg not in scheduled)
    if rest:
        waves.append(rest)
    return tuple(waves)


#: what a runtime's wave application returns: (units moved, state bytes, seconds, units failed)
ApplyWave = Callable[[tuple[ScheduledMove, ...]], tuple[tuple[str, ...], float, float,
                                                        tuple[str, ...]]]


def failing_units() -> frozenset[str]:
    """Units whose move a runtime must fail (fault injection through `FAIL_MOVES_ENV`)."""
    return frozenset(u for u in os.environ.get(FAIL_MOVES_ENV, "").split(",") if u)


def _failpoint(name: str) -> None:
    """jobs/faults.py's fail point, for the runtime (which may import only `schemas`)."""
    if os.environ.get(_FAILPOINT_ENV) == name:
        os.killpg(os.getpgrp(), signal.SIGKILL)


def paced_seconds(transfer_s: float, state_bytes: float, rate: float | None) -> float:
    """A wave's duration under the byte rate: what the runtime took, at least bytes / rate (one
    float step above it, so that bytes / duration never rounds to more than the rate)."""
    if rate is None:
        return transfer_s
    return max(transfer_s, math.nextafter(state_bytes / rate, math.inf) if state_bytes else 0.0)


def _reconcile(pending: PendingWave, running: Mapping[str, str], rate: float | None
               ) -> tuple[WaveRun | None, float]:
    """The pending wave as it ended, read from what runs (its moves whose unit sits on its
    destination), and the wall-clock seconds left of its pause under the byte rate; (None, 0)
    when none of its moves landed (the wave is run again, rebased)."""
    landed = tuple(m for m in pending.moves if running.get(m.keygroup) == m.dst)
    if not landed:
        return None, 0.0
    nbytes = sum(m.state_bytes for m in landed)
    seconds = paced_seconds(0.0, nbytes, rate)
    left = max(0.0, pending.started + seconds - time.time())
    return WaveRun(pending.wave, tuple(m.keygroup for m in landed), nbytes, seconds, (),
                   None), left


def execute(manifest: Manifest, running: Mapping[str, str], apply_wave: ApplyWave,
            state_root: Path, job_id: str, sleep: Callable[[float], None] | None = None
            ) -> Execution:
    """Apply `manifest`'s waves to what runs, one at a time; the final `Execution` (saved).

    `apply_wave` moves one wave's units in the runtime and saves the runtime's state (so a kill
    after it loses nothing); this function paces the waves under the schedule's byte rate (the
    module docstring: `sleep` for a runtime on wall-clock time, None for a simulated clock),
    records each wave's intent before it and its progress after it (the module docstring,
    "Write-ahead") and honours the stop flag before each one.
    """
    rate = None if manifest.schedule is None else manifest.schedule.limits.max_bytes_per_second
    previous = load_execution(state_root, job_id)
    runs: tuple[WaveRun, ...] = ()
    started = datetime.now(UTC).isoformat()
    pause_left = 0.0
    if previous is not None and previous.version == manifest.version \
            and previous.status == "running":
        runs, started = previous.runs, previous.started_at  # resumed after a restart
        if previous.pending is not None:  # killed between a wave and its record
            landed, pause_left = _reconcile(previous.pending, running, rate)
            runs = runs if landed is None else (*runs, landed)
    waves = waves_to_run(manifest, running)
    total = len(runs) + len(waves)
    done = Execution(job_id, manifest.version, total, runs, "running", started, rate)
    save_execution(state_root, done)
    if sleep is not None and pause_left > 0:
        sleep(pause_left)  # the rest of the reconciled wave's pause
    for moves in waves:
        if stop_requested(state_root, job_id):
            clear_stop(state_root, job_id)
            done = Execution(job_id, manifest.version, total, done.runs, "stopped", started,
                             rate)
            save_execution(state_root, done)
            return done
        save_execution(state_root, replace(done, pending=PendingWave(
            len(done.runs) + 1, moves, time.time())))  # write-ahead: the wave's intent
        moved, nbytes, seconds, failed = apply_wave(moves)
        _failpoint("runtime.wave")
        duration = paced_seconds(seconds, nbytes, rate)
        if sleep is not None and duration > seconds:
            sleep(duration - seconds)  # a wall clock: the next wave waits out the rate
        run = WaveRun(len(done.runs) + 1, moved, nbytes, duration, failed, seconds)
        status: Status = "failed" if failed else "running"
        done = Execution(job_id, manifest.version, total, (*done.runs, run), status, started,
                         rate)
        save_execution(state_root, done)
        if failed:
            return done
    done = Execution(job_id, manifest.version, total, done.runs, "done", started, rate)
    save_execution(state_root, done)
    return done
