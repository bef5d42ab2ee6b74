"""The move schedule a manifest carries: the plan's moves in ordered waves (DESIGN.md, "Execution").

A runtime applies wave 1, then wave 2, …; the moves of one wave run at the same time. The
schedule records the limits it was built under so a runtime, an auditor or MLflow can check it
without the job's config. Its `checksum` covers the canonical schedule bytes *and* the checksum of
the assignment it leads to, so a schedule can be neither altered nor moved to another manifest:

    "sha256:" + hex(sha256(canonical_schedule_bytes(waves, limits) + b"\\n" + assignment_checksum))

The manifest's own `checksum` stays the assignment's (schemas/manifest.py), so a reader that
applies only the final assignment verifies exactly what it verified before schedules existed.
Parsing is strict, like the manifest's: a runtime never guesses at a move.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from schemas.errors import ReconfError

__all__ = ["OVER_IN_FLIGHT", "OVER_TARGET", "Schedule", "ScheduleError", "ScheduledMove", "Wave", "WaveLimits", "apply_waves"]


#: why a wave is over the ceiling (`Schedule.over_causes`)
OVER_TARGET = "target"
OVER_IN_FLIGHT = "in_flight"


class ScheduleError(ReconfError, ValueError):
    """A schedule that is malformed, does not match its checksum, or does not lead to its target."""


@dataclass(frozen=True)
class WaveLimits:
    """The per-job execution limits (`[jobs.<id>.execution]`, schemas/config/job.py).

    `max_moves_per_node`: moves a node takes part in (as source or destination) in one wave,
    Cruise Control's `num.concurrent.partition.movements.per.broker`; `max_moves_per_wave`: moves
    in one wave (`max.num.cluster.movements`); `max_bytes_per_wave`: state bytes one wave may move
    (a single larger unit moves alone); `ceiling_pct`: the utilisation (load / capacity, % of a
    reference node) no node may pass while a wave runs; `max_bytes_per_second`: the state byte
    rate a runtime may move at, paced wave by wave (runtime/execution.py; Cruise Control's
    replication throttle). None = no limit.

    A limit left at None is absent from `to_dict` where it was added after schedules were first
    published (`max_bytes_per_second`), so an older schedule's canonical bytes, and so its
    checksum, are unchanged.
    """

    max_moves_per_node: int | None = 5
    max_moves_per_wave: int | None = None
    max_bytes_per_wave: float | None = None
    ceiling_pct: float | None = None
    max_bytes_per_second: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_moves_per_node", "max_moves_per_wave"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ScheduleError(f"execution limit {name} must be a whole number >= 1 or "
                                    f"None, got {value!r}")
        for name in ("max_bytes_per_wave", "ceiling_pct", "max_bytes_per_second"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not math.isfinite(value) or value <= 0):
                raise ScheduleError(f"execution limit {name} must be a number > 0 or None, "
                                    f"got {value!r}")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"max_moves_per_node": self.max_moves_per_node,
                               "max_moves_per_wave": self.max_moves_per_wave,
                               "max_bytes_per_wave": self.max_bytes_per_wave,
                               "ceiling_pct": self.ceiling_pct}
        if self.max_bytes_per_second is not None:
            out["max_bytes_per_second"] = self.max_bytes_per_second
        return out

    def seconds_for(self, state_bytes: float) -> float | None:
        """The least time moving `state_bytes` may take at the byte rate (None: no rate), in
        microseconds' precision rounded up, so it is exact in JSON and never under the rate."""
        rate = self.max_bytes_per_second
        if rate is None:
            return None
        least = state_bytes / rate
        micros = math.ceil(least * 1e6)
        # x * 1e6 may round down onto a whole number, and micros / 1e6 then fall under x
        return micros / 1e6 if micros / 1e6 >= least else (micros + 1) / 1e6


@dataclass(frozen=True)
class ScheduledMove:
    """One unit's move: from `src` to `dst`, with the state bytes it carries."""

    keygroup: str
    src: str
    dst: str
    state_bytes: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"keygroup": self.keygroup, "src": self.src, "dst": self.dst,
                "state_bytes": self.state_bytes}


