"""The landing zone: what the runtime writes and `collect` reads (DESIGN.md, "Landing zone").

Layout: ``landing/<job_id>/period_end=<ISO-8601>/{keygroups,edges,nodes}/*.parquet`` and a
``_SUCCESS`` marker written last. A period without ``_SUCCESS`` is incomplete and never collected.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

__all__ = [
    "EDGES",
    "KEYGROUPS",
    "NODES",
    "SCHEMAS",
    "SUCCESS_MARKER",
    "format_period_end",
    "parse_period_end",
    "period_dir",
]

SUCCESS_MARKER = "_SUCCESS"
KEYGROUPS, EDGES, NODES = "keygroups", "edges", "nodes"

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


def format_period_end(period_end: datetime) -> str:
    """Canonical ISO-8601 form used in paths, ids and manifests: UTC, seconds, trailing Z."""
    if period_end.tzinfo is None:
        raise ValueError(f"period_end {period_end!r} has no time zone; give one (UTC)")
    return period_end.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_period_end(text: str) -> datetime:
    """Parse an ISO-8601 instant; a value without a zone is refused rather than guessed."""
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(
            f"period end {text!r} is not an ISO-8601 instant; use e.g. 2026-01-01T00:05:00Z"
        ) from exc
    if value.tzinfo is None:
        raise ValueError(
            f"period end {text!r} has no time zone; append Z for UTC, e.g. {text}Z"
        )
    return value.astimezone(UTC)


def period_dir(landing_root: Path, job_id: str, period_end: datetime) -> Path:
    return landing_root / job_id / f"period_end={format_period_end(period_end)}"
