"""The landing zone: what the runtime writes and `collect` reads (DESIGN.md, "Landing zone").

Layout: ``landing/<job_id>/period_end=<ISO-8601>/{keygroups,edges,nodes}/*.parquet``, the
runtime's report ``_RUNTIME.json`` and a ``_SUCCESS`` marker written last. A job whose units come
and go (a query platform, ``units = "dynamic"``) also lands the facet datasets of
`FACET_SCHEMAS`: ``subscriptions/`` (the sources each running unit reads, where it runs) and
``sources/`` (each source's rate), a snapshot of the period's end, before ``_SUCCESS``. A period without
``_SUCCESS`` is incomplete and never collected.

The runtime report says what the runtime ran at the end of the period: the assignment version it
had applied (null: its initial allocation) and the nodes it owns. It is what the pipeline plans
from and validates node ids against, so a plan never starts from a version the runtime refused and
never places key groups on a node the runtime does not have. Runtimes that do not write it (it is
optional) are planned from the newest published version, as before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from schemas.errors import PeriodError

__all__ = [
    "COMM_TOTALS",
    "EDGES",
    "FACET_GROUPS",
    "FACET_SCHEMAS",
    "KEYGROUPS",
    "LINKS",
    "NODES",
    "RUNTIME_REPORT",
    "SCHEMAS",
    "SOURCES",
    "STREAMS",
    "SUBSCRIPTIONS",
    "SUCCESS_MARKER",
    "RuntimeReport",
    "format_period_end",
    "parse_period_end",
    "period_dir",
    "read_runtime_report",
]

SUCCESS_MARKER = "_SUCCESS"
RUNTIME_REPORT = "_RUNTIME.json"
KEYGROUPS, EDGES, NODES = "keygroups", "edges", "nodes"
SUBSCRIPTIONS, SOURCES = "subscriptions", "sources"
STREAMS = "streams"
LINKS = "links"
COMM_TOTALS = "comm_totals"

_TS = pa.timestamp("us", tz="UTC")

#: Column contracts, one per sample kind. `capacity` is the node's weight relative to the
#: reference node (1.0 = reference): a node offers capacity * period CPU-milliseconds per period.
SCHEMAS: dict[str, pa.Schema] = {
    KEYGROUPS: pa.schema(
        [
            ("ts", _TS),
            ("operator", pa.string()),
            ("keygroup", pa.string()),
            ("node", pa.string()),
            ("tuples_in", pa.int64()),
            ("tuples_out", pa.int64()),
            ("cpu_ms", pa.float64()),
            ("state_bytes", pa.int64()),
        ]
    ),
    EDGES: pa.schema(
        [
            ("ts", _TS),
            ("src_keygroup", pa.string()),
            ("dst_keygroup", pa.string()),
            ("tuples", pa.int64()),
            ("bytes", pa.int64()),
        ]
    ),
    NODES: pa.schema(
        [
            ("ts", _TS),
            ("node", pa.string()),
            ("capacity", pa.float64()),
            ("cpu_ms", pa.float64()),
        ]
    ),
}

#: The facet datasets of a dynamic job (Herding, Zong et al. 2015 §2): unit `keygroup`, running on
#: `node`, reads `source` (one row per pair); a source's rate w(s) in tuples and bytes per second.
FACET_SCHEMAS: dict[str, pa.Schema] = {
    SUBSCRIPTIONS: pa.schema(
        [
            ("ts", _TS),
            ("keygroup", pa.string()),
            ("node", pa.string()),
            ("source", pa.string()),
        ]
    ),
    SOURCES: pa.schema(
        [
            ("ts", _TS),
            ("source", pa.string()),
            ("tuples_per_s", pa.float64()),
            ("bytes_per_s", pa.float64()),
        ]
    ),
    #: a job with declared input streams (ROD, Xing et al. 2006 §2.2; schemas/streams.py): each
    #: stream's rate over the period, one row per stream and period
    STREAMS: pa.schema(
        [
            ("ts", _TS),
            ("stream", pa.string()),
            ("tuples_per_s", pa.float64()),
        ]
    ),
    #: a wide-area job (a `topology` file; SPRAWL, Mei 2015 §3.2): each link's measured one-way
    #: latency (ms) and available bandwidth (the rate unit of comm_stats, tuples/s; +inf: not
    #: limited), one row per link (a, b: sites of the topology) and period
    LINKS: pa.schema(
        [
            ("ts", _TS),
            ("a", pa.string()),
            ("b", pa.string()),
            ("latency_ms", pa.float64()),
            ("bandwidth", pa.float64()),
        ]
    ),
    #: a job whose edges carry only each unit's heaviest outgoing pairs (top-k; docs/algorithms.md
    #: "Communication: heaviest pairs"): per unit, the tuples of ALL its outgoing pairs in the
    #: period (to other units), one row per unit and period; the pairs it did not land are this
    #: total minus its landed edges' tuples
    COMM_TOTALS: pa.schema(
        [
            ("ts", _TS),
            ("src_keygroup", pa.string()),
            ("tuples", pa.int64()),
        ]
    ),
}

#: facet datasets that land together: a dynamic job's (both), a job declaring streams (its rates),
#: a wide-area job's measured links (optional: without them the topology file's values hold)
FACET_GROUPS: dict[str, tuple[str, ...]] = {"dynamic": (SUBSCRIPTIONS, SOURCES),
                                            "load_model": (STREAMS,), "network": (LINKS,),
                                            "comm": (COMM_TOTALS,)}


def format_period_end(period_end: datetime) -> str:
    """Canonical ISO-8601 form used in paths, ids and manifests: UTC, seconds, trailing Z."""
    if period_end.tzinfo is None:
        raise PeriodError(f"period_end {period_end!r} has no time zone; give one (UTC)")
    # isoformat, not strftime("%Y"): glibc's %Y does not pad years before 1000 to four digits
    return period_end.astimezone(UTC).replace(tzinfo=None, microsecond=0).isoformat() + "Z"


def parse_period_end(text: str) -> datetime:
    """Parse an ISO-8601 instant; a value without a zone is refused rather than guessed."""
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise PeriodError(
            f"period end {text!r} is not an ISO-8601 instant; use e.g. 2026-01-01T00:05:00Z"
        ) from exc
    if value.tzinfo is None:
        raise PeriodError(
            f"period end {text!r} has no time zone; append Z for UTC, e.g. {text}Z"
        )
    return value.astimezone(UTC)


def period_dir(landing_root: Path, job_id: str, period_end: datetime) -> Path:
    return landing_root / job_id / f"period_end={format_period_end(period_end)}"


@dataclass(frozen=True)
class RuntimeReport:
    """What the runtime ran at a period's end: its applied version (None: initial) and its nodes.

    `assignment` is set only when the runtime runs no published version exactly: a schedule that
    stopped or failed between waves (runtime/execution.py) left a partial assignment, and the next
    plan starts from it. `execution` is the progress of the last schedule (wave k of n, units
    moved, state bytes, seconds, status). Both are left out of the file when None, so a report
    without them is written as before.
    """

    version: int | None
    nodes: tuple[str, ...]
    assignment: Mapping[str, str] | None = None
    execution: Mapping[str, Any] | None = None

    def to_json(self) -> str:
        body: dict[str, Any] = {"format": 1, "version": self.version, "nodes": sorted(self.nodes)}
        if self.assignment is not None:
            body["assignment"] = dict(sorted(self.assignment.items()))
        if self.execution is not None:
            body["execution"] = dict(self.execution)
        return json.dumps(body, indent=1) + "\n"


def read_runtime_report(period: Path) -> RuntimeReport | None:
    """The period's runtime report, None if the runtime wrote none; ValueError if it is malformed."""
    path = Path(period) / RUNTIME_REPORT
    if not path.is_file():
        return None
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not readable JSON ({exc})") from None
    if (not isinstance(data, dict) or not {"format", "version", "nodes"} <= set(data)
            or not set(data) <= {"format", "version", "nodes", "assignment", "execution"}
            or data["format"] != 1):
        raise ValueError(f"{path}: expected an object with format (1), version and nodes, and "
                         "optionally assignment and execution")
    version, nodes = data["version"], data["nodes"]
    if version is not None and (type(version) is not int or version < 1):
        raise ValueError(f"{path}: version must be null or an integer >= 1, got {version!r}")
    if not isinstance(nodes, list) or not nodes or not all(isinstance(n, str) and n for n in nodes):
        raise ValueError(f"{path}: nodes must be a non-empty list of node ids, got {nodes!r}")
    assignment = data.get("assignment")
    if assignment is not None and (not isinstance(assignment, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and v in nodes
            for k, v in assignment.items())):
        raise ValueError(f"{path}: assignment must be an object of unit -> one of its nodes")
    execution = data.get("execution")
    if execution is not None and not isinstance(execution, dict):
        raise ValueError(f"{path}: execution must be an object")
    return RuntimeReport(version, tuple(nodes), assignment, execution)