@dataclass(frozen=True)
class Wave:
    """Moves applied together. `peak_pct`: the highest node utilisation while the wave runs (a
    moving unit counted on both ends); `over_ceiling`: the wave had to break the ceiling (see
    placement/waves.py, the ceiling rule). Under a byte rate its least duration is derived, not
    stored (`Schedule.expected_s`): a wave's JSON shape is what every reader checks strictly,
    the Java one included."""

    moves: tuple[ScheduledMove, ...]
    peak_pct: float = 0.0
    over_ceiling: bool = False

    @property
    def state_bytes(self) -> float:
        return sum(m.state_bytes for m in self.moves)

    def per_node(self) -> dict[str, int]:
        """Moves each node takes part in during this wave (as source or destination)."""
        out: dict[str, int] = {}
        for m in self.moves:
            out[m.src] = out.get(m.src, 0) + 1
            out[m.dst] = out.get(m.dst, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"moves": [m.to_dict() for m in self.moves], "peak_pct": round(self.peak_pct, 6),
                "over_ceiling": self.over_ceiling}


def apply_waves(assignment: Mapping[str, str], waves: tuple[Wave, ...]) -> dict[str, str]:
    """The assignment after applying `waves` in order (each move sets its unit's node)."""
    out = dict(assignment)
    for wave in waves:
        for m in wave.moves:
            out[m.keygroup] = m.dst
    return out


