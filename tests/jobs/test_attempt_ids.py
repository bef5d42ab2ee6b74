"""Plan ids of attempts (jobs/plan/attempts.py): each names its attempt, and numbering never repeats."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.errors import StageError
from jobs.plan.attempts import PeriodRecord, choose_attempt
from schemas.attempts import attempt_of, plan_id

JOB_IDS = st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True)
PERIODS = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2200, 1, 1),
                       timezones=st.just(UTC)).map(lambda t: t.replace(microsecond=0))


@given(JOB_IDS, PERIODS, st.integers(1, 10**6), st.booleans())
def test_an_attempt_id_names_its_attempt(job_id, period_end, attempt, dry_run):
    pid = plan_id(job_id, period_end, attempt, dry_run=dry_run)
    assert attempt_of(pid) == attempt
    assert pid.startswith(f"{job_id}@{period_end.strftime('%Y-%m-%dT%H:%M:%SZ')}")
    assert (pid == plan_id(job_id, period_end)) == (attempt == 1 and not dry_run)


@given(JOB_IDS, PERIODS, st.sets(st.integers(1, 50), max_size=8), st.integers(0, 60))
def test_the_next_attempt_is_above_every_recorded_one(job_id, period_end, recorded, logged):
    record = PeriodRecord(tuple(plan_id(job_id, period_end, n) for n in sorted(recorded)))
    after = record.next_attempt(logged)
    assert after > max([logged, *recorded])
    assert plan_id(job_id, period_end, after) not in record.attempts


def _row(pid: str, airflow_run: str | None = None) -> dict[str, str]:
    return {"plan_id": pid, "plan_json": '{"airflow_run_id": %s}' % (
        f'"{airflow_run}"' if airflow_run else "null")}


def test_publish_chooses_the_asked_plan_else_the_airflow_runs_else_the_newest():
    rows = [_row("j@T#3"), _row("j@T", "run-a"), _row("j@T#2", "run-b")]
    assert choose_attempt("j", "T", rows, None, None)["plan_id"] == "j@T#3"
    assert choose_attempt("j", "T", rows, None, "run-a")["plan_id"] == "j@T"
    assert choose_attempt("j", "T", rows, None, "run-z")["plan_id"] == "j@T#3"
    assert choose_attempt("j", "T", rows, "j@T#2", "run-a")["plan_id"] == "j@T#2"
    with pytest.raises(StageError, match="has no plan 'j@T#9'") as caught:
        choose_attempt("j", "T", rows, "j@T#9", None)
    assert "j@T, j@T#2, j@T#3" in caught.value.fix
