"""The published assignment: what `publish` writes and the runtime polls (DESIGN.md, "Published manifest").

Layout under the published root::

    published/<job_id>/v<version>.json   one immutable manifest per version
    published/<job_id>/LATEST            the newest version number as text plus a newline

Checksum: the assignment's, ``A = "sha256:" + hex(sha256(canonical_assignment_bytes(assignment)))``
(the algorithm is spelled out in the value so a later change of algorithm is detectable, not
silently mismatched; the canonical bytes are the assignment as JSON, keys sorted, no whitespace,
UTF-8) for a manifest without a schedule, and for one with a schedule

    "sha256:" + hex(sha256(A + "\n" + schedule.checksum))

Schedule (optional, schemas/schedule.py): the plan's moves in ordered waves. It carries its own
checksum, which covers the waves, their limits and A, so neither the schedule nor the assignment
can change without a mismatch. The manifest's `checksum` covers the schedule's in turn, so
*deleting* the schedule (the one edit its own checksum cannot see: it goes with it) is a
mismatch too, and a runtime never applies a scheduled plan's moves at once. A manifest without
`schedule` is written byte for byte as before schedules existed and loads as no waves given.

Versions are immutable: writing a version that exists with other content is an error, writing it
again with identical content is a no-op (idempotent reruns). ``LATEST`` only moves forward and only
to a version whose manifest is on disk, so a reader never follows it to a missing file.
Parsing is strict: a missing, ill-typed or unknown field is a `ManifestError` naming the file and
the field, because a runtime must never guess at a placement.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from schemas.canonical import (
    OrderError,
    assignment_checksum,
    canonical_assignment_bytes,
    mapping_chunks,
    sorted_checksum,
)
from schemas.errors import ReconfError
from schemas.landing import format_period_end, parse_period_end
from schemas.safe_read import read_regular as _read_regular
from schemas.schedule import Schedule, ScheduleError

__all__ = [
    "LATEST_FILE",
    "Manifest",
    "ManifestError",
    "ScalingSection",
    "Schedule",
    "assignment_checksum",
    "atomic_write_bytes",
    "canonical_assignment_bytes",
    "latest_path",
    "manifest_checksum",
    "manifest_path",
    "read_latest_version",
    "read_manifest",
    "read_regular",
    "write_latest",
    "write_manifest",
]

LATEST_FILE = "LATEST"
#: The largest LATEST read: a version number and a newline fit many times over.
LATEST_MAX_BYTES = 64
#: The largest manifest read: ~5 million units at ~50 bytes each; a bigger file is refused, never
#: read into memory (a file under published/ may be anything an operator or attacker put there).
MANIFEST_MAX_BYTES = 256 * 1024 * 1024
_CHECKSUM_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
_FIELDS = (
    "job_id",
    "version",
    "period_end",
    "plan_id",
    "created_at",
    "checksum",
    "assignment",
    "scaling",
)
#: fields a manifest may carry beyond `_FIELDS`
_OPTIONAL = ("schedule",)
_SCALING_FIELDS = ("nodes_to_add", "nodes_to_mark", "nodes_to_terminate", "reason")


class ManifestError(ReconfError, ValueError):
    """A manifest (or LATEST) that is missing, malformed, or conflicts with what is published."""


def _assignment_digest(assignment: Mapping[str, str], source: str) -> str:
    """Validate the assignment (string keys and nodes, none empty) and hash its canonical bytes
    in one pass over its items as they come when they are sorted (as publish writes them);
    otherwise name the first bad item, or hash its sorted keys."""
    try:
        return sorted_checksum(mapping_chunks(assignment))
    except OrderError:
        pass
    for kg, node in assignment.items():
        _str(kg, source, "assignment (key)")
        _str(node, source, f"assignment[{kg!r}]")
    return assignment_checksum(assignment)


def manifest_checksum(assignment_digest: str, schedule: Schedule | None) -> str:
    """The manifest's `checksum`: the assignment's digest, bound to the schedule's checksum when
    there is one (the module docstring), so that removing the schedule cannot go unseen."""
    if schedule is None:
        return assignment_digest
    data = f"{assignment_digest}\n{schedule.checksum}".encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _fail(source: str, what: str, problem: str) -> ManifestError:
    return ManifestError(f"{source}: field '{what}' {problem}")


def _str(value: object, source: str, what: str, *, empty_ok: bool = False) -> str:
    if not isinstance(value, str):
        raise _fail(source, what, f"must be a string, got {type(value).__name__}")
    if not value and not empty_ok:
        raise _fail(source, what, "must not be empty")
    return value


def _names(value: object, source: str, what: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):
        raise _fail(source, what, f"must be a list of node ids, got {type(value).__name__}")
    return tuple(_str(v, source, f"{what}[{i}]") for i, v in enumerate(value))


@dataclass(frozen=True)
class ScalingSection:
    """Scaling actions of the plan; the runtime counts `nodes_to_add` as known nodes."""

    nodes_to_add: tuple[str, ...] = ()
    nodes_to_mark: tuple[str, ...] = ()
    nodes_to_terminate: tuple[str, ...] = ()
    reason: str = ""

    def __post_init__(self) -> None:
        src = "<ScalingSection>"
        for name in _SCALING_FIELDS[:3]:
            object.__setattr__(self, name, _names(getattr(self, name), src, f"scaling.{name}"))
        _str(self.reason, src, "scaling.reason", empty_ok=True)

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes_to_add": list(self.nodes_to_add),
            "nodes_to_mark": list(self.nodes_to_mark),
            "nodes_to_terminate": list(self.nodes_to_terminate),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Manifest:
    """One published, immutable assignment version of a job."""

    job_id: str
    version: int
    period_end: str
    plan_id: str
    created_at: str
    checksum: str
    assignment: Mapping[str, str]
    scaling: ScalingSection = field(default_factory=ScalingSection)
    schedule: Schedule | None = None

    def __post_init__(self) -> None:
        # A read-only copy, made before validation: a manifest must not change under the
        # runtime after it was checked (and its digest, `actual_checksum`, was taken).
        if isinstance(self.assignment, Mapping):
            object.__setattr__(self, "assignment", MappingProxyType(dict(self.assignment)))
        self._validate("<Manifest>")

    @property
    def actual_checksum(self) -> str:
        """The checksum `checksum` must hold, from the assignment as held (taken in the
        validating pass over it) and the schedule; the runtime compares the two (a mismatch:
        the file was altered or torn, or its schedule removed)."""
        return manifest_checksum(self.assignment_digest, self.schedule)

    @property
    def assignment_digest(self) -> str:
        """The checksum of the assignment alone (what a plan records and the lake keeps)."""
        return str(self.__dict__["_digest"])

    @classmethod
    def create(
        cls,
        *,
        job_id: str,
        version: int,
        period_end: datetime | str,
        plan_id: str,
        assignment: Mapping[str, str],
        scaling: ScalingSection | None = None,
        created_at: datetime | None = None,
        schedule: Schedule | None = None,
    ) -> Manifest:
        """Build a manifest with the checksum computed, so publishers cannot get it wrong."""
        end = period_end if isinstance(period_end, datetime) else parse_period_end(period_end)
        made = created_at or datetime.now(UTC)
        return cls(
            job_id=job_id,
            version=version,
            period_end=format_period_end(end),
            plan_id=plan_id,
            created_at=format_period_end(made),
            checksum=manifest_checksum(assignment_checksum(assignment), schedule),
            assignment=assignment,
            scaling=scaling or ScalingSection(),
            schedule=schedule,
        )

    def _validate(self, source: str) -> None:
        _str(self.job_id, source, "job_id")
        if not isinstance(self.version, int) or isinstance(self.version, bool) or self.version < 1:
            raise _fail(source, "version", f"must be an integer >= 1, got {self.version!r}")
        for name in ("period_end", "created_at"):
            text = _str(getattr(self, name), source, name)
            try:
                canonical = format_period_end(parse_period_end(text))
            except ValueError as exc:
                raise _fail(source, name, f"is not an ISO-8601 instant: {exc}") from None
            if name == "period_end" and canonical != text:
                raise _fail(source, name, f"must be canonical ({canonical!r}), got {text!r}")
        _str(self.plan_id, source, "plan_id")
        checksum = _str(self.checksum, source, "checksum")
        if not _CHECKSUM_RE.match(checksum):
            raise _fail(
                source, "checksum", f"must look like 'sha256:<64 hex digits>', got {checksum!r}"
            )
        if not isinstance(self.assignment, Mapping):
            raise _fail(source, "assignment", "must be an object of keygroup -> node")
        object.__setattr__(self, "_digest", _assignment_digest(self.assignment, source))
        if not isinstance(self.scaling, ScalingSection):
            raise _fail(source, "scaling", "must be a ScalingSection")
        if self.schedule is not None:
            if not isinstance(self.schedule, Schedule):
                raise _fail(source, "schedule", "must be a Schedule")
            try:
                self.schedule.verify(self.assignment_digest, source)
                self.schedule.check_leads_to(self.assignment, source)
            except ScheduleError as exc:
                raise ManifestError(str(exc)) from None

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "version": self.version,
            "period_end": self.period_end,
            "plan_id": self.plan_id,
            "created_at": self.created_at,
            "checksum": self.checksum,
            "assignment": {kg: self.assignment[kg] for kg in sorted(self.assignment)},
            "scaling": self.scaling.to_dict(),
            **({"schedule": self.schedule.to_dict()} if self.schedule is not None else {}),
        }

    def to_json(self) -> str:
        """Pretty and byte-stable (fixed field order, sorted assignment), for diffs and no-op rewrites."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str) -> Manifest:
        """Parse strictly; `source` (the file) is named in every error."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ManifestError(f"{source}: not valid JSON ({exc})") from None
        except (ValueError, RecursionError) as exc:  # a 5000-digit number, deep nesting
            raise ManifestError(f"{source}: not a manifest ({type(exc).__name__}: "
                                f"{str(exc)[:120]})") from None
        if not isinstance(data, dict):
            raise ManifestError(f"{source}: top level must be a JSON object")
        _check_keys(data, _FIELDS, source, "", optional=_OPTIONAL)
        scaling = data["scaling"]
        if not isinstance(scaling, dict):
            raise _fail(source, "scaling", f"must be an object, got {type(scaling).__name__}")
        _check_keys(scaling, _SCALING_FIELDS, source, "scaling.")
        if not isinstance(data["assignment"], dict):
            raise _fail(
                source, "assignment", f"must be an object, got {type(data['assignment']).__name__}"
            )
        section = ScalingSection(
            nodes_to_add=_names(scaling["nodes_to_add"], source, "scaling.nodes_to_add"),
            nodes_to_mark=_names(scaling["nodes_to_mark"], source, "scaling.nodes_to_mark"),
            nodes_to_terminate=_names(
                scaling["nodes_to_terminate"], source, "scaling.nodes_to_terminate"
            ),
            reason=_str(scaling["reason"], source, "scaling.reason", empty_ok=True),
        )
        schedule = None
        if "schedule" in data:
            try:
                schedule = Schedule.from_dict(data["schedule"], source)
            except ScheduleError as exc:
                raise ManifestError(str(exc)) from None
        manifest = cls.__new__(cls)
        for name in _FIELDS[:-1]:
            object.__setattr__(manifest, name, data[name])
        object.__setattr__(manifest, "scaling", section)
        object.__setattr__(manifest, "schedule", schedule)
        # the parsed dict is this call's own: wrapped read-only, never copied
        object.__setattr__(manifest, "assignment", MappingProxyType(data["assignment"]))
        manifest._validate(source)
        return manifest


def _check_keys(
    data: Mapping[str, object], expected: tuple[str, ...], source: str, prefix: str,
    optional: tuple[str, ...] = (),
) -> None:
    missing = [k for k in expected if k not in data]
    if missing:
        raise ManifestError(f"{source}: missing field '{prefix}{missing[0]}'")
    unknown = sorted(set(data) - set(expected) - set(optional))
    if unknown:
        raise ManifestError(
            f"{source}: unknown field '{prefix}{unknown[0]}'; expected only {list(expected) + list(optional)}"
        )


def manifest_path(root: Path, job_id: str, version: int) -> Path:
    return Path(root) / job_id / f"v{version}.json"


def latest_path(root: Path, job_id: str) -> Path:
    return Path(root) / job_id / LATEST_FILE


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(directory: Path, data: bytes, prefix: str) -> Path:
    """A fully written, fsynced temp file in `directory` (same file system, so rename is atomic)."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(name, 0o644)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` so that readers see the old or the new content, never a torn file."""
    path = Path(path)
    tmp = _write_temp(path.parent, data, f".{path.name}.")
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def write_manifest(root: Path, manifest: Manifest) -> Path:
    """Publish one version; identical rewrite is a no-op, a different one is refused.

    Uses a hard link from the temp file (fails if the target exists) rather than a check followed by
    `os.replace`, so two concurrent publishers can never overwrite each other's version.
    """
    path = manifest_path(root, manifest.job_id, manifest.version)
    data = manifest.to_json().encode("utf-8")
    if path.exists():
        _check_same(path, data)
        return path
    tmp = _write_temp(path.parent, data, f".{path.name}.")
    try:
        os.link(tmp, path)
    except FileExistsError:
        _check_same(path, data)
        return path
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(path.parent)
    return path


