"""The landing wait's trigger ends the task itself (reconf/landing_wait.py): success once the
marker is there, skipped at the deadline with the land message in the task's log; never a plain
event that resumes the task on a worker (the resumed attempt is what Airflow 3.3 can fail;
tests/e2e/test_deferral_race.py runs it through the scheduler)."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from airflow.triggers.base import TaskSkippedEvent, TaskSuccessEvent, TriggerEvent

from reconf.landing_wait import MAX_POLL_S, LandingTrigger, poll_delays, poll_interval


def _events(trigger: LandingTrigger) -> list[TriggerEvent]:
    async def collect() -> list[TriggerEvent]:
        return [event async for event in trigger.run()]

    return asyncio.run(asyncio.wait_for(collect(), timeout=30))


def test_a_landed_marker_ends_the_task_as_success(tmp_path: Path) -> None:
    marker = tmp_path / "_SUCCESS"
    marker.write_text("")
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    (event,) = _events(LandingTrigger(str(marker), later, 0.05, "never said"))
    assert isinstance(event, TaskSuccessEvent)


def test_a_marker_landing_while_it_waits_ends_the_task_at_the_next_look(tmp_path: Path) -> None:
    marker = tmp_path / "_SUCCESS"
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()

    async def land_then_wait() -> list[TriggerEvent]:
        async def land() -> None:
            await asyncio.sleep(0.2)
            marker.write_text("")

        landing = asyncio.create_task(land())
        events = [e async for e in LandingTrigger(str(marker), later, 0.05).run()]
        await landing
        return events

    (event,) = asyncio.run(asyncio.wait_for(land_then_wait(), timeout=30))
    assert isinstance(event, TaskSuccessEvent)


def test_the_deadline_skips_the_task_and_logs_the_land_message(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    past = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    with caplog.at_level(logging.WARNING):
        (event,) = _events(LandingTrigger(str(tmp_path / "_SUCCESS"), past, 0.05,
                                          "period X did not land; fix: land it"))
    assert isinstance(event, TaskSkippedEvent)
    # the trigger's logger is Airflow's (structlog: to stdout here, to the task's log in Airflow)
    assert "period X did not land; fix: land it" in caplog.text + capsys.readouterr().out


def test_the_trigger_serializes_what_it_needs(tmp_path: Path) -> None:
    trigger = LandingTrigger(str(tmp_path / "_SUCCESS"), "2026-01-01T00:00:00+00:00", 1.0, "m")
    path, kwargs = trigger.serialize()
    assert path == "reconf.landing_wait.LandingTrigger"
    again = LandingTrigger(**kwargs)
    assert (again.marker, again.deadline, again.poll_s, again.missed) == (
        trigger.marker, trigger.deadline, 1.0, "m")
    old = LandingTrigger(str(tmp_path), "2026-01-01T00:00:00+00:00", 1.0)  # an older release's
    assert old.missed == ""


def test_the_poll_backs_off_from_a_quarter_second_to_a_second_whatever_the_spl() -> None:
    assert poll_interval(timedelta(minutes=5)) == poll_interval(timedelta(hours=1)) == 1.0
    assert poll_interval(timedelta(seconds=10)) == 0.5
    assert poll_interval(timedelta(seconds=1)) == 0.25
    assert list(itertools.islice(poll_delays(1.0), 5)) == [0.25, 0.5, 1.0, 1.0, 1.0]
    # an older release serialized SPL/20 up to 15 s: it polls once a second all the same
    assert max(itertools.islice(poll_delays(15.0), 20)) == MAX_POLL_S
    assert list(itertools.islice(poll_delays(0.05), 3)) == [0.05, 0.05, 0.05]


@pytest.mark.parametrize("after_s", [0.3, 3.0])
def test_a_landing_is_noticed_within_two_seconds(tmp_path: Path, after_s: float) -> None:
    """A 5-minute job's trigger, its back-off at its start (0.3 s) or at its cap (3 s): the marker
    written then ends the task within 2 s, on a real event loop and a real file."""
    marker = tmp_path / "period_end=2026-01-01T00:05:00Z" / "_SUCCESS"
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    trigger = LandingTrigger(str(marker), later, poll_interval(timedelta(minutes=5)))

    async def land_and_time() -> tuple[TriggerEvent, float]:
        landed_at: list[float] = []

        async def land() -> None:
            await asyncio.sleep(after_s)
            marker.parent.mkdir()
            marker.write_text("")
            landed_at.append(time.monotonic())

        landing = asyncio.create_task(land())
        events = [e async for e in trigger.run()]
        fired_at = time.monotonic()
        await landing
        return events[0], fired_at - landed_at[0]

    event, noticed_s = asyncio.run(asyncio.wait_for(land_and_time(), timeout=30))
    assert isinstance(event, TaskSuccessEvent)
    assert noticed_s < 2.0, f"noticed {noticed_s:.2f} s after the landing"
