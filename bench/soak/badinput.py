"""The soak's bad-input faults: what a broken runtime, disk or hand puts where reconf reads.

Each must be refused with one message (exit 2, or the runtime's exit 1 "refused" for a manifest)
and leave the stores as they were; the fix follows (the landing whole again, the file restored,
the bad report removed) and the period goes on. A `known` fault probes a defect already filed:
its outcome is reported as a known finding, not as a new violation.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.soak.faults import ANY, REFUSED, REFUSED_APPLY, Injected, refused
from bench.soak.forker import Command
from bench.soak.world import World, period_end, stamp

__all__ = ["CorruptLanding", "DroppedSchedule", "LateLanding", "MalformedHealth", "OffGrid",
           "TamperedManifest"]


def _replace_bytes(path: Path, data: bytes) -> None:
    """Swap the file's content by rename (a published manifest is read-only, its folder not)."""
    tmp = path.with_name(f".soak-{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@dataclass(frozen=True)
class CorruptLanding:
    """A landed Parquet file's bytes are garbage: collect refuses it; then the file is whole
    again (the runtime's landing repeated: a replay cannot replay a period twice, so the soak
    puts the landed bytes back)."""

    kind: str = "corrupt-landing"
    steps: tuple[str, ...] = ("collect",)
    replaces: bool = False

    def inject(self, w: World, rng: random.Random) -> Injected:
        folder = w.landing / f"period_end={w.end()}"
        files = sorted(folder.glob("*/part-*.parquet"))
        if not files:
            return Injected(self.kind, "nothing landed", applied=False)
        target = rng.choice(files)
        original = target.read_bytes()
        data = bytearray(original)
        at = rng.randrange(len(data))
        data[at:at + 64] = bytes(rng.randrange(256) for _ in range(64))
        _replace_bytes(target, bytes(data))
        try:
            out = w.one(self.kind, w.step_command("collect"), ANY)
        finally:
            _replace_bytes(target, original)
        # a flip that keeps the file readable with the same rows is not bad input: exit 0 is fine
        if out.rc in (0, 2):
            return Injected(self.kind, f"{target.parent.name}/{target.name} @ {at}: exit {out.rc}")
        return Injected(self.kind, target.name, problem=f"collect of a corrupt landing exited "
                        f"{out.rc}")


@dataclass(frozen=True)
class LateLanding:
    """The period's `_SUCCESS` is not there yet when collect runs: refused; then it arrives."""

    kind: str = "late-landing"
    steps: tuple[str, ...] = ("collect",)
    replaces: bool = False

    def inject(self, w: World, rng: random.Random) -> Injected:
        marker = w.landing / f"period_end={w.end()}" / "_SUCCESS"
        if not marker.is_file():
            return Injected(self.kind, "no marker", applied=False)
        marker.unlink()
        try:
            out = w.one(self.kind, w.step_command("collect"), REFUSED)
        finally:
            marker.touch()
        return refused(self.kind, "_SUCCESS missing", out)


@dataclass(frozen=True)
class OffGrid:
    """A stage asked for a period end off the job's grid (or in the future): refused."""

    kind: str = "off-grid"
    steps: tuple[str, ...] = ("collect", "validate", "plan", "publish")
    replaces: bool = False

    def inject(self, w: World, rng: random.Random) -> Injected:
        step = rng.choice(("collect", "validate", "plan", "publish"))
        shift = rng.choice((37, 60, 299))
        end = period_end(w.period).timestamp() + shift
        if rng.random() < 0.2:
            end += 10 * 365 * 86400  # far in the future, on the grid's minute
        from datetime import UTC, datetime

        out = w.one(self.kind, w.step_command(step, end=stamp(datetime.fromtimestamp(end, UTC))),
                    REFUSED)
        return refused(self.kind, f"{step} +{shift} s", out)


@dataclass(frozen=True)
class MalformedHealth:
    """A health report that breaks its contract: heal refuses it; the bad file is removed."""

    kind: str = "malformed-health"
    steps: tuple[str, ...] = ("plan", "apply")
    replaces: bool = False

    def inject(self, w: World, rng: random.Random) -> Injected:
        bodies: list[Callable[[], Any]] = [
            lambda: "{not json",
            lambda: json.dumps({"format": 1, "job_id": w.job}),
            lambda: json.dumps({"format": 1, "job_id": w.job, "report_id": "x", "at": "yesterday",
                                "dead": [], "utilisation": {}}),
            lambda: json.dumps({"format": 1, "job_id": w.job, "report_id": "x",
                                "at": w.end(), "dead": "node-00", "utilisation": {}}),
            lambda: json.dumps({"format": 1, "job_id": w.job, "report_id": "x", "at": w.end(),
                                "dead": [], "utilisation": {"node-01": float("nan")}}),
        ]
        which = rng.randrange(len(bodies))
        report = f"soak-p{w.period:04d}-bad{which}"
        folder = w.home / "landing" / w.job / "_health"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{report}.json"
        path.write_text(bodies[which]())
        out = w.one(self.kind, Command(("heal", "--job", w.job, "--report-id", report)), REFUSED)
        path.unlink()
        return refused(self.kind, f"body {which}", out)


def _fresh_manifest(w: World) -> Path | None:
    """The newest manifest if the runtime has not applied it yet (what a tamperer can reach)."""
    newest = w.newest_version()
    state = w.runtime / "runtime.json"
    running = json.loads(state.read_text())["version"] if state.is_file() else None
    if newest == 0 or running == newest:
        return None
    return w.published / f"v{newest}.json"


def _tamper(doc: dict[str, Any], what: str, rng: random.Random) -> bool:
    """Change `doc` in place as `what` says; False when it has nothing of that kind to change."""
    if what == "assignment":
        units = sorted(doc["assignment"])
        nodes = sorted(set(doc["assignment"].values()))
        unit = rng.choice(units)
        others = [n for n in nodes if n != doc["assignment"][unit]]
        if not others:
            return False
        doc["assignment"][unit] = rng.choice(others)
        return True
    waves = (doc.get("schedule") or {}).get("waves") or []
    if what == "schedule":
        if len(waves) < 2:
            return False
        waves[0], waves[-1] = waves[-1], waves[0]
        return True
    if what == "drop-schedule":
        if not waves:
            return False
        del doc["schedule"]
        return True
    raise ValueError(what)


@dataclass(frozen=True)
class TamperedManifest:
    """A published manifest edited on disk (its assignment, or its schedule's waves) before the
    runtime reads it: the runtime refuses it and keeps what it runs; the file is restored."""

    kind: str
    what: str  # "assignment" or "schedule"
    steps: tuple[str, ...] = ("apply",)
    replaces: bool = False
    known: str | None = None

    def inject(self, w: World, rng: random.Random) -> Injected:
        path = _fresh_manifest(w)
        if path is None:
            return Injected(self.kind, "no version waiting for the runtime", applied=False)
        original = path.read_bytes()
        doc = json.loads(original)
        if not _tamper(doc, self.what, rng):
            return Injected(self.kind, f"{path.name}: no {self.what} to change", applied=False)
        _replace_bytes(path, json.dumps(doc).encode())
        try:
            out = w.one(self.kind, w.step_command("apply"), ANY if self.known else REFUSED_APPLY)
        finally:
            _replace_bytes(path, original)
        if out.rc == 1 and "refused" in out.stdout:
            return Injected(self.kind, f"{path.name} {self.what}")
        problem = (f"the runtime applied {path.name} with its {self.what} tampered "
                   f"(apply exit {out.rc}: {out.stdout.strip()[:160]})")
        return Injected(self.kind, f"{path.name} {self.what}", problem=problem, known=self.known)


#: the manifest's checksum covers its schedule (schemas/manifest.py), so this is refused too
DroppedSchedule = TamperedManifest("schedule-dropped", "drop-schedule")
