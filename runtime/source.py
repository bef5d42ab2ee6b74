"""What every metrics source (the synthetic job and the replay engine) offers the pipeline.

A source lands one period of samples into the landing zone and applies the newest published
assignment. This module holds the interface (`MetricsSource`), the result of an apply
(`ApplyResult`), the runtime's persisted state (`RuntimeState`, ``<state_root>/<job_id>/runtime.json``)
and the all-or-nothing period writer (`write_period`) so each source gets those guarantees for free.

State file format (UTF-8 JSON, written atomically)::

    {"format": 1, "job_id": "demo", "version": null | <int>,
     "nodes": ["node-00", ...], "assignment": {"op0-kg000": "node-00", ...}}

`nodes` are the nodes the runtime owns (initial ones, plus nodes added and minus nodes terminated by
applied manifests); `version` is the applied manifest version, null before the first apply.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Protocol, runtime_checkable

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.landing import (
    FACET_SCHEMAS,
    RUNTIME_REPORT,
    SCHEMAS,
    SUCCESS_MARKER,
    RuntimeReport,
    period_dir,
)
from schemas.manifest import atomic_write_bytes

__all__ = [
    "STATE_FILE",
    "ApplyResult",
    "ApplyStatus",
    "MetricsSource",
    "RuntimeState",
    "load_state",
    "save_state",
    "state_path",
    "write_period",
]

STATE_FILE = "runtime.json"
_STATE_FORMAT = 1

#: "partial": a schedule stopped or failed between waves; the runtime runs a partial assignment
ApplyStatus = Literal["applied", "unchanged", "refused", "partial"]


@dataclass(frozen=True)
class ApplyResult:
    """Outcome of one poll: `version` is what runs afterwards; `reason` says why, for logs."""

    status: ApplyStatus
    version: int | None
    reason: str
    moved: tuple[str, ...] = ()

    @property
    def applied(self) -> bool:
        return self.status == "applied"

    @property
    def refused(self) -> bool:
        return self.status == "refused"


@runtime_checkable
class MetricsSource(Protocol):
    """A running job as the pipeline sees it: it lands metrics and takes assignments."""

    def land_period(self, landing_root: Path, period_end: datetime) -> Path:
        """Write the period's samples and `_SUCCESS`; return the period directory."""
        ...

    def apply_latest(self, published_root: Path) -> ApplyResult:
        """Apply the newest published assignment, or keep the current one and say why."""
        ...


@dataclass(frozen=True)
class RuntimeState:
    """What the runtime runs now; survives restarts so a new process lands the same placement."""

    job_id: str
    version: int | None
    assignment: Mapping[str, str]
    nodes: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "assignment", MappingProxyType(dict(self.assignment)))
        object.__setattr__(self, "nodes", tuple(sorted(set(self.nodes))))
        stray = sorted(set(self.assignment.values()) - set(self.nodes))
        if stray:
            raise ValueError(
                f"runtime state of {self.job_id!r}: assignment uses unknown nodes {stray}"
            )

    def to_json(self) -> str:
        body: dict[str, Any] = {
            "format": _STATE_FORMAT,
            "job_id": self.job_id,
            "version": self.version,
            "nodes": list(self.nodes),
            "assignment": {kg: self.assignment[kg] for kg in sorted(self.assignment)},
        }
        return json.dumps(body, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str) -> RuntimeState:
        fix = f"fix or delete {source} to restart from the initial allocation"
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.get("format") != _STATE_FORMAT:
                raise ValueError(f"expected an object with format {_STATE_FORMAT}")
            version = data["version"]
            if version is not None and (type(version) is not int or version < 1):
                raise ValueError(f"version must be null or an integer >= 1, got {version!r}")
            assignment = data["assignment"]
            nodes = data["nodes"]
            if not isinstance(assignment, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in assignment.items()
            ):
                raise ValueError("assignment must be an object of keygroup -> node")
            if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
                raise ValueError("nodes must be a list of node ids")
            job_id = data["job_id"]
            if not isinstance(job_id, str):
                raise ValueError("job_id must be a string")
            return cls(job_id=job_id, version=version, assignment=assignment, nodes=tuple(nodes))
        except (ValueError, KeyError) as exc:
            raise ValueError(f"{source}: corrupt runtime state ({exc!s}); {fix}") from None


