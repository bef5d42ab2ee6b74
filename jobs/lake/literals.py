"""SQL literals that both lake engines (DataFusion in delta-rs, Spark SQL) read back alike: a
string (`quote`) and a UTC timestamp (`timestamp`). jobs/lake/api.py writes every question's SQL
with them; tests/jobs/test_lake_quote.py round-trips hostile strings through both engines."""

from __future__ import annotations

import re
from datetime import datetime

from schemas.landing import format_period_end

__all__ = ["quote", "timestamp"]

#: the characters a literal must not hold: the engines read `'` and `\\` differently, the lake's
#: queries name tables as `{table}`, and Spark substitutes `${var}` anywhere in a statement
_AWKWARD = re.compile(r"(['\\{$])")


def quote(value: str) -> str:
    """A SQL string expression that both engines read back as exactly `value`.

    Spark SQL reads a backslash in a literal as an escape (`'it\\'s'`, `'\\n'`); DataFusion
    (delta-rs) keeps it as it is and wants `''` for a quote. Spark also substitutes `${var}`
    anywhere in a statement (an unset one becomes nothing), and the lake's engines replace
    `{table}` anywhere in a query (jobs/lake/delta_rs.py, spark_sql.py). So the literals written
    here hold none of `'`, `\\`, `{`, `$`: each becomes `chr(<code point>)`, joined by `||`, which
    both engines evaluate alike (`'it' || chr(39) || 's'`). Everything else, newlines and any
    unicode included, stays inside the literal as typed; a plain string stays one literal.
    Job ids are validated, but never trust a string into SQL."""
    parts = [f"chr({ord(part)})" if _AWKWARD.fullmatch(part) else f"'{part}'"
             for part in _AWKWARD.split(value) if part]
    if len(parts) <= 1:
        return parts[0] if parts else "''"
    return "(" + " || ".join(parts) + ")"


def timestamp(moment: datetime) -> str:
    """A SQL timestamp literal (UTC, as every timestamp of the lake)."""
    return f"TIMESTAMP {quote(format_period_end(moment))}"
