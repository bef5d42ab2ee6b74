"""A validation's verdict: the broken rules (`Failure`), each naming its table, column, offending
rows and fix, and the report (`ValidationReport`) the validate stage writes and MLflow logs.

Kept apart from the checks (GE in jobs/validate/ge.py, the vectorised set rules in
jobs/validate/sets.py) so both build the very same records.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MAX_ROWS", "Failure", "ValidationReport", "jsonable"]

MAX_ROWS = 10  # offending rows kept per failure: enough to act on, small enough to print


@dataclass(frozen=True)
class Failure:
    """One broken expectation: where it broke, why, and which rows broke it."""

    table: str
    expectation: str  # GE expectation type, e.g. "expect_column_values_to_be_between"
    column: str | None  # column(s) checked; None for table-level rules
    rule: str  # the rule in words (the expectation's meta.rule in the suite JSON)
    unexpected_count: int  # offending rows (or distinct values, for set rules)
    rows: tuple[dict[str, Any], ...] = ()  # up to MAX_ROWS: row key + bad value
    missing: tuple[str, ...] = ()  # expected values absent (key groups, columns)
    fix: str = ""
    error: str | None = None  # GE could not evaluate the rule (e.g. column absent)


@dataclass(frozen=True)
class ValidationReport:
    """The verdict on one period; ``to_dict`` is logged as an MLflow artifact."""

    success: bool
    failures: tuple[Failure, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """Plain, strict-JSON data (non-finite floats are rendered as strings)."""
        return {
            "success": self.success,
            "failure_count": len(self.failures),
            "failures": [jsonable(asdict(f)) for f in self.failures],
        }

    def summary(self) -> str:
        """A message for whoever is on call: what failed, where, which rows, how to fix it."""
        if self.success:
            return "validate: the period's stats passed every expectation."
        tables = dict.fromkeys(f.table for f in self.failures)
        lines = [
            f"validate: the period's stats FAILED {len(self.failures)} expectation(s) "
            f"in {', '.join(tables)}; planning is stopped for this cycle."
        ]
        for f in self.failures:
            where = f"{f.table}.{f.column}" if f.column else f.table
            lines.append(f"- {where}: {f.rule} [{f.expectation}]")
            if f.error:
                lines.append(f"    could not evaluate: {f.error}")
            if f.missing:
                shown = ", ".join(f.missing[:MAX_ROWS])
                more = f" (+{len(f.missing) - MAX_ROWS} more)" if len(f.missing) > MAX_ROWS else ""
                lines.append(f"    missing ({len(f.missing)}): {shown}{more}")
            if f.unexpected_count:
                lines.append(f"    {f.unexpected_count} offending value(s)/row(s), e.g.:")
                lines.extend(f"      {_row_text(r)}" for r in f.rows)
        fixes = dict.fromkeys(f.fix for f in self.failures if f.fix)
        lines.append("How to fix: " + "; ".join(fixes) + "." if fixes else "")
        return "\n".join(line for line in lines if line)


def jsonable(value: Any) -> Any:
    """Make GE/pandas values strict-JSON: numpy scalars, NaN/NaT (None), inf (string), times."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NaT:
        return None
    if isinstance(value, float):
        return value if math.isfinite(value) else (None if math.isnan(value) else str(value))
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, bool | int | str):
        return value
    return str(value)


def _row_text(row: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in row.items())
