"""collect's aggregation by pyarrow and numpy, in the stage's process (the default engine).

It implements the contract of jobs/collect/aggregate.py (the window, the refusals, null/NaN
sums, ``max_by``, the derived columns, the facets copied) value for value with the Spark engine
(jobs/collect/by_spark.py).

How, at scale (45 million edge samples of 9 million pairs at 10^4 key groups): the string keys are
read with Parquet's own dictionaries, so a key is a small integer code (a pair of keys, one
code); the rows sort once by (code, ts) with numpy's stable sort (near-linear on the runtime's
sample-major files), which gives at once the groups, the duplicates (equal neighbours) and max_by
(a group's last row); sums accumulate per group in landing order (``np.add.at``), the order of
Spark's aggregation of a single-partition file, so floating-point sums agree bit for bit.
Arrow's hash ``group_by`` was measured 5-10x slower on the 9 million pairs (docs/benchmarks.md).

Integer sums wrap on int64 overflow where Spark (ANSI mode) would fail the stage: counters that
large (9.2e18 tuples in a period) are not a runtime's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from jobs.collect.aggregate import COUNTERS, SAMPLE_KEYS, CollectedFrames, Period
from jobs.errors import StageError
from jobs.facets.subscriptions import FACET_TABLES
from schemas.config import JobConfig
from schemas.landing import EDGES, FACET_SCHEMAS, KEYGROUPS, NODES, SCHEMAS
from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS, Table

__all__ = ["COUNTERS", "SAMPLE_KEYS", "CollectedFrames", "collect_frames"]

_TS = pa.timestamp("us", tz="UTC")
_STAMP = ("job_id", "period_end", "period_start")


def _stamped(period: Period, table: Table, columns: dict[str, Any], rows: int) -> pa.Table:
    """`columns` with the stamp added, as the table's columns and Arrow types."""
    stamp = {"job_id": pa.repeat(pa.scalar(period.job_id, pa.string()), rows),
             "period_end": pa.repeat(pa.scalar(period.end, _TS), rows),
             "period_start": pa.repeat(pa.scalar(period.start, _TS), rows)}
    merged = {**stamp, **columns}
    schema = table.arrow_schema()
    return pa.Table.from_arrays([pa.array(merged[f.name], f.type) if isinstance(
        merged[f.name], np.ndarray) else merged[f.name] for f in schema], schema=schema)


@dataclass(frozen=True)
class _Groups:
    """A kind's in-window samples grouped by key: positions sorted by (key code, ts)."""

    order: np.ndarray  # row positions, sorted by (code, ts), stable
    starts: np.ndarray  # where each group starts in `order`
    gid: np.ndarray  # each row's group, in landing order

    @property
    def size(self) -> int:
        return len(self.starts)

    def first_rows(self) -> np.ndarray:
        return self.order[self.starts]

    def last_rows(self) -> np.ndarray:
        """Each group's newest sample (ts is unique within a group once duplicates are refused)."""
        if not len(self.starts):  # no samples (a dynamic job every unit of which has left)
            return self.order[:0]
        return self.order[np.append(self.starts[1:], len(self.order)) - 1]

    def counts(self) -> np.ndarray:
        return np.diff(np.append(self.starts, len(self.order))).astype(np.int64)


def collect_frames(job: JobConfig, period_end: datetime, files: dict[str, list[Path]],
                   facet_files: dict[str, list[Path]], landed: Path) -> CollectedFrames:
    """The period's rows of keygroup_stats, comm_stats, node_stats and each landed facet table.

    `files` is what `check_landing` returns, `facet_files` what `check_facet_landing` returns,
    `landed` the period's landing directory (named in refusals). Raises StageError as
    `_check_samples` does; reads nothing but the given files and writes nothing.
    """
    period = Period.of(job, period_end, landed)
    tables: dict[str, pa.Table] = {}
    groups: dict[str, int] = {}
    # one kind at a time, checked then aggregated, so the edges' samples are freed early; the
    # order is Spark's (the first failing kind's refusal wins)
    for kind, table, aggregate in ((KEYGROUPS, KEYGROUP_STATS, _keygroups), (EDGES, COMM_STATS, _comm),
                                   (NODES, NODE_STATS, _nodes)):
        samples, total = _in_window(kind, files.get(kind, []), period)
        grouped = _check(kind, samples, total, period)
        tables[table.name] = _stamped(period, table, aggregate(samples, grouped, period),
                                      grouped.size)
        groups[kind] = grouped.size
    for kind, facet in FACET_TABLES.items():
        if kind in facet_files:
            tables[facet.name] = _facet(kind, facet, facet_files[kind], period)
    return CollectedFrames(tables, groups)


