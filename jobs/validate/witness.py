"""A period's witness rows: the few rows on which a suite fails exactly when it fails on all.

Great Expectations costs about a microsecond per row and rule, so a suite over the millions of
rows of a large job's `comm_stats` would cost seconds a period. Every rule of the stats suites
is either about the table's columns or decided row by row from the row's own value (not null, a
regex, a set, a range), or about repeated keys (unique, compound unique), or about the set of
distinct values. For each such rule a handful of rows decides it:

- not null: the rows whose value is null (NaN counts, as in pandas);
- a regex, a value set, the distinct values' set: the first row of each distinct value (the
  verdict depends on the value alone);
- a range (`between`): the rows of the column's minimum and maximum, and its nulls (a value
  outside [a, b] makes the minimum or the maximum fall outside);
- unique, compound unique: two rows of each repeated key (a repeat remains a repeat);
- the columns' set: the schema (kept whole).

The union of these rows (the *witnesses*, computed by Arrow's kernels, never as Python objects)
passes a suite exactly when the whole table does, so GE runs over O(units) rows instead of
O(edges). A suite with any other rule, or a `mostly` below 1 (a fraction of rows), gets no
witnesses (None): GE reads every row. When the witnesses fail, the caller runs the suite over
the whole table again, so a refusal names every offending row and count exactly as before
(jobs/validate/suites.py `validate_stats`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["DECIDED_BY", "witnesses"]

#: the rule types a witness set decides, and which witnesses each needs
DECIDED_BY: Mapping[str, str] = {
    "expect_table_columns_to_match_set": "schema",
    "expect_column_values_to_not_be_null": "nulls",
    "expect_column_values_to_match_regex": "distinct",
    "expect_column_values_to_be_in_set": "distinct",
    "expect_column_distinct_values_to_equal_set": "distinct",
    "expect_column_distinct_values_to_contain_set": "distinct",
    "expect_column_values_to_be_between": "extremes",
    "expect_column_values_to_be_unique": "repeats",
    "expect_compound_columns_to_be_unique": "repeats",
}
_INDEX = "__witness_row"


def witnesses(table: pa.Table, suite: Mapping[str, Any]) -> pa.Array | None:
    """The row numbers (ascending) of `table` that decide every rule of `suite` (a suite JSON of
    schemas/expectations/), or None when a rule is not one a witness set decides."""
    import pyarrow as pa

    needs: list[tuple[str, tuple[str, ...]]] = []
    for rule in suite.get("expectations", ()):
        kind = DECIDED_BY.get(str(rule.get("type")))
        kwargs = rule.get("kwargs") or {}
        if kind is None or float(kwargs.get("mostly", 1.0)) < 1.0:
            return None
        if kind == "schema":
            continue
        columns = tuple(kwargs.get("column_list") or (kwargs.get("column"),))
        if not all(isinstance(c, str) for c in columns):
            return None
        if any(c not in table.column_names for c in columns):
            return None  # GE reports the missing column: let it see the table as it is
        needs.append((kind, columns))
    numbered = table.append_column(_INDEX, pa.array(range(table.num_rows), pa.int64()))
    found: list[pa.Array] = []
    for kind, columns in dict.fromkeys(needs):
        found.append(_WITNESS[kind](numbered, columns))
    if not found:
        return pa.array([], pa.int64())
    import pyarrow.compute as pc

    return pc.unique(pa.chunked_array(found, pa.int64()).combine_chunks()).sort()


def _nulls(table: pa.Table, columns: tuple[str, ...]) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    column = table[columns[0]]
    missing = pc.is_null(column, nan_is_null=True) if _floating(column.type) else pc.is_null(column)
    return table[_INDEX].filter(missing).combine_chunks().cast(pa.int64())


def _distinct(table: pa.Table, columns: tuple[str, ...]) -> pa.Array:
    firsts = table.select([*columns, _INDEX]).group_by(list(columns), use_threads=False).aggregate(
        [(_INDEX, "min")])
    return firsts[f"{_INDEX}_min"].combine_chunks()


def _extremes(table: pa.Table, columns: tuple[str, ...]) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    column = table[columns[0]]
    if not (_floating(column.type) or pa.types.is_integer(column.type)):
        return _distinct(table, columns)  # not a number: each distinct value decides for itself
    rows = [_nulls(table, columns)]
    valid = table.filter(pc.invert(pc.is_null(column, nan_is_null=_floating(column.type))))
    if valid.num_rows:
        bounds = pc.min_max(valid[columns[0]])
        for end in ("min", "max"):
            at = pc.index(valid[columns[0]], bounds[end])
            rows.append(pa.array([valid[_INDEX][at.as_py()].as_py()], pa.int64()))
    return pa.chunked_array(rows, pa.int64()).combine_chunks()


def _repeats(table: pa.Table, columns: tuple[str, ...]) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    counted = table.select([*columns, _INDEX]).group_by(list(columns), use_threads=False).aggregate(
        [(_INDEX, "min"), (_INDEX, "max"), (_INDEX, "count")])
    repeated = counted.filter(pc.greater(counted[f"{_INDEX}_count"], 1))
    return pa.chunked_array([repeated[f"{_INDEX}_min"], repeated[f"{_INDEX}_max"]],
                            pa.int64()).combine_chunks()


def _floating(kind: pa.DataType) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_floating(kind))


_WITNESS = {"nulls": _nulls, "distinct": _distinct, "extremes": _extremes, "repeats": _repeats}
