"""The health report contract's reader (schemas/health.py) reads a report as untrusted input, as
`published/` is read: never through a symbolic link, bounded in bytes and in nodes (the limit
named in the refusal, the file never read whole), and never dated in the future."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.health import (
    MAX_REPORT_BYTES,
    MAX_REPORT_NODES,
    HealthReport,
    HealthReportError,
    health_dir,
    read_report,
    write_report,
)


def _body(report_id: str = "r1", **over: object) -> dict[str, object]:
    body: dict[str, object] = {"format": 1, "job_id": "j", "report_id": report_id,
                               "at": "2026-01-01T00:05:00Z", "dead": ["node-01"],
                               "utilisation": {}}
    body.update(over)
    return body


def _file(tmp_path: Path, body: dict[str, object] | str, name: str = "r1") -> Path:
    folder = health_dir(tmp_path, "j")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(body if isinstance(body, str) else json.dumps(body))
    return path


def test_a_report_through_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere" / "r1.json"
    real.parent.mkdir()
    real.write_text(json.dumps(_body()))
    link = health_dir(tmp_path, "j") / "r1.json"
    link.parent.mkdir(parents=True)
    os.symlink(real, link)
    with pytest.raises(HealthReportError, match="symbolic link") as info:
        read_report(link)
    assert str(link) in str(info.value)


def test_a_file_over_the_byte_limit_is_refused_naming_the_limit_without_reading_it(
        tmp_path: Path) -> None:
    path = _file(tmp_path, _body())
    with path.open("ab") as out:  # sparse: huge on paper, no time to write
        out.truncate(96 * 1024 * 1024)
    began = time.monotonic()
    with pytest.raises(HealthReportError, match=f"{MAX_REPORT_BYTES}-byte limit"):
        read_report(path)
    assert time.monotonic() - began < 1.0


@pytest.mark.parametrize("field", ["dead", "utilisation"])
def test_a_list_over_the_node_limit_is_refused_naming_the_limit(tmp_path: Path,
                                                                field: str) -> None:
    ids = [f"n{i}" for i in range(MAX_REPORT_NODES + 1)]
    value: object = ids if field == "dead" else {n: 1.0 for n in ids}
    path = _file(tmp_path, {**_body(), field: value})
    with pytest.raises(HealthReportError) as info:
        read_report(path)
    message = str(info.value)
    assert f"at most {MAX_REPORT_NODES}" in message and field in message
    assert "n4000" not in message  # the ids are counted, never printed


def test_a_report_dated_in_the_future_is_refused_a_small_skew_is_not(tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    far = _file(tmp_path, _body(at="2099-01-01T00:00:00Z"))
    with pytest.raises(HealthReportError, match="in the future"):
        read_report(far)
    soon = (now + timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert read_report(_file(tmp_path, _body(at=soon))).at == now + timedelta(seconds=30)


_IDS = st.text("abcdefghij-0123456789", min_size=1, max_size=12)


@settings(max_examples=60)
@given(st.lists(_IDS, max_size=30), st.dictionaries(_IDS, st.floats(0, 10), max_size=30),
       st.integers(0, 10 ** 6))
def test_any_bounded_past_report_round_trips(tmp_path_factory: pytest.TempPathFactory,
                                             dead: list[str], util: dict[str, float],
                                             ago: int) -> None:
    root = tmp_path_factory.mktemp("h")
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=ago)
    report = HealthReport("j", "r1", at, tuple(dead), util)
    assert read_report(write_report(root, report)) == report