def _read(schema: pa.Schema, files: list[Path], period: Period,
          dictionary: bool = True) -> pa.Table:
    """The files' rows of the contract's columns; strings dictionary-encoded (Parquet's own)."""
    strings = [f.name for f in schema if f.type == pa.string()] if dictionary else []
    want = pa.schema([(f.name, pa.dictionary(pa.int32(), pa.string()) if f.name in strings
                       else f.type) for f in schema])
    parts = []
    for file in files:
        try:
            part = pq.read_table(file, columns=schema.names, read_dictionary=strings)
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise StageError(f"corrupt Parquet file ({exc})", where=str(file),
                             fix=f"remove the period's directory and land it again "
                                 f"(`{period.land_cmd}`)") from exc
        part = part.select(schema.names)
        parts.append(part if part.schema.equals(want) else part.cast(want))
    if not parts:
        return want.empty_table()
    return pa.concat_tables(parts).unify_dictionaries()


def _in_window(kind: str, files: list[Path], period: Period) -> tuple[pa.Table, int]:
    """The kind's samples inside the window, and how many samples it landed in all."""
    table = _read(SCHEMAS[kind], files, period)
    return _window(table, period), table.num_rows


def _window(table: pa.Table, period: Period) -> pa.Table:
    ts = table.column("ts")
    inside = pc.fill_null(pc.and_(pc.greater_equal(ts, pa.scalar(period.start, _TS)),
                                  pc.less(ts, pa.scalar(period.end, _TS))), False)
    if pc.all(inside).as_py() is not False:  # None: no rows
        return table
    return table.filter(inside)


def _check(kind: str, samples: pa.Table, total: int, period: Period) -> _Groups:
    """Refuse what summing would hide (jobs/collect/aggregate.py); the samples grouped by key."""
    keys, counters = SAMPLE_KEYS[kind], COUNTERS[kind]
    if samples.num_rows == 0 and not period.may_be_empty(kind, total):
        raise period.no_samples(kind, total)
    bad = pa.chunked_array([pa.array(np.zeros(samples.num_rows, bool))])
    for name in counters:
        column = samples.column(name)
        broken = pc.less_equal(column, 0) if name == "capacity" else pc.less(column, 0)
        bad = pc.or_(bad, pc.fill_null(broken, False))
    broken_count = pc.sum(bad).as_py() or 0
    if broken_count:
        raise period.broken(kind, broken_count,
                            _as_row(samples.filter(bad).slice(0, 1).to_pylist()[0]))
    codes = _codes(samples, keys)
    ts = samples.column("ts").cast(pa.int64()).to_numpy()
    order = np.lexsort((ts, codes))
    sorted_codes, sorted_ts = codes[order], ts[order]
    new_group = np.ones(len(order), bool)
    new_group[1:] = sorted_codes[1:] != sorted_codes[:-1]
    repeats = ~new_group[1:] & (sorted_ts[1:] == sorted_ts[:-1])
    duplicates = int(repeats.sum())
    if duplicates:
        at = int(np.flatnonzero(repeats)[0])
        same = int(((sorted_codes == sorted_codes[at]) & (sorted_ts == sorted_ts[at])).sum())
        row = samples.select([*keys, "ts"]).take([int(order[at])]).to_pylist()[0]
        raise period.repeated(kind, duplicates, _as_row({**row, "count": same}))
    del codes, ts, sorted_codes, sorted_ts, repeats  # before the next 8 bytes per sample
    starts = np.flatnonzero(new_group)
    gid = np.empty(len(order), np.int64)
    gid[order] = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(order))))
    return _Groups(order, starts, gid)


def _as_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row as PySpark's `Row.asDict()` shows it: timestamps naive, in UTC."""
    return {k: v.astimezone(UTC).replace(tzinfo=None) if isinstance(v, datetime) else v
            for k, v in row.items()}


