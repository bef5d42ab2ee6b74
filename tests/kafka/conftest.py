"""One real single-node KRaft broker for the Kafka tests of the session (started on first use on
free loopback ports, stopped by pid at the end), and helpers to publish manifests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.kafka_streams.broker import Broker, start, stop_broker


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    home = tmp_path_factory.mktemp("kafka-broker")
    started = start(home, home / "run")
    try:
        yield started
    finally:
        stop_broker(started.record, home / "run")


def log_lines(home: Path, needle: str) -> list[str]:
    """Lines of the instances' logs that contain `needle`."""
    return [line for log in sorted((home / "logs").glob("*.log"))
            for line in log.read_text(errors="replace").splitlines() if needle in line]
