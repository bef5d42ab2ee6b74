"""The published-manifest contract: checksum, round trip, strict parsing, atomic immutable writes."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.manifest import (
    Manifest,
    ManifestError,
    ScalingSection,
    assignment_checksum,
    canonical_assignment_bytes,
    latest_path,
    manifest_path,
    read_latest_version,
    read_manifest,
    write_latest,
    write_manifest,
)

END = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
MADE = datetime(2026, 1, 1, 0, 6, 30, tzinfo=UTC)


def make(version: int = 1, assignment: dict[str, str] | None = None) -> Manifest:
    return Manifest.create(
        job_id="demo",
        version=version,
        period_end=END,
        plan_id=f"plan-{version}",
        assignment=assignment or {"op0-kg001": "node-01", "op0-kg000": "node-00"},
        scaling=ScalingSection(nodes_to_add=("node-09",), reason="load"),
        created_at=MADE,
    )


def test_canonical_bytes_ignore_order_and_have_no_whitespace() -> None:
    a = canonical_assignment_bytes({"b": "n1", "a": "n0"})
    assert a == b'{"a":"n0","b":"n1"}'
    assert a == canonical_assignment_bytes({"a": "n0", "b": "n1"})
    assert assignment_checksum({"b": "n1", "a": "n0"}) == "sha256:" + hashlib.sha256(a).hexdigest()


def test_round_trip_and_stable_text() -> None:
    m = make()
    text = m.to_json()
    back = Manifest.from_json(text, "v1.json")
    assert back == m
    assert back.to_json() == text
    body = json.loads(text)
    assert list(body) == [
        "job_id",
        "version",
        "period_end",
        "plan_id",
        "created_at",
        "checksum",
        "assignment",
        "scaling",
    ]
    assert list(body["assignment"]) == ["op0-kg000", "op0-kg001"]
    assert body["period_end"] == "2026-01-01T00:05:00Z"
    assert back.scaling.nodes_to_add == ("node-09",)


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=8), min_size=1)
)
def test_round_trip_any_assignment(assignment: dict[str, str]) -> None:
    m = make(assignment=assignment)
    back = Manifest.from_json(m.to_json(), "x")
    assert dict(back.assignment) == assignment
    assert back.checksum == assignment_checksum(assignment)


def test_assignment_is_read_only() -> None:
    m = make()
    with pytest.raises(TypeError):
        m.assignment["op0-kg000"] = "node-07"  # type: ignore[index]


FIELDS = [
    "job_id",
    "version",
    "period_end",
    "plan_id",
    "created_at",
    "checksum",
    "assignment",
    "scaling",
]


@pytest.mark.parametrize("field", FIELDS)
def test_missing_field_names_file_and_field(field: str) -> None:
    body = json.loads(make().to_json())
    del body[field]
    with pytest.raises(ManifestError, match=rf"published/demo/v1\.json.*'{field}'"):
        Manifest.from_json(json.dumps(body), "published/demo/v1.json")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("version", "1"),
        ("version", True),
        ("version", 0),
        ("job_id", ""),
        ("plan_id", 7),
        ("period_end", "2026-01-01T00:05:00+00:00"),
        ("period_end", "yesterday"),
        ("created_at", "2026-01-01T00:05:00"),
        ("checksum", "md5:abc"),
        ("assignment", ["op0-kg000", "node-00"]),
        ("assignment", {"op0-kg000": 3}),
        ("scaling", []),
    ],
)
def test_ill_typed_field_names_file_and_field(field: str, value: object) -> None:
    body = json.loads(make().to_json())
    body[field] = value
    with pytest.raises(ManifestError, match=rf"v1\.json.*'{field}"):
        Manifest.from_json(json.dumps(body), "v1.json")


@pytest.mark.parametrize("field", ["nodes_to_add", "nodes_to_mark", "nodes_to_terminate", "reason"])
def test_scaling_fields_are_strict(field: str) -> None:
    body = json.loads(make().to_json())
    body["scaling"][field] = 5
    with pytest.raises(ManifestError, match=rf"v1\.json.*scaling\.{field}"):
        Manifest.from_json(json.dumps(body), "v1.json")
    del body["scaling"][field]
    with pytest.raises(ManifestError, match=rf"v1\.json.*scaling\.{field}"):
        Manifest.from_json(json.dumps(body), "v1.json")


@pytest.mark.parametrize(
    ("text", "pattern"),
    [("{not json", "not valid JSON"), ("[1, 2]", "JSON object"), ('{"x": 1}', "missing field")],
)
def test_not_a_manifest(text: str, pattern: str) -> None:
    with pytest.raises(ManifestError, match=rf"^f\.json: .*{pattern}"):
        Manifest.from_json(text, "f.json")


def test_unknown_field_is_refused() -> None:
    body = json.loads(make().to_json())
    body["extra"] = 1
    with pytest.raises(ManifestError, match="unknown field 'extra'"):
        Manifest.from_json(json.dumps(body), "v1.json")


def test_write_manifest_is_immutable_and_idempotent(tmp_path: Path) -> None:
    m = make()
    path = write_manifest(tmp_path, m)
    assert path == manifest_path(tmp_path, "demo", 1) == tmp_path / "demo" / "v1.json"
    before = path.stat()
    assert write_manifest(tmp_path, make()) == path  # identical: no-op
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    with pytest.raises(ManifestError, match="immutable"):
        write_manifest(tmp_path, make(assignment={"op0-kg000": "node-05"}))
    assert read_manifest(tmp_path, "demo", 1) == m
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == [
        "v1.json"
    ]  # no temp files left


def test_latest_moves_forward_atomically(tmp_path: Path) -> None:
    assert read_latest_version(tmp_path, "demo") is None
    with pytest.raises(ManifestError, match="not published"):
        write_latest(tmp_path, "demo", 1)
    write_manifest(tmp_path, make(1))
    write_manifest(tmp_path, make(2))
    write_latest(tmp_path, "demo", 1)
    assert latest_path(tmp_path, "demo").read_text() == "1\n"
    write_latest(tmp_path, "demo", 2)
    assert latest_path(tmp_path, "demo").read_text() == "2\n"
    assert read_latest_version(tmp_path, "demo") == 2
    with pytest.raises(ManifestError, match="refusing to move it back"):
        write_latest(tmp_path, "demo", 1)
    assert read_latest_version(tmp_path, "demo") == 2
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == ["LATEST", "v1.json", "v2.json"]


def test_corrupt_latest_and_misfiled_manifest(tmp_path: Path) -> None:
    (tmp_path / "demo").mkdir()
    latest_path(tmp_path, "demo").write_text("v2\n")
    with pytest.raises(ManifestError, match="LATEST"):
        read_latest_version(tmp_path, "demo")
    manifest_path(tmp_path, "demo", 3).write_text(make(2).to_json())
    with pytest.raises(ManifestError, match=r"v3\.json.*'version'"):
        read_manifest(tmp_path, "demo", 3)
    with pytest.raises(ManifestError, match=r"v4\.json: not found"):
        read_manifest(tmp_path, "demo", 4)