def _canonical(waves: tuple[Wave, ...], limits: WaveLimits) -> bytes:
    body = {"limits": limits.to_dict(), "waves": [w.to_dict() for w in waves]}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def schedule_checksum(waves: tuple[Wave, ...], limits: WaveLimits, assignment_checksum: str) -> str:
    data = _canonical(waves, limits) + b"\n" + assignment_checksum.encode("ascii")
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Schedule:
    """The waves, the limits they hold, and the checksum binding them to the target assignment."""

    waves: tuple[Wave, ...]
    limits: WaveLimits = field(default_factory=WaveLimits)
    checksum: str = ""
    #: per wave, why an `over_ceiling` wave is over (OVER_TARGET: the plan's target puts its
    #: node over the ceiling; OVER_IN_FLIGHT: the target keeps it, but the moving unit counts
    #: on both nodes and no order of the moves keeps it, e.g. two full nodes swap units), None
    #: for a wave under it. Known only where the schedule is planned (it needs the loads); not
    #: in the manifest's JSON, whose shape every reader checks strictly, the Java one included,
    #: so a schedule read back from a manifest has none.
    over_causes: tuple[str | None, ...] = field(default=(), compare=False)

    @classmethod
    def sealed(cls, waves: tuple[Wave, ...], limits: WaveLimits,
               assignment_checksum: str) -> Schedule:
        """A schedule with its checksum computed against the target's assignment checksum."""
        return cls(tuple(waves), limits, schedule_checksum(tuple(waves), limits,
                                                           assignment_checksum))

    @property
    def moves(self) -> int:
        return sum(len(w.moves) for w in self.waves)

    @property
    def state_bytes(self) -> float:
        return sum(w.state_bytes for w in self.waves)

    def summary(self) -> dict[str, Any]:
        """What MLflow and `reconf audit` show: per wave its moves, state bytes, the most moves
        one node takes part in, the peak utilisation while it runs, whether it is over the
        ceiling and why (`over_causes`, None when unknown) and, under a byte rate, its expected
        duration; plus the limits."""
        expected = self.expected_s()
        return {"waves": len(self.waves), "moves": self.moves, "state_bytes": self.state_bytes,
                "over_ceiling": sum(w.over_ceiling for w in self.waves),
                "limits": self.limits.to_dict(),
                "expected_s": None if expected is None else sum(expected),
                "per_wave": [{"wave": i, "moves": len(w.moves), "state_bytes": w.state_bytes,
                              "max_per_node": max(w.per_node().values(), default=0),
                              "peak_pct": round(w.peak_pct, 3), "over_ceiling": w.over_ceiling,
                              "over_cause": (self.over_causes[i - 1]
                                             if i <= len(self.over_causes) else None),
                              "expected_s": None if expected is None else expected[i - 1]}
                             for i, w in enumerate(self.waves, start=1)]}

    def expected_s(self) -> tuple[float, ...] | None:
        """Each wave's expected (least) duration at the byte rate, its state bytes / the rate;
        None without a rate. Derived from what the schedule records (the rate in its limits,
        each move's state bytes), so the checksum covers it."""
        if self.limits.max_bytes_per_second is None:
            return None
        return tuple(float(self.limits.seconds_for(w.state_bytes) or 0.0) for w in self.waves)

    def verify(self, assignment_checksum: str, source: str) -> None:
        """ScheduleError unless the checksum matches the waves, limits and target."""
        expected = schedule_checksum(self.waves, self.limits, assignment_checksum)
        if self.checksum != expected:
            raise ScheduleError(
                f"{source}: field 'schedule.checksum' {self.checksum!r} does not match the "
                f"schedule and assignment ({expected}); the file was altered or the schedule "
                "belongs to another version — republish this version")

    def to_dict(self) -> dict[str, Any]:
        return {"checksum": self.checksum, "limits": self.limits.to_dict(),
                "waves": [w.to_dict() for w in self.waves]}

    @classmethod
    def from_dict(cls, data: object, source: str) -> Schedule:
        """Strict parse of a manifest's `schedule` object; every error names `source`."""
        def fail(what: str, problem: str) -> ScheduleError:
            return ScheduleError(f"{source}: field 'schedule{what}' {problem}")

        if not isinstance(data, dict) or set(data) != {"checksum", "limits", "waves"}:
            raise fail("", "must be an object with exactly checksum, limits and waves")
        limits_raw = data["limits"]
        required = set(WaveLimits().to_dict())
        if not isinstance(limits_raw, dict) or not (
                required <= set(limits_raw) <= required | {"max_bytes_per_second"}):
            raise fail(".limits", f"must be an object with exactly {sorted(required)} and "
                       "optionally max_bytes_per_second")
        try:
            limits = WaveLimits(**limits_raw)
        except ScheduleError as exc:
            raise fail(".limits", str(exc)) from None
        if not isinstance(data["checksum"], str):
            raise fail(".checksum", "must be a string")
        if not isinstance(data["waves"], list):
            raise fail(".waves", "must be a list")
        waves = []
        for i, raw in enumerate(data["waves"]):
            if not isinstance(raw, dict) or set(raw) != {"moves", "peak_pct", "over_ceiling"}:
                raise fail(f".waves[{i}]", "must be an object with moves, peak_pct, over_ceiling")
            if not isinstance(raw["moves"], list) or not raw["moves"]:
                raise fail(f".waves[{i}].moves", "must be a non-empty list")
            if not isinstance(raw["over_ceiling"], bool) or not _number(raw["peak_pct"]):
                raise fail(f".waves[{i}]", "peak_pct must be a number, over_ceiling a boolean")
            moves = []
            for j, mv in enumerate(raw["moves"]):
                where = f".waves[{i}].moves[{j}]"
                if not isinstance(mv, dict) or set(mv) != {"keygroup", "src", "dst", "state_bytes"}:
                    raise fail(where, "must be an object with keygroup, src, dst, state_bytes")
                if not all(isinstance(mv[k], str) and mv[k] for k in ("keygroup", "src", "dst")):
                    raise fail(where, "keygroup, src and dst must be non-empty strings")
                if not _number(mv["state_bytes"]) or mv["state_bytes"] < 0:
                    raise fail(where, "state_bytes must be a number >= 0")
                moves.append(ScheduledMove(mv["keygroup"], mv["src"], mv["dst"],
                                           mv["state_bytes"]))
            waves.append(Wave(tuple(moves), raw["peak_pct"], raw["over_ceiling"]))
        return cls(tuple(waves), limits, data["checksum"])

    def check_leads_to(self, assignment: Mapping[str, str], source: str) -> None:
        """Every unit moves at most once and lands where the assignment places it."""
        seen: set[str] = set()
        for i, wave in enumerate(self.waves):
            for m in wave.moves:
                if m.keygroup in seen:
                    raise ScheduleError(f"{source}: field 'schedule.waves[{i}]' moves "
                                        f"{m.keygroup!r} a second time; each unit moves once")
                seen.add(m.keygroup)
                if assignment.get(m.keygroup) != m.dst:
                    raise ScheduleError(
                        f"{source}: field 'schedule.waves[{i}]' moves {m.keygroup!r} to "
                        f"{m.dst!r} but the assignment places it on "
                        f"{assignment.get(m.keygroup)!r}; republish this version")


def _number(value: object) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))
