"""Per-period markers that gate the stages: the collect marker and the validation report.

Both live under ``reports/<job>/<period_end>/`` and are written atomically:
- ``collect.json``: written by collect after its three table commits (its commit point), with a
  fresh `collect_id`. No marker: the period was never collected, or its collect was interrupted.
- ``validation.json``: written by validate whatever the verdict; it names the `collect_id` it
  checked. Plan and publish accept a period only if the report passed and names the current
  collect (a rerun of collect removes both files first, so stats validated once and then replaced
  are never planned or published).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from schemas.config import Paths
from schemas.landing import RuntimeReport, format_period_end
from schemas.manifest import atomic_write_bytes

__all__ = [
    "CollectMarker",
    "clear_period_markers",
    "collect_marker_path",
    "read_collect_marker",
    "read_report",
    "report_path",
    "runtime_of",
    "write_collect_marker",
    "write_report",
]


@dataclass(frozen=True)
class CollectMarker:
    """What a completed collect vouches for: its id, each table it wrote (rows, Delta version) and
    the runtime report it kept. Read once per stage (jobs/context.py `StageContext.marker`) and
    passed as a value: nobody reads the JSON's keys but `from_json`."""

    collect_id: str
    rows: Mapping[str, int] = field(default_factory=dict)
    versions: Mapping[str, int] = field(default_factory=dict)
    runtime: RuntimeReport | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CollectMarker | None:
        """The marker of a document, or None when it is not one (a damaged marker counts as
        none: the stage before is simply rerun)."""
        collect_id = data.get("collect_id")
        if not isinstance(collect_id, str):
            return None
        raw = data.get("runtime")
        try:
            execution = raw.get("execution") if isinstance(raw, dict) else None
            runtime = (RuntimeReport(raw.get("version"), tuple(map(str, raw.get("nodes") or ())),
                                     _assignment(raw.get("assignment")),
                                     execution if isinstance(execution, dict) else None)
                       if isinstance(raw, dict) else None)
            return cls(collect_id, _counts(data.get("rows")), _counts(data.get("versions")),
                       runtime)
        except (TypeError, ValueError):  # a count that is no number: damaged
            return None

    def wrote(self, table: str) -> bool:
        """Whether this collect wrote `table` for the period (a facet table: only when landed)."""
        return table in self.rows

    def rows_of(self, table: str) -> int | None:
        return self.rows.get(table)

    @property
    def runtime_nodes(self) -> frozenset[str] | None:
        """The nodes the runtime said it owns (None: it wrote no report)."""
        return None if self.runtime is None else frozenset(self.runtime.nodes)


def _counts(raw: Any) -> dict[str, int]:
    """table -> count of a marker's document ({} when absent); TypeError/ValueError if damaged."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise TypeError(f"not a table of counts: {raw!r}")
    return {str(k): _whole(v) for k, v in raw.items()}


def _assignment(raw: Any) -> dict[str, str] | None:
    """A partial assignment the runtime reported (None: it runs a published version exactly)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise TypeError(f"not an assignment: {raw!r}")
    return {str(k): str(v) for k, v in raw.items()}


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"not a whole number: {value!r}")
    return value


def _period_reports(paths: Paths, job_id: str, period_end: datetime) -> Path:
    return paths.reports / job_id / format_period_end(period_end)


def report_path(paths: Paths, job_id: str, period_end: datetime) -> Path:
    return _period_reports(paths, job_id, period_end) / "validation.json"


def collect_marker_path(paths: Paths, job_id: str, period_end: datetime) -> Path:
    return _period_reports(paths, job_id, period_end) / "collect.json"


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # a damaged marker counts as none: the stage before is simply rerun
    return data if isinstance(data, dict) else None


def _write_json(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(document, indent=2, sort_keys=True).encode())


def clear_period_markers(paths: Paths, job_id: str, period_end: datetime) -> None:
    """Collect's first step: the period's stats are about to change, so nothing vouches for them."""
    for path in (collect_marker_path(paths, job_id, period_end), report_path(paths, job_id, period_end)):
        path.unlink(missing_ok=True)


def write_collect_marker(paths: Paths, job_id: str, period_end: datetime,
                         versions: dict[str, int], rows: dict[str, int],
                         runtime: RuntimeReport | None) -> str:
    """The commit point of collect; it also keeps the period's runtime report (what the runtime
    ran), so validate and plan never need the landing zone again."""
    collect_id = uuid.uuid4().hex
    _write_json(collect_marker_path(paths, job_id, period_end), {
        "job_id": job_id, "period_end": format_period_end(period_end), "collect_id": collect_id,
        "versions": versions, "rows": rows,
        "runtime": None if runtime is None else {
            "version": runtime.version, "nodes": sorted(runtime.nodes),
            **({} if runtime.assignment is None else {"assignment": dict(runtime.assignment)}),
            **({} if runtime.execution is None else {"execution": dict(runtime.execution)})}})
    return collect_id


def runtime_of(marker: CollectMarker | None) -> RuntimeReport | None:
    """The runtime report a collect marker kept (None: no marker, or the runtime wrote none)."""
    return None if marker is None else marker.runtime


def read_collect_marker(paths: Paths, job_id: str, period_end: datetime) -> CollectMarker | None:
    data = _read_json(collect_marker_path(paths, job_id, period_end))
    return None if data is None else CollectMarker.from_json(data)


def read_report(paths: Paths, job_id: str, period_end: datetime) -> dict[str, Any] | None:
    return _read_json(report_path(paths, job_id, period_end))


def write_report(paths: Paths, job_id: str, period_end: datetime, document: dict[str, Any]) -> Path:
    path = report_path(paths, job_id, period_end)
    _write_json(path, document)
    return path
