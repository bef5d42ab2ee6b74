"""The KRaft cluster id reconf formats the broker's log directory with (runtime/kafka_streams)."""

from __future__ import annotations

import base64
import uuid

import pytest

from runtime.kafka_streams import broker


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    """`kafka-storage format -t -…` reads a leading '-' as an option and refuses to format; the
    id is drawn again then, as Kafka's own Uuid.randomUuid does."""
    dashed, plain = uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x10" + bytes(15))
    assert base64.urlsafe_b64encode(dashed.bytes).decode().startswith("-")
    drawn = iter([dashed, dashed, plain])
    monkeypatch.setattr(broker.uuid, "uuid4", lambda: next(drawn))
    text = broker._cluster_id()
    assert text == base64.urlsafe_b64encode(plain.bytes).decode().rstrip("=")
    assert len(text) == 22 and not text.startswith("-")
