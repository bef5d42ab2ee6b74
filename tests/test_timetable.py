"""The DAGs' period-grid timetable (reconf/timetable.py) and its per-job settings.

Properties of the next run's period end for every start, SPL, previous run, clock and catch-up N;
the Airflow side (serialised and deserialised as the scheduler does, a backfill's enumeration);
the config fields `catchup_periods` and `landing_timeout` checked at load. The scheduler itself
runs the timetable in tests/e2e/test_scheduler.py.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

os.environ.setdefault("AIRFLOW_HOME", str(Path(__file__).resolve().parents[1] / ".reconf" / "test-airflow"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__PLUGINS_FOLDER",
                      str(Path(__file__).resolve().parents[1] / "infra" / "airflow_plugins"))

from reconf.timetable import PeriodGridTimetable, next_period_end
from schemas.config import read_jobs

T0 = datetime(2026, 1, 1, tzinfo=UTC)
starts = st.integers(0, 10**6).map(lambda s: T0 + timedelta(seconds=s))
spls = st.integers(1, 7200).map(lambda s: timedelta(seconds=s))
offsets = st.integers(-10**5, 10**7).map(lambda s: timedelta(seconds=s, microseconds=s % 7 * 13))


def _on_grid(start: datetime, spl: timedelta, end: datetime) -> bool:
    return end > start and (end - start) % spl == timedelta(0)


@settings(max_examples=400, deadline=None)
@given(start=starts, spl=spls, now_off=offsets, last_k=st.none() | st.integers(1, 10**4),
       n=st.none() | st.integers(0, 50))
def test_the_next_run_is_on_the_grid_after_the_last_and_keeps_the_newest_n(
    start: datetime, spl: timedelta, now_off: timedelta, last_k: int | None, n: int | None
) -> None:
    now = start + now_off
    last = None if last_k is None else start + last_k * spl
    end = next_period_end(start=start, spl=spl, last=last, now=now, catchup_periods=n)
    assert end is not None and _on_grid(start, spl, end)
    if last is not None:
        assert end > last
    plain = last + spl if last is not None else start + spl  # every period, one by one
    if n is None:  # a backfill's enumeration: never skips a period
        assert end == plain
        return
    if n == 0:
        assert end > now and (end == plain or end - spl <= now)  # the first period not yet ended
        return
    assert end == plain or end <= now  # a skip lands on a period that has ended
    if end != plain:  # periods were skipped: exactly the newest n that have ended remain
        assert end + (n - 1) * spl <= now < end + n * spl


def test_unpausing_runs_the_newest_ended_period_then_every_period() -> None:
    spl = timedelta(minutes=5)
    now = datetime(2026, 11, 25, 19, 48, 11, 760000, tzinfo=UTC)  # the unpause moment
    first = next_period_end(start=T0, spl=spl, last=None, now=now, catchup_periods=1)
    assert first == datetime(2026, 11, 25, 19, 45, tzinfo=UTC)
    second = next_period_end(start=T0, spl=spl, last=first, now=now, catchup_periods=1)
    assert second == datetime(2026, 11, 25, 19, 50, tzinfo=UTC)
    # after a day's pause with N = 3: the newest three ended periods, not 288
    later = now + timedelta(days=1)
    resumed = next_period_end(start=T0, spl=spl, last=second, now=later, catchup_periods=3)
    assert resumed == datetime(2026, 11, 26, 19, 35, tzinfo=UTC)
    assert next_period_end(start=T0, spl=spl, last=second, now=later, catchup_periods=0) == \
        datetime(2026, 11, 26, 19, 50, tzinfo=UTC)


def test_the_scheduler_reads_back_the_same_timetable_and_backfills_align() -> None:
    import pendulum
    from airflow.serialization.decoders import decode_timetable
    from airflow.serialization.encoders import encode_timetable
    from airflow.timetables.base import DataInterval, TimeRestriction

    timetable = PeriodGridTimetable(T0, timedelta(minutes=5), 2)
    back = decode_timetable(encode_timetable(timetable))  # needs the plugin's registration
    assert back == timetable and back.summary == "every 0:05:00 (period grid)"
    # a backfill from 00:07 to 00:20: the grid points 00:10, 00:15, 00:20, logical date = end
    restriction = TimeRestriction(pendulum.datetime(2026, 1, 1, 0, 7), pendulum.datetime(2026, 1, 1, 0, 20),
                                  catchup=True)
    info, ends = None, []
    while (info := back.next_dagrun_info(last_automated_data_interval=info and info.data_interval,
                                         restriction=restriction)) is not None:
        assert info.data_interval is not None
        assert info.logical_date == info.data_interval.end == info.run_after
        ends.append(info.logical_date.strftime("%H:%M"))
    assert ends == ["00:10", "00:15", "00:20"]
    manual = back.infer_manual_data_interval(run_after=pendulum.datetime(2026, 1, 1, 0, 10))
    assert manual == DataInterval.exact(pendulum.datetime(2026, 1, 1, 0, 10))


def _job_error(tmp_path: Path, fields: str) -> str:
    config = tmp_path / "jobs.toml"
    config.write_text(f'[defaults]\nspl = "5m"\n[jobs.j]\n{fields}\n')
    loaded = read_jobs(config)
    assert "j" in loaded.errors, loaded.jobs
    return str(loaded.errors["j"])


def test_the_schedule_settings_are_checked_at_load(tmp_path: Path) -> None:
    config = tmp_path / "jobs.toml"
    config.write_text('[defaults]\nspl = "5m"\n[jobs.a]\n[jobs.b]\ncatchup_periods = 0\n'
                      'landing_timeout = "90s"\n')
    jobs = read_jobs(config).jobs
    assert (jobs["a"].catchup_periods, jobs["a"].landing_wait) == (1, timedelta(minutes=5))
    assert (jobs["b"].catchup_periods, jobs["b"].landing_wait) == (0, timedelta(seconds=90))
    assert "jobs.j.catchup_periods: must be a whole number of periods from 0 to 1000" in \
        _job_error(tmp_path, "catchup_periods = -1")
    assert "got 1.5" in _job_error(tmp_path, "catchup_periods = 1.5")
    assert "got True" in _job_error(tmp_path, "catchup_periods = true")
    assert "jobs.j.landing_timeout: must be a positive duration" in \
        _job_error(tmp_path, 'landing_timeout = "0s"')
    message = _job_error(tmp_path, 'landing_timeout = "2h"')
    assert "jobs.j.landing_timeout: '2h' is more than 10 periods" in message


@pytest.mark.parametrize("bad", [dict(spl=timedelta(0)), dict(catchup_periods=-1)])
def test_the_timetable_refuses_nonsense(bad: dict[str, object]) -> None:
    kwargs: dict[str, object] = {"start": T0, "spl": timedelta(minutes=5), "catchup_periods": 1, **bad}
    with pytest.raises(ValueError, match="PeriodGridTimetable"):
        PeriodGridTimetable(**kwargs)  # type: ignore[arg-type]
