"""`quote` (jobs/lake/api.py): one spelling of a string that delta-rs (DataFusion) and Spark SQL
both read back exactly, as a value set by an update and as a predicate's operand, for hostile
strings (quotes, backslashes, SQL comment marks, newlines, unicode, Spark's `${var}` and the
lake's `{table}` placeholders)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.lake import Lake, Scope
from jobs.lake.api import quote
from jobs.lake.delta_rs import DeltaRsLake
from jobs.lake.spark_sql import SparkLake
from schemas.config import Paths
from schemas.tables import PLANS

JOB, END = "quoted", datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
HOSTILE = ("it's", "'", "''", "\\", "\\'", "a\\\\'b'\\", "O'Brien \\n not a newline",
           "line one\nline two\r\n\ttab", "-- not a comment /* nor this */ ; DROP TABLE plans",
           "’quotes’ «»  é 中文 😀 \u0000 end", "${var} %s {plans} \\u0041 $1 {", "")


@pytest.fixture
def lake_home(tmp_path: Path) -> Paths:
    """A home whose tables delta-rs created (no JVM needed; Spark reads them alike)."""
    paths = Paths(tmp_path / "home")
    DeltaRsLake(paths).ensure_tables()
    return paths

AWKWARD = ("'", "''", "\\", "\\'", "{plans}", "${x}", "\n", "--", "😀")


def _plan_row(plan_id: str) -> dict[str, Any]:
    return {"job_id": JOB, "period_end": END, "plan_id": plan_id, "status": "planned",
            "message": "", "plan_json": "{}"}


def _round_trip(lake: Lake, texts: list[str]) -> dict[str, str]:
    """Each text as a plan id (written by Arrow), then as that plan's message, set by an
    update whose predicate names the plan id through `quote`; read back by a query that
    also names it through `quote`."""
    lake.write_records(PLANS, [_plan_row(f"p{i}:{t}") for i, t in enumerate(texts)],
                       Scope(JOB, END))
    for i, text in enumerate(texts):
        lake.update(PLANS, {"message": quote(text)}, Scope(JOB, END, f"p{i}:{text}"))
    back: dict[str, str] = {}
    for i, text in enumerate(texts):
        (row,) = lake.records(f"SELECT message FROM {{plans}} WHERE job_id = {quote(JOB)} AND "
                              f"plan_id = {quote(f'p{i}:{text}')}")
        back[text] = row["message"]
    return back


def test_a_plain_string_stays_one_literal_and_the_awkward_characters_become_code_points() -> None:
    assert quote("demo") == "'demo'" and quote("") == "''"
    assert quote("it's") == "('it' || chr(39) || 's')"
    assert quote("a\\b") == "('a' || chr(92) || 'b')"
    part = r"(?:'[^'\\{$]*'|chr\((?:39|92|123|36)\))"  # no literal holds any of the four
    for text in HOSTILE:
        assert re.fullmatch(rf"{part}|\({part}(?: \|\| {part})+\)", quote(text), re.S), text


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.one_of(st.characters(codec="utf-8"), st.sampled_from(AWKWARD)),
                         max_size=12).map("".join), min_size=1, max_size=4, unique=True))
def test_delta_rs_reads_back_any_string_exactly(lake_home: Paths, texts: list[str]) -> None:
    assert _round_trip(DeltaRsLake(lake_home), texts) == {t: t for t in texts}


@pytest.mark.spark
def test_spark_and_delta_rs_read_back_hostile_strings_exactly_and_alike(
        spark: Any, lake_home: Paths) -> None:
    by_spark = _round_trip(SparkLake(lake_home, spark), list(HOSTILE))
    assert by_spark == {t: t for t in HOSTILE}
    native = DeltaRsLake(lake_home)  # the other engine reads Spark's rows by the same spelling
    assert _round_trip(native, list(HOSTILE)) == by_spark