def _check_same(path: Path, data: bytes) -> None:
    if read_regular(path, MANIFEST_MAX_BYTES) != data:
        raise ManifestError(
            f"{path}: version already published with different content; versions are immutable, "
            "publish the new assignment as the next version instead"
        )


def write_latest(root: Path, job_id: str, version: int) -> Path:
    """Point LATEST at `version` atomically; never backwards, never at a missing manifest."""
    if not manifest_path(root, job_id, version).is_file():
        raise ManifestError(
            f"{manifest_path(root, job_id, version)}: not published; write the manifest before LATEST"
        )
    current = read_latest_version(root, job_id)
    if current is not None and current > version:
        raise ManifestError(
            f"{latest_path(root, job_id)}: names v{current}, refusing to move it back to v{version} "
            "(versions only go up; a backfill records its plan without moving LATEST)"
        )
    path = latest_path(root, job_id)
    atomic_write_bytes(path, f"{version}\n".encode("ascii"))
    return path


def read_regular(path: Path, limit: int) -> bytes:
    """`schemas.safe_read.read_regular`, its refusals as `ManifestError`."""
    return _read_regular(path, limit, ManifestError)


def read_latest_version(root: Path, job_id: str) -> int | None:
    """The newest published version, or None when nothing has been published for the job."""
    path = latest_path(root, job_id)
    try:
        raw = read_regular(path, LATEST_MAX_BYTES)
    except FileNotFoundError:
        return None
    stripped = raw.strip()
    if not stripped.isdigit() or not stripped.isascii() or int(stripped) < 1:
        # never echo the content: LATEST may have been replaced by any file
        raise ManifestError(f"{path}: must hold a version number >= 1 and a newline; it holds "
                            f"{len(raw)} byte(s) that are not one")
    return int(stripped)


def read_manifest(root: Path, job_id: str, version: int) -> Manifest:
    """Read and strictly parse one version; also checks it is filed under its own job and version."""
    path = manifest_path(root, job_id, version)
    try:
        text = read_regular(path, MANIFEST_MAX_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise ManifestError(f"{path}: not found") from None
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    manifest = Manifest.from_json(text, str(path))
    if manifest.job_id != job_id:
        raise _fail(
            str(path), "job_id", f"is {manifest.job_id!r} but the file is filed under {job_id!r}"
        )
    if manifest.version != version:
        raise _fail(
            str(path), "version", f"is {manifest.version} but the file name says v{version}"
        )
    return manifest

