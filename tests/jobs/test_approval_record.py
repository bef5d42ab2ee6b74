"""The approval step's words and records, without Airflow (tests/e2e/test_scheduler_approval.py runs the
step through the scheduler): the request an approver reads, the audit's line of a decision, and
a reason of any text stored in the lake exactly as typed (quotes and backslashes included)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.approval import APPROVED, REJECTED, TIMED_OUT, Decision, request_text
from jobs.lake.api import quote


def test_a_decision_reads_as_the_audit_prints_it() -> None:
    assert Decision(REJECTED, "peak hour", "admin", "2026-01-01T00:12:00+00:00").line() == \
        "rejected by admin at 2026-01-01T00:12:00+00:00: peak hour"
    assert Decision(TIMED_OUT, "no answer within 1:00:00, rejected by default").line() == \
        "timed out: no answer within 1:00:00, rejected by default"
    assert Decision(APPROVED, "", "ops").line() == "approved by ops"


def test_the_request_names_the_plan_its_moves_and_the_timeout_without_a_what_if() -> None:
    planned = {"plan_id": "demo@2026-01-01T00:10:00Z", "migrations": 3,
               "summary": "plan demo@2026-01-01T00:10:00Z: milp (optimal) load distance 9.000 -> "
                          "2.000 (min, lower bound 2.000), 3 migrations, MLflow run r1",
               "mlflow_run_id": None, "mlflow_url": None}
    subject, body = request_text("demo", planned, "the what-if failed (OSError: disk)",
                                 timedelta(hours=1))
    assert subject == "Publish plan demo@2026-01-01T00:10:00Z? (3 migration(s))"
    assert body.startswith(f"**Plan** {planned['summary']}")
    assert "no comparison: the what-if failed (OSError: disk)" in body
    assert "With no answer within 1:00:00 the plan is rejected as *timed out*" in body


@settings(max_examples=25, deadline=None)
@given(st.text(max_size=40))
def test_any_reason_is_a_valid_literal_for_the_lake_and_reads_back(tmp_path_factory, text: str) -> None:
    from deltalake import DeltaTable, write_deltalake

    where = Path(tmp_path_factory.mktemp("plans"))
    write_deltalake(str(where), pa.table({"plan_id": ["p"], "message": [""]}))
    DeltaTable(str(where)).update(updates={"message": quote(text)}, predicate="plan_id = 'p'")
    (row,) = DeltaTable(str(where)).to_pyarrow_table().to_pylist()
    assert row["message"] == text
