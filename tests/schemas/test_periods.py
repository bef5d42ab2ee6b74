"""Period ends: parsing round-trips and the job's SPL grid, for all inputs (hypothesis)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.config import JobConfig
from schemas.landing import format_period_end, parse_period_end
from schemas.periods import (
    FUTURE_TOLERANCE,
    LAST_STORABLE,
    PeriodError,
    check_period_end,
    nearest_period_ends,
)

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
spls = st.integers(min_value=1, max_value=24 * 3600).map(lambda s: timedelta(seconds=s))
starts = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2026, 1, 1),
                      timezones=st.just(UTC)).map(lambda d: d.replace(microsecond=0))


def _job(spl: timedelta, start: datetime) -> JobConfig:
    return JobConfig(job_id="p", spl=spl, start_date=start)


@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9998, 12, 31),
                    timezones=st.just(UTC)).map(lambda d: d.replace(microsecond=0)))
def test_format_and_parse_round_trip(instant: datetime) -> None:
    text = format_period_end(instant)
    assert parse_period_end(text) == instant
    assert format_period_end(parse_period_end(text)) == text


@given(spls, starts, st.integers(min_value=1, max_value=10_000))
def test_every_grid_point_up_to_now_is_accepted(spl: timedelta, start: datetime, k: int) -> None:
    end = start + k * spl
    if end > NOW:
        return
    assert check_period_end(_job(spl, start), end, now=NOW) == end


@given(spls, starts, st.integers(min_value=1, max_value=10_000),
       st.integers(min_value=1, max_value=24 * 3600 - 1))
def test_off_grid_ends_are_refused_naming_both_neighbours(
    spl: timedelta, start: datetime, k: int, offset_s: int
) -> None:
    offset = timedelta(seconds=offset_s % spl.total_seconds() or 1)
    if offset >= spl:
        return
    end = start + k * spl + offset
    if end > NOW:
        return
    with pytest.raises(PeriodError) as caught:
        check_period_end(_job(spl, start), end, now=NOW)
    below, above = nearest_period_ends(_job(spl, start), end)
    assert below < end < above and above - below == spl
    assert format_period_end(below) in (caught.value.fix or "")
    assert format_period_end(above) in (caught.value.fix or "")
    assert "not on the job's period grid" in caught.value.what


@given(spls, starts, st.integers(min_value=0, max_value=10_000))
def test_ends_at_or_before_the_start_are_refused(spl: timedelta, start: datetime, k: int) -> None:
    with pytest.raises(PeriodError, match="not after the job's start date"):
        check_period_end(_job(spl, start), start - k * spl, now=NOW)


@given(st.integers(min_value=1, max_value=10**6))
def test_future_ends_beyond_the_tolerance_are_refused(minutes: int) -> None:
    job = _job(timedelta(minutes=1), datetime(2026, 1, 1, tzinfo=UTC))
    end = NOW.replace(second=0) + FUTURE_TOLERANCE + timedelta(minutes=minutes)
    if end >= LAST_STORABLE:
        return
    with pytest.raises(PeriodError, match="in the future") as caught:
        check_period_end(job, end, now=NOW)
    assert format_period_end(NOW) in (caught.value.fix or "")  # NOW is on this job's grid


def test_year_2100_and_2999_are_refused_with_a_message_not_a_cast_error() -> None:
    job = _job(timedelta(minutes=5), datetime(2026, 1, 1, tzinfo=UTC))
    with pytest.raises(PeriodError, match="in the future"):
        check_period_end(job, datetime(2100, 1, 1, tzinfo=UTC), now=NOW)
    with pytest.raises(PeriodError, match="beyond what reconf can store"):
        check_period_end(job, datetime(2999, 1, 1, tzinfo=UTC), now=NOW)


def test_a_period_end_within_the_clock_tolerance_is_accepted() -> None:
    job = _job(timedelta(minutes=1), datetime(2026, 1, 1, tzinfo=UTC))
    assert check_period_end(job, NOW + FUTURE_TOLERANCE, now=NOW) == NOW + FUTURE_TOLERANCE