def _codes(samples: pa.Table, keys: tuple[str, ...]) -> np.ndarray:
    """One int64 code per row for its key tuple (equal keys, equal codes; a null is a value)."""
    code = np.zeros(samples.num_rows, np.int64)
    for i, name in enumerate(keys):
        indices, size = _indices(samples.column(name))
        if i == 0:
            code[:] = indices
        else:
            code *= size + 1  # at most (rows + 1)^len(keys): no int64 overflow
            code += indices
    return code


def _indices(column: pa.ChunkedArray) -> tuple[np.ndarray, int]:
    """A dictionary column's value codes (null: `size`) and `size`, the number of values."""
    if column.num_chunks == 0:
        return np.zeros(0, np.int64), 0
    dictionary = column.chunk(0).dictionary  # the same in every chunk (unify_dictionaries)
    indices = pa.chunked_array([c.indices for c in column.chunks], column.type.index_type)
    unique = pc.dictionary_encode(dictionary)
    size = len(unique.dictionary)
    if size != len(dictionary) or dictionary.null_count:  # a value twice: one code for both
        indices = pc.take(unique.indices, indices)
    if indices.null_count:
        indices = pc.fill_null(indices, size)
    return indices.to_numpy(), size


def _keys(samples: pa.Table, name: str, rows: np.ndarray) -> pa.Array:
    """A column's values at `rows`, decoded (dictionary -> string)."""
    taken = samples.column(name).take(rows).combine_chunks()
    return taken.cast(pa.string()) if pa.types.is_dictionary(taken.type) else taken


def _sum(samples: pa.Table, name: str, grouped: _Groups) -> pa.Array:
    """Per group, the sum in landing order; null when a sample's value is null."""
    column = samples.column(name)
    values = (pc.fill_null(column, pa.scalar(0, column.type)) if column.null_count
              else column).to_numpy()
    total = np.zeros(grouped.size, values.dtype)
    np.add.at(total, grouped.gid, values)
    nulls = None
    if column.null_count:
        nulls = np.zeros(grouped.size, bool)
        nulls[grouped.gid[column.is_null().to_numpy()]] = True
    return pa.array(total, column.type, mask=nulls)


def _keygroups(samples: pa.Table, grouped: _Groups, period: Period) -> dict[str, Any]:
    newest = grouped.last_rows()
    cpu_ms = _sum(samples, "cpu_ms", grouped)
    return {"keygroup": _keys(samples, "keygroup", grouped.first_rows()),
            "operator": _keys(samples, "operator", newest),
            "node": _keys(samples, "node", newest),
            "tuples_in": _sum(samples, "tuples_in", grouped),
            "tuples_out": _sum(samples, "tuples_out", grouped),
            "cpu_ms": cpu_ms,
            "load_pct": pc.divide(pc.multiply(cpu_ms, 100.0), period.period_ms),
            "state_bytes": _keys(samples, "state_bytes", newest),
            "samples": grouped.counts()}


def _comm(samples: pa.Table, grouped: _Groups, period: Period) -> dict[str, Any]:
    first = grouped.first_rows()
    tuples = _sum(samples, "tuples", grouped)
    return {"src_keygroup": _keys(samples, "src_keygroup", first),
            "dst_keygroup": _keys(samples, "dst_keygroup", first),
            "tuples": tuples,
            "bytes": _sum(samples, "bytes", grouped),
            "tuples_per_s": pc.divide(pc.multiply(tuples.cast(pa.float64()), 1000.0),
                                      period.period_ms)}


def _nodes(samples: pa.Table, grouped: _Groups, period: Period) -> dict[str, Any]:
    capacity = _keys(samples, "capacity", grouped.last_rows())
    cpu_ms = _sum(samples, "cpu_ms", grouped)
    return {"node": _keys(samples, "node", grouped.first_rows()),
            "capacity": capacity,
            "cpu_ms": cpu_ms,
            "utilisation_pct": pc.divide(pc.multiply(cpu_ms, 100.0),
                                         pc.multiply(capacity, period.period_ms)),
            "samples": grouped.counts()}


def _facet(kind: str, table: Table, files: list[Path], period: Period) -> pa.Table:
    """A facet dataset's rows inside the window, as they are (`facet_frames`)."""
    rows = _window(_read(FACET_SCHEMAS[kind], files, period, dictionary=False), period)
    columns = {c: rows.column(c) for c in table.columns if c not in _STAMP}
    return _stamped(period, table, columns, rows.num_rows)
