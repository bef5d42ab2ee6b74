"""The Airflow that the test_scheduler* modules share (tests/e2e/scheduler_kit.py SharedAirflow):
stopped as soon as the next test belongs to no sharing module, so that it does not run idle
beside the rest of the suite, and at the latest when the session ends."""

from __future__ import annotations

from collections.abc import Generator, Iterator

import pytest

from .scheduler_kit import SHARED, SharedAirflow


@pytest.fixture(scope="session")
def shared_airflow() -> Iterator[SharedAirflow]:
    try:
        yield SHARED
    finally:
        SHARED.release()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    """After the test's fixtures are torn down (its module's, when the next test is in another
    module): stop the shared Airflow when the next test's module does not share it."""
    try:
        return (yield)
    finally:
        module = getattr(nextitem, "module", None)
        if SHARED.handle is not None and (module is None or module.__name__ not in SHARED.shares):
            SHARED.release()
