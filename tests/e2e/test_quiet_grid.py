"""The e2e modules' configurations, without Airflow: the jobs whose runs the tests make by hand
(backfill, trigger, clear) get no scheduled run between the tests' steps, whatever the clock says
when the Airflow starts, and a job is the same alone as in the shared Airflow's jobs.toml."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from reconf.timetable import next_period_end
from schemas.config import JobConfig
from schemas.config.load import load_jobs

from . import test_deferral_race, test_scheduler, test_scheduler_approval, test_scheduler_load
from .scheduler_kit import HORIZON, SHARED, _stamp, quiet_start

#: what an hourly grid from a fixed date with catchup_periods = 0 was (its hazard: a scheduled
#: run at the next HH:00)
HOURLY = """\
[jobs.fill]
spl = "1h"
start_date = 2026-01-01T00:00:00Z
catchup_periods = 0
"""
CLOCKS = st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2100, 1, 1),
                      timezones=st.just(UTC))
JUST_BEFORE_THE_HOUR = datetime(2026, 11, 26, 10, 59, 50, tzinfo=UTC)


def _jobs(tmp: Path, text: str) -> dict[str, JobConfig]:
    path = tmp / "jobs.toml"
    path.write_text(text)
    return load_jobs(path)


def _first_scheduled(job: JobConfig, now: datetime) -> datetime | None:
    """The period end of the first scheduled run of the job's DAG unpaused at `now` or later
    (the timetable's next run after no run; later unpausing only moves it later)."""
    return next_period_end(start=job.start_date, spl=job.spl, last=None, now=now,
                           catchup_periods=job.catchup_periods)


def _quiet(job: JobConfig, now: datetime) -> bool:
    first = _first_scheduled(job, now)
    return first is None or first > now + HORIZON


def _configs(now: datetime) -> list[str]:
    """Each Airflow's jobs.toml as the e2e fixtures write it when started at `now`."""
    race = test_deferral_race.CONFIG.format(start=_stamp(quiet_start(now)))
    return [SHARED.config(now.replace(second=0, microsecond=0)), race]


@given(now=CLOCKS)
@example(now=JUST_BEFORE_THE_HOUR)
def test_jobs_run_by_hand_get_no_scheduled_run_within_the_horizon(
        tmp_path_factory: pytest.TempPathFactory, now: datetime) -> None:
    tmp = tmp_path_factory.mktemp("quiet")
    # every module sharing the Airflow is imported above, so the set does not depend on which
    # test modules this pytest run collected
    by_hand = {"fill", "demo", "gate", "race", test_scheduler_load.BUSY, *test_scheduler_load.JOBS}
    seen: set[str] = set()
    for text in _configs(now):
        for job in _jobs(tmp, text).values():
            if job.catchup_periods == 0:  # the jobs the tests run by hand
                assert _quiet(job, now), (job.job_id, now, _first_scheduled(job, now))
                assert quiet_start(now) + 9 * job.spl < now  # the periods the tests use ended
                seen.add(job.job_id)
    race = _jobs(tmp, _configs(now)[1])["race"]  # its oldest period is still waited for
    assert race.landing_wait is not None
    assert quiet_start(now) + 7 * race.spl + race.landing_wait > now + HORIZON
    assert seen == by_hand


def test_the_check_finds_the_hourly_grids_hazard(tmp_path: Path) -> None:
    (fill,) = _jobs(tmp_path, HOURLY).values()
    assert not _quiet(fill, JUST_BEFORE_THE_HOUR)  # a run at 11:00, between the tests' steps
    assert _first_scheduled(fill, JUST_BEFORE_THE_HOUR) == datetime(2026, 11, 26, 11, tzinfo=UTC)


def test_the_approval_job_is_the_same_alone_and_in_the_shared_airflow(tmp_path: Path) -> None:
    now = JUST_BEFORE_THE_HOUR
    shared = _jobs(tmp_path, SHARED.config(now))
    alone = _jobs(tmp_path, test_scheduler_approval.CONFIG.format(
        quiet=_stamp(quiet_start(now)), timeout=test_scheduler_approval.TIMEOUT_S))
    assert shared["gate"] == alone["gate"]
    assert {"tick", "late", "fill", "mend", "demo", "gate"} <= set(shared)
    assert test_scheduler.__name__ in SHARED.shares


def test_the_modules_sharing_an_airflow_land_on_one_xdist_worker(
        pytestconfig: pytest.Config) -> None:
    """Every module registered with SHARED is in one xdist group (tests/conftest.py), so one
    worker starts the Airflow once; the deferral race, with its slowed scheduler, is not."""
    root = Path(str(pytestconfig.rootpath))
    (conftest,) = [p for p in pytestconfig.pluginmanager.get_plugins()
                   if getattr(p, "__file__", None) == str(root / "tests" / "conftest.py")]

    def group(module: str) -> str:
        path = Path(str(sys.modules[module].__file__)).relative_to(root)
        return str(conftest._group(f"{path.as_posix()}::test"))

    groups = {group(name) for name in SHARED.shares}
    assert len(SHARED.shares) >= 2 and len(groups) == 1, groups
    assert group(test_deferral_race.__name__) not in groups
