"""The runtime's health reports: nodes it found dead or far over capacity between two periods.

Cruise Control's anomaly detector watches brokers between its goal-based rebalances; here the
runtime (or an operator on its behalf) writes one report per finding, and a job whose healing is
on gets an out-of-schedule cycle for it (jobs/heal/, dags/healing.py). Contract:

    landing/<job_id>/_health/<report_id>.json

    {"format": 1, "job_id": "demo", "report_id": "node-01-dead-1764131000",
     "at": "2026-11-26T04:03:20Z", "dead": ["node-01"], "utilisation": {"node-02": 1.82}}

`report_id` names the finding (letters, digits, '.', '_', '-'; it is the file's name): the same
finding reported twice under one id is one healing. `dead` lists nodes the runtime lost;
`utilisation` is each reported node's measured load over its capacity (1.0 = full); an optional
`"reason"` (text) says why, when an operator wrote the report (`reconf health report --reason`);
a report without one is written as before. The folder's
leading underscore keeps it out of the period collectors' and Spark's listings. A report is
written atomically and never changed; a reader refuses a malformed one with what, where, fix.

A report is input anyone with write access to the landing zone can put there, so it is read as
`published/` is (schemas/safe_read.py): a regular file only, never through a symbolic link (a
link could make the healing read any file the scheduler can), at most `MAX_REPORT_BYTES`, each
of `dead` and `utilisation` at most `MAX_REPORT_NODES` nodes (a finding names a few nodes; a
cluster has far fewer than that), and `at` no later than `MAX_CLOCK_SKEW` from now (a report
from the future would hold its finding's healing gap open for years). Every refusal names the
limit and counts ids rather than printing them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

from schemas.landing import format_period_end, parse_period_end
from schemas.manifest import atomic_write_bytes
from schemas.safe_read import read_regular

__all__ = ["HEALTH_DIR", "MAX_CLOCK_SKEW", "MAX_REPORT_BYTES", "MAX_REPORT_NODES", "HealthReport", "HealthReportError", "health_dir", "is_report_id",
           "list_reports", "read_report", "write_report"]

HEALTH_DIR = "_health"
_FORMAT = 1
#: the largest report file read (1 MiB: thousands of nodes with their loads and a long reason)
MAX_REPORT_BYTES = 1 << 20
#: the most nodes `dead`, and `utilisation`, may each name
MAX_REPORT_NODES = 4096
#: how far in the future `at` may be (a runtime's clock a little ahead of this one)
MAX_CLOCK_SKEW = timedelta(minutes=1)
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class HealthReportError(ValueError):
    """A report that breaks the contract (the message names the file and the rule)."""


@dataclass(frozen=True)
class HealthReport:
    """One finding of the runtime: dead nodes and measured utilisation at `at` (UTC)."""

    job_id: str
    report_id: str
    at: datetime
    dead: tuple[str, ...] = ()
    utilisation: Mapping[str, float] = field(default_factory=dict)
    reason: str = ""

    def __post_init__(self) -> None:
        if not _ID.match(self.report_id):
            raise HealthReportError(f"report_id {self.report_id!r}: use letters, digits, '.', "
                                    "'_' or '-' (at most 128), starting with a letter or digit")
        if self.at.tzinfo is None:
            raise HealthReportError(f"report {self.report_id}: `at` has no time zone")
        object.__setattr__(self, "dead", tuple(sorted(set(self.dead))))
        for node, value in self.utilisation.items():
            if not node or not isinstance(value, int | float) or isinstance(value, bool) or \
                    not math.isfinite(value) or value < 0:
                raise HealthReportError(f"report {self.report_id}: utilisation of {node!r} must "
                                        f"be a finite number >= 0, got {value!r}")
        object.__setattr__(self, "utilisation",
                           MappingProxyType({n: float(v) for n, v in self.utilisation.items()}))

    def over(self, threshold: float) -> tuple[str, ...]:
        """The live nodes whose utilisation is above `threshold` (a fraction: 1.5 = 150 %)."""
        return tuple(sorted(n for n, u in self.utilisation.items()
                            if u > threshold and n not in self.dead))

    def to_json(self) -> str:
        body: dict[str, Any] = {"format": _FORMAT, "job_id": self.job_id,
                                "report_id": self.report_id, "at": format_period_end(self.at),
                                "dead": list(self.dead),
                                "utilisation": dict(sorted(self.utilisation.items()))}
        if self.reason:
            body["reason"] = self.reason
        return json.dumps(body, indent=1) + "\n"


def health_dir(landing_root: Path, job_id: str) -> Path:
    return Path(landing_root) / job_id / HEALTH_DIR


def write_report(landing_root: Path, report: HealthReport) -> Path:
    """Write the report atomically; rewriting the same id with other content is refused."""
    path = health_dir(landing_root, report.job_id) / f"{report.report_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file():
        if read_report(path) == report:
            return path
        raise HealthReportError(f"{path}: a different report has this id; reports are immutable "
                                "(give the new finding its own report_id)")
    atomic_write_bytes(path, report.to_json().encode("utf-8"))
    return path


def read_report(path: Path, now: datetime | None = None) -> HealthReport:
    """The report in `path`, or HealthReportError naming the file and what is wrong."""
    path = Path(path)
    raw = read_regular(path, MAX_REPORT_BYTES, HealthReportError)  # no link, bounded
    try:
        data: Any = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise HealthReportError(f"{path}: not a readable JSON report "
                                f"({type(exc).__name__}: {str(exc)[:120]})") from None
    keys = {"format", "job_id", "report_id", "at", "dead", "utilisation"}
    if not isinstance(data, dict) or set(data) - {"reason"} != keys or \
            data["format"] != _FORMAT:
        raise HealthReportError(f"{path}: expected an object of exactly {sorted(keys)} (and "
                                f"optionally reason) with format {_FORMAT}")
    reason = data.get("reason", "")
    if not isinstance(reason, str):
        raise HealthReportError(f"{path}: reason must be a string, got {reason!r}")
    dead, util = data["dead"], data["utilisation"]
    if not isinstance(dead, list) or not all(isinstance(n, str) and n for n in dead):
        raise HealthReportError(f"{path}: dead must be a list of node ids, got {dead!r}")
    if not isinstance(util, dict):
        raise HealthReportError(f"{path}: utilisation must be an object node -> fraction")
    for name, value in (("dead", dead), ("utilisation", util)):
        if len(value) > MAX_REPORT_NODES:
            raise HealthReportError(
                f"{path}: {name} names {len(value)} nodes, at most {MAX_REPORT_NODES} are read; "
                "a report is one finding about a few nodes: split it, or report the nodes "
                "that failed")
    if not isinstance(data["job_id"], str) or not isinstance(data["report_id"], str) or \
            not isinstance(data["at"], str):
        raise HealthReportError(f"{path}: job_id, report_id and at must be strings")
    if path.stem != data["report_id"]:
        raise HealthReportError(f"{path}: the file is named after report_id "
                                f"{data['report_id']!r}; rename one of them")
    try:
        report = HealthReport(data["job_id"], data["report_id"], parse_period_end(data["at"]),
                              tuple(dead), util, reason)
    except (HealthReportError, ValueError) as exc:
        raise HealthReportError(f"{path}: {exc}") from None
    latest = (now or datetime.now(UTC)) + MAX_CLOCK_SKEW
    if report.at > latest:
        raise HealthReportError(
            f"{path}: `at` {data['at']} is in the future (more than {MAX_CLOCK_SKEW} after "
            "now); a finding is reported after it happened: fix the reporter's clock and "
            "write the report again under a new id")
    return report


def is_report_id(text: str) -> bool:
    """`text` is a valid report id, and so a plain file name in the job's health folder."""
    return bool(_ID.match(text))


def list_reports(landing_root: Path, job_id: str) -> list[Path]:
    """The job's report files, in name order (a report being written is a hidden temp file)."""
    folder = health_dir(landing_root, job_id)
    return sorted(p for p in folder.glob("*.json") if not p.name.startswith(".")) \
        if folder.is_dir() else []

