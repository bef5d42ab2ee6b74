"""The plan-id grammar (schemas/attempts.py): every id made parses back to its parts.

The parts range over what the config allows: a job id by its rule (schemas/config/rules.py), any
period end (an aware instant, stored to the second in UTC), any attempt or version number.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.attempts import (
    OWN_VERSION_KINDS,
    PlanId,
    PlanStatus,
    attempt_of,
    is_own_version,
    own_version_id,
    parse_plan_id,
    plan_id,
)
from schemas.config.rules import _JOB_ID
from schemas.config.rules import job_id as job_id_rule

JOB_IDS = st.from_regex(_JOB_ID, fullmatch=True)
ZONES = st.one_of(st.just(UTC), st.integers(-23 * 60, 23 * 60).map(
    lambda m: timezone(timedelta(minutes=m))))
PERIODS = st.datetimes(min_value=datetime(1000, 1, 2), max_value=datetime(9998, 12, 30),
                       timezones=ZONES)
NUMBERS = st.integers(1, 10**12)


def _stored(period_end: datetime) -> datetime:
    """The instant an id holds: UTC, to the second."""
    return period_end.astimezone(UTC).replace(microsecond=0)


@given(JOB_IDS, PERIODS, NUMBERS, st.booleans())
def test_an_attempt_id_parses_back_to_its_parts(job_id, period_end, attempt, dry_run):
    assert job_id_rule(job_id) == job_id  # the config would accept the job
    pid = plan_id(job_id, period_end, attempt, dry_run=dry_run)
    parsed = parse_plan_id(pid)
    assert parsed == PlanId(job_id, _stored(period_end), attempt, dry_run)
    assert str(parsed) == pid
    assert attempt_of(pid) == attempt and not is_own_version(pid)


@given(JOB_IDS, PERIODS, st.sampled_from(OWN_VERSION_KINDS), NUMBERS)
def test_an_own_version_id_parses_back_to_its_parts(job_id, period_end, kind, version):
    pid = own_version_id(job_id, period_end, kind, version)
    parsed = parse_plan_id(pid)
    assert parsed == PlanId(job_id, _stored(period_end), kind=kind, version=version)
    assert str(parsed) == pid
    assert is_own_version(pid) and attempt_of(pid) == 1


@pytest.mark.parametrize("text", [
    "", "job", "@2026-01-01T00:05:00Z", "job@", "job@yesterday", "job@2026-01-01T00:05:00Z#",
    "job@2026-01-01T00:05:00Z#x", "job@2026-01-01T00:05:00Z#dry-", "job@2026-01-01T00:05:00Z#-v3",
    "job@2026-01-01T00:05:00Z#rollback-v", "job@2026-01-01T00:05:00Z#undo-v3",
    "job@2026-01-01T00:05:00Z#٣",
])
def test_a_string_of_another_shape_is_no_plan_id(text):
    with pytest.raises(ValueError):
        parse_plan_id(text)


def test_the_stored_values_never_change():
    """Delta rows, MLflow tags and older lakes hold these words."""
    assert {s.name: str(s) for s in PlanStatus} == {
        "PLANNED": "planned", "PUBLISHED": "published", "NOT_PUBLISHED": "not_published",
        "HISTORICAL": "historical", "STALE": "stale", "REJECTED": "rejected",
        "TIMED_OUT": "timed_out", "ALREADY_PUBLISHED": "already_published"}
    assert f"{PlanStatus.NOT_PUBLISHED}" == "not_published"
    assert type(str(PlanStatus.PUBLISHED)) is str
