"""The suites' set rules with a run-time parameter, checked once over whole columns.

A rule such as `src_keygroup` in the job's key groups takes its set at run time
(``{"$PARAMETER": "expected_keygroups"}``: 10⁴–10⁵ ids for a large job). Great Expectations
(1.x, pydantic v1 models) deep-copies that parameter into every expectation configuration and
every metric it resolves, so its cost grows as units × rules × metrics, not with the rows
checked: at 10⁴ key groups it was most of the validate stage. Here each such rule is one hash
lookup per row (Arrow's `is_in` on string columns, pandas' `isin` otherwise: the very call GE's
pandas metric makes) and one set difference over the column's distinct values, and it yields
the `Failure` GE's result would have been translated into (jobs/validate/ge.py `failure_of`):
the same count, the same first rows (row key, then the bad value) and the same missing ids. GE
keeps every other rule (jobs/validate/ge.py), on the witness rows when the table is Arrow.

The rules taken here (`set_rules`), with GE 1.24's semantics (nulls are never offending):

- ``expect_column_values_to_be_in_set``: the rows whose non-null value is not in the set;
- ``expect_column_distinct_values_to_equal_set``: the distinct non-null values outside the set
  (sorted, as GE lists them) and the set's values absent from the column;
- ``expect_column_distinct_values_to_contain_set``: the set's values absent from the column.

A rule with any other argument (``mostly``, a row condition) or a literal set stays with GE. A
column that is absent or holds times (GE coerces the set to times there) is not judged here:
the caller hands the table to GE whole (`judged_here`), so its report stays GE's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from jobs.validate.report import MAX_ROWS, Failure, jsonable

__all__ = ["SET_TYPES", "SetRule", "check", "judged_here", "set_rules", "without_set_rules"]

IN_SET = "expect_column_values_to_be_in_set"
EQUAL_SET = "expect_column_distinct_values_to_equal_set"
CONTAIN_SET = "expect_column_distinct_values_to_contain_set"
SET_TYPES = frozenset({IN_SET, EQUAL_SET, CONTAIN_SET})
_DISTINCT_LISTED = 20  # GE's MAX_DISTINCT_VALUES: offending distinct values it lists

Column: TypeAlias = "pd.Series | pa.ChunkedArray | pa.Array"


@dataclass(frozen=True)
class SetRule:
    """One set rule of a suite: its position (the report's order), type, column and parameter."""

    position: int
    kind: str
    column: str
    parameter: str
    rule: str  # the rule in words (meta.rule)
    fix: str  # meta.fix, else the suite's fix


def _parameter(rule: Mapping[str, Any]) -> tuple[str, str] | None:
    """(column, parameter name) when `rule` is a set rule judged here, else None."""
    kwargs = rule.get("kwargs") or {}
    value_set = kwargs.get("value_set")
    if (rule.get("type") not in SET_TYPES or set(kwargs) != {"column", "value_set"}
            or not isinstance(value_set, Mapping) or set(value_set) != {"$PARAMETER"}
            or not isinstance(kwargs["column"], str)):
        return None
    return kwargs["column"], str(value_set["$PARAMETER"])


def set_rules(spec: Mapping[str, Any]) -> tuple[SetRule, ...]:
    """The set rules with a run-time parameter of a suite JSON (schemas/expectations/)."""
    fix = str((spec.get("meta") or {}).get("fix", ""))
    found = []
    for position, rule in enumerate(spec.get("expectations", ())):
        taken = _parameter(rule)
        if taken is not None:
            meta = rule.get("meta") or {}
            found.append(SetRule(position, str(rule["type"]), taken[0], taken[1],
                                 str(meta.get("rule", rule["type"])), str(meta.get("fix", fix))))
    return tuple(found)


def without_set_rules(spec: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[int, ...]]:
    """The suite without its set rules (what GE keeps), and the kept rules' positions."""
    kept = [(i, rule) for i, rule in enumerate(spec.get("expectations", ()))
            if _parameter(rule) is None]
    return {**spec, "expectations": [r for _, r in kept]}, tuple(i for i, _ in kept)


def judged_here(rules: Sequence[SetRule], data: pd.DataFrame | pa.Table,
                params: Mapping[str, Any]) -> bool:
    """Whether every rule's column is present and not of times, and its parameter given."""
    names = data.columns if isinstance(data, pd.DataFrame) else data.column_names
    for rule in rules:
        if rule.column not in names or rule.parameter not in params:
            return False
        column = data[rule.column]
        if isinstance(column, pd.Series):
            if column.dtype.kind in "mM" or isinstance(column.dtype, pd.DatetimeTZDtype):
                return False
        elif pa.types.is_temporal(column.type):
            return False
    return True


def check(table: str, rule: SetRule, data: pd.DataFrame | pa.Table, keys: Sequence[str],
          values: Sequence[str]) -> Failure | None:
    """The failure of `rule` on `data`, a period of `table` (None when the rule holds); `keys`
    (the table's row key in `data`) name an offending row, else its row label."""
    column = data[rule.column]
    if rule.kind == IN_SET:
        return _in_set(table, rule, data, column, keys, values)
    distinct = _distinct(column)
    wanted = set(values)
    outside = distinct - wanted
    absent = wanted - distinct
    if rule.kind == EQUAL_SET and not outside and not absent:
        return None
    if rule.kind == CONTAIN_SET and not absent:
        return None
    present = {str(v) for v in distinct}
    missing = tuple(str(v) for v in sorted(values, key=str) if str(v) not in present)
    if rule.kind == CONTAIN_SET:
        return _failure(table, rule, 0, (), missing)
    listed: list[Any] = list(outside)
    with contextlib.suppress(TypeError):  # GE lists values of mixed types unsorted
        listed = sorted(listed)
    rows = tuple({rule.column: v} for v in listed[:_DISTINCT_LISTED][:MAX_ROWS])
    return _failure(table, rule, len(outside), rows, missing)


def _failure(table: str, rule: SetRule, count: int, rows: Sequence[Mapping[str, Any]],
             missing: tuple[str, ...]) -> Failure:
    return Failure(table=table, expectation=rule.kind, column=rule.column, rule=rule.rule,
                   unexpected_count=count, rows=tuple(jsonable(r) for r in rows),
                   missing=missing, fix=rule.fix)


def _strings(column: Column) -> bool:
    return not isinstance(column, pd.Series) and (
        pa.types.is_string(column.type) or pa.types.is_large_string(column.type))


def _series(column: Column) -> pd.Series:
    if isinstance(column, pd.Series):
        return column
    return column.to_pandas(coerce_temporal_nanoseconds=True)


def _distinct(column: Column) -> set[Any]:
    """The column's distinct non-null values (GE: ``set(column.dropna().unique())``)."""
    if _strings(column):
        return set(pc.unique(pc.drop_null(column)).to_pylist())
    return set(_series(column).dropna().unique())


def _offending(column: Column, values: Sequence[str]) -> np.ndarray:
    """Whether each row's value is not null and not in `values` (GE's pandas `isin`)."""
    if _strings(column):
        member = pc.is_in(column, value_set=pa.array(list(values), column.type))
        valid = pc.is_valid(column)
        return np.asarray(pc.and_(valid, pc.invert(pc.fill_null(member, False))),
                          dtype=bool)
    series = _series(column)
    return np.asarray(series.notna().to_numpy(dtype=bool)
                      & ~series.isin(list(values)).to_numpy(dtype=bool))


def _in_set(table: str, rule: SetRule, data: pd.DataFrame | pa.Table, column: Column,
            keys: Sequence[str], values: Sequence[str]) -> Failure | None:
    bad = _offending(column, values)
    count = int(bad.sum())
    if not count:
        return None
    first = np.flatnonzero(bad)[:MAX_ROWS]
    named = [k for k in keys if k != rule.column]
    if isinstance(data, pd.DataFrame):
        few = data.iloc[first]
        index = list(few.index)
    else:
        few = data.take(pa.array(first, pa.int64())).to_pandas(coerce_temporal_nanoseconds=True)
        index = [int(i) for i in first]
    rows: list[dict[str, Any]] = []
    for at, label in enumerate(index):
        head = {k: few[k].iloc[at] for k in named} if keys else {"row": label}
        rows.append({**head, rule.column: few[rule.column].iloc[at]})
    return _failure(table, rule, count, rows, ())
