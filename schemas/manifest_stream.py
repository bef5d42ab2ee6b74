"""Writing a manifest streamed: the assignment goes to the temp file in sorted chunks, straight from
the caller's arrays, and is never one dict or one string in memory.

The bytes on disk are exactly `Manifest.to_json()`'s (property-tested in
tests/schemas/test_manifest_stream.py), so readers, checksums and the immutability check see no
difference. The manifest's ``checksum`` field comes before ``assignment``, but the checksum is
only known once the assignment has been written (it is the assignment's, bound to the schedule's
checksum when there is one: schemas/manifest.py); the writer puts a placeholder of the same length
there (``sha256:`` + 64 zeros) and overwrites it in place (`os.pwrite`) after the last chunk, hashed
over the canonical bytes of `canonical_assignment_bytes` as each chunk is encoded
(schemas/canonical.py). Then fsync, then the hard link that publishes the version (it fails if the
version exists, so two publishers never overwrite each other), as `write_manifest` does: a crash or
an error anywhere before the link leaves only the temp file, which is removed, and never a partial
`v<N>.json`.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from schemas.canonical import OrderError, encode_chunks
from schemas.landing import format_period_end, parse_period_end
from schemas.manifest import (
    Manifest,
    ManifestError,
    ScalingSection,
    _check_same,
    _fsync_dir,
    manifest_checksum,
    manifest_path,
)
from schemas.schedule import Schedule, ScheduleError

__all__ = ["ManifestHead", "write_manifest_streamed"]

#: what the checksum field holds until the assignment has been hashed: same length as any checksum
PLACEHOLDER = "sha256:" + "0" * 64
_MARK = '\n  "assignment": {}'  # a real newline only ever appears between fields, never in a string


@dataclass(frozen=True)
class ManifestHead:
    """Every field of a manifest but the assignment and its checksum (which the writer computes)."""

    job_id: str
    version: int
    period_end: str
    plan_id: str
    created_at: str
    scaling: ScalingSection = field(default_factory=ScalingSection)
    schedule: Schedule | None = None

    @classmethod
    def create(cls, *, job_id: str, version: int, period_end: datetime | str, plan_id: str,
               scaling: ScalingSection | None = None, created_at: datetime | None = None,
               schedule: Schedule | None = None) -> ManifestHead:
        """As `Manifest.create`: instants formatted canonically, `created_at` now by default."""
        end = period_end if isinstance(period_end, datetime) else parse_period_end(period_end)
        return cls(job_id, version, format_period_end(end), plan_id,
                   format_period_end(created_at or datetime.now(UTC)), scaling or ScalingSection(),
                   schedule)

    def frame(self) -> tuple[bytes, bytes, int]:
        """The manifest's bytes before and after the assignment's ``{…}``, with the placeholder
        checksum, and the placeholder's byte offset. Every field is validated here, by
        `Manifest` itself (an empty assignment, no schedule: the schedule is checked once the
        assignment's checksum is known)."""
        blank = Manifest(job_id=self.job_id, version=self.version, period_end=self.period_end,
                         plan_id=self.plan_id, created_at=self.created_at, checksum=PLACEHOLDER,
                         assignment={}, scaling=self.scaling)
        data = blank.to_dict()
        if self.schedule is not None:
            data["schedule"] = self.schedule.to_dict()
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        at = text.index(_MARK)
        before = text[:at + len(_MARK) - 2].encode("utf-8")
        after = text[at + len(_MARK):].encode("utf-8")
        offset = before.index(f'\n  "checksum": "{PLACEHOLDER}"'.encode()) + len(
            '\n  "checksum": "')
        return before, after, offset


def write_manifest_streamed(
    root: Path, head: ManifestHead, chunks: Iterable[tuple[Sequence[str], Sequence[str]]], *,
    expected_checksum: str | None = None,
) -> tuple[Path, str]:
    """Publish version `head.version` from sorted (keys, nodes) chunks; returns its path and
    the assignment's checksum (the manifest's own binds the schedule's to it: schemas/manifest.py). Memory: one encoded chunk at a time (schemas/canonical.py `CHUNK` units).

    An identical file already there is a no-op, a different one is refused (versions are
    immutable), as with `write_manifest`. Refused, with nothing published: keys out of order or
    repeated, an empty or non-string key or node, a schedule that does not lead to this
    assignment, or (`expected_checksum`, what the plan recorded) another assignment than planned.
    """
    path = manifest_path(root, head.job_id, head.version)
    before, after, offset = head.frame()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(before)
            checksum, landed = _write_assignment(out, chunks, head.schedule, str(path))
            out.write(after)
            out.flush()
            sealed = manifest_checksum(checksum, head.schedule)  # covers the schedule too
            os.pwrite(out.fileno(), sealed.encode("ascii"), offset)
            os.fsync(out.fileno())
        _check_result(head, checksum, landed, expected_checksum, str(path))
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, path)
        except FileExistsError:
            _check_same(path, tmp.read_bytes())  # a rerun: only ever for an identical file
            return path, checksum
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(path.parent)
    return path, checksum


def _write_assignment(out: BinaryIO, chunks: Iterable[tuple[Sequence[str], Sequence[str]]],
                      schedule: Schedule | None, source: str) -> tuple[str, dict[str, str]]:
    """Write ``{…}`` as `Manifest.to_json` lays it out, hashing the canonical bytes on the way;
    returns the checksum and where the schedule's moved units landed."""
    write = out.write
    moved = ({m.keygroup for w in schedule.waves for m in w.moves} if schedule is not None
             else set())
    landed: dict[str, str] = {}
    digest = hashlib.sha256(b"{")
    write(b"{")
    first = True
    try:
        for chunk in encode_chunks(chunks):
            digest.update(chunk.canonical if first else b"," + chunk.canonical)
            write((b"\n    " if first else b",\n    ") + chunk.pretty)
            first = False
            for kg in moved.intersection(chunk.keys):
                landed[kg] = chunk.nodes[bisect.bisect_left(chunk.keys, kg)]
    except OrderError as exc:
        raise ManifestError(f"{source}: field 'assignment' is not one: {exc}; publish writes "
                            "a plan's assignment sorted by key group") from None
    write(b"}" if first else b"\n  }")
    digest.update(b"}")
    return "sha256:" + digest.hexdigest(), landed


def _check_result(head: ManifestHead, checksum: str, landed: dict[str, str],
                  expected: str | None, source: str) -> None:
    """What can only be checked once the whole assignment has gone by: the plan's checksum and
    the schedule's (which covers the assignment's), and that every move lands where it places."""
    if expected is not None and checksum != expected:
        raise ManifestError(f"{source}: the assignment written hashes to {checksum}, the plan "
                            f"recorded {expected}; nothing is published — plan the period again")
    if head.schedule is not None:
        try:
            head.schedule.verify(checksum, source)
            head.schedule.check_leads_to(landed, source)
        except ScheduleError as exc:
            raise ManifestError(str(exc)) from None