def state_path(state_root: Path, job_id: str) -> Path:
    return Path(state_root) / job_id / STATE_FILE


def load_state(state_root: Path, job_id: str) -> RuntimeState | None:
    """The persisted state, or None for a first start."""
    path = state_path(state_root, job_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    state = RuntimeState.from_json(text, str(path))
    if state.job_id != job_id:
        raise ValueError(
            f"{path}: holds job {state.job_id!r}, expected {job_id!r}; move or delete it"
        )
    return state


def save_state(state_root: Path, state: RuntimeState) -> Path:
    path = state_path(state_root, state.job_id)
    atomic_write_bytes(path, state.to_json().encode("utf-8"))
    return path


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _same_tree(a: Path, b: Path) -> bool:
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    return files_a == files_b and all((a / f).read_bytes() == (b / f).read_bytes() for f in files_a)


def write_period(
    landing_root: Path, job_id: str, period_end: datetime, tables: Mapping[str, pa.Table],
    running: RuntimeState | None = None, facets: Mapping[str, pa.Table] | None = None,
    execution: Mapping[str, Any] | None = None, partial: bool = False,
) -> Path:
    """Land one period all-or-nothing: `<kind>/part-0.parquet` for each kind, the runtime report
    of `running` (the version and nodes the runtime ran at the period's end), then `_SUCCESS`.
    `execution` (the last schedule's progress) goes into the report, and with `partial` the
    running assignment too (a schedule stopped or failed between waves: the next plan starts
    from it). `facets` (a dynamic job's subscriptions and sources, schemas.landing.FACET_SCHEMAS) land the
    same way, in the same directory, before `_SUCCESS`.

    Everything is written into a hidden temp sibling (``.period_end=…``, which collectors and Spark
    skip) and renamed into place, so a reader sees no period or a complete one. Re-landing a period
    with identical bytes leaves the existing directory untouched; different content swaps it in
    (old directory renamed aside, new one renamed in) — a reader may briefly see the period as not
    yet landed, never a mix of old and new files.
    """
    kinds = sorted(SCHEMAS)
    if sorted(tables) != kinds:
        raise ValueError(f"tables must be exactly {kinds}, got {sorted(tables)}")
    extra = dict(facets or {})
    unknown = sorted(set(extra) - set(FACET_SCHEMAS))
    if unknown:
        raise ValueError(f"facets must be among {sorted(FACET_SCHEMAS)}, got {unknown}")
    tables = {**tables, **extra}
    contract = {**SCHEMAS, **FACET_SCHEMAS}
    kinds = sorted(tables)
    for kind in kinds:
        if not tables[kind].schema.equals(contract[kind]):
            raise ValueError(
                f"{kind} table does not match the landing contract (schemas/landing.py) "
                f"for {kind!r}: got {tables[kind].schema}, expected {contract[kind]}"
            )
    final = period_dir(Path(landing_root), job_id, period_end)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        os.chmod(tmp, 0o755)
        for kind in kinds:
            (tmp / kind).mkdir()
            target = tmp / kind / "part-0.parquet"
            pq.write_table(tables[kind], target)
            with open(target, "rb+") as handle:
                os.fsync(handle.fileno())
            _fsync_dir(tmp / kind)
        if running is not None:
            report = RuntimeReport(running.version, running.nodes,
                                   dict(running.assignment) if partial else None, execution)
            (tmp / RUNTIME_REPORT).write_text(report.to_json(), encoding="utf-8")
        with open(tmp / SUCCESS_MARKER, "wb") as handle:
            os.fsync(handle.fileno())
        _fsync_dir(tmp)
        if final.is_dir() and _same_tree(final, tmp):
            shutil.rmtree(tmp)
            return final
        trash = None
        if final.exists():
            trash = final.parent / f".{final.name}.old-{uuid.uuid4().hex}"
            os.rename(final, trash)
        os.rename(tmp, final)
        _fsync_dir(final.parent)
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final
