"""The streamed manifest writer (schemas/manifest_stream.py) writes exactly `Manifest.to_json()`'s
bytes and checksum, chunk by chunk; anything that stops it mid-way publishes nothing."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.canonical import (
    assignment_checksum,
    canonical_assignment_bytes,
    chunked,
    mapping_chunks,
    sorted_checksum,
)
from schemas.manifest import (
    Manifest,
    ManifestError,
    ScalingSection,
    latest_path,
    manifest_checksum,
    manifest_path,
    read_latest_version,
    read_manifest,
    write_latest,
    write_manifest,
)
from schemas.manifest_stream import ManifestHead, write_manifest_streamed
from schemas.schedule import Schedule, ScheduledMove, Wave, WaveLimits

END, MADE = "2026-01-01T00:05:00Z", "2026-01-01T00:06:00Z"
# ids as hostile as JSON allows: quotes, backslashes, controls, non-ASCII, beyond the BMP
# (lone surrogates cannot be UTF-8, in either writer)
_CHARS = st.one_of(st.sampled_from('"\\\n\t\x00\x1f\u2028é😀/:,{} '),
                   st.characters(exclude_categories=["Cs"]))
IDS = st.text(_CHARS, min_size=1, max_size=6)
ASSIGNMENTS = st.dictionaries(IDS, IDS, max_size=30)
SCALING = st.builds(ScalingSection, st.lists(IDS, max_size=3).map(tuple),
                    st.lists(IDS, max_size=2).map(tuple), st.lists(IDS, max_size=2).map(tuple),
                    st.text(_CHARS, max_size=10))


def _arrays(assignment: dict[str, str]) -> tuple[list[str], list[str]]:
    keys = sorted(assignment)
    return keys, [assignment[k] for k in keys]


def _schedule(assignment: dict[str, str], moved: int) -> Schedule | None:
    """A schedule moving the first `moved` units to where the assignment places them."""
    keys = sorted(assignment)[:moved]
    if not keys:
        return None
    moves = tuple(ScheduledMove(k, "from-" + assignment[k], assignment[k], 1.0) for k in keys)
    return Schedule.sealed((Wave(moves, 10.0, False),), WaveLimits(),
                           assignment_checksum(assignment))


def _pair(assignment: dict[str, str], scaling: ScalingSection, schedule: Schedule | None
          ) -> tuple[Manifest, ManifestHead]:
    whole = Manifest.create(job_id="j\"ob", version=3, period_end=END, plan_id="p\\1",
                            assignment=assignment, scaling=scaling,
                            schedule=schedule)
    head = ManifestHead("j\"ob", 3, END, "p\\1", whole.created_at, scaling, schedule)
    return whole, head


@settings(max_examples=150, deadline=None)
@given(ASSIGNMENTS, SCALING, st.integers(1, 5), st.integers(0, 4))
def test_streamed_bytes_are_to_jsons_for_any_assignment(
        assignment: dict[str, str], scaling: ScalingSection, chunk: int, moved: int) -> None:
    schedule = _schedule(assignment, moved)
    whole, head = _pair(assignment, scaling, schedule)
    root = Path(tempfile.mkdtemp())
    path, checksum = write_manifest_streamed(root, head, chunked(*_arrays(assignment), chunk),
                                             expected_checksum=whole.assignment_digest)
    assert path.read_bytes() == whole.to_json().encode("utf-8")
    assert checksum == whole.assignment_digest == "sha256:" + hashlib.sha256(
        canonical_assignment_bytes(assignment)).hexdigest()
    assert whole.checksum == manifest_checksum(checksum, schedule)  # covers the schedule too
    again = read_manifest(root, "j\"ob", 3)
    assert again == whole and again.actual_checksum == whole.checksum
    # rewriting the same version is a no-op: the whole writer agrees with what the streamed wrote
    assert write_manifest(root, whole) == path
    assert write_manifest_streamed(root, head, chunked(*_arrays(assignment), 7))[0] == path
    assert sorted(os.listdir(path.parent)) == [path.name]  # no temp file left behind


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(_CHARS, max_size=4), st.text(_CHARS, max_size=4), max_size=20))
def test_checksum_by_chunks_is_the_definitions(assignment: dict[str, str]) -> None:
    """Empty ids too: `assignment_checksum` falls back to the definition for what no chunk takes."""
    expected = "sha256:" + hashlib.sha256(canonical_assignment_bytes(assignment)).hexdigest()
    assert assignment_checksum(assignment) == expected
    if all(assignment) and all(assignment.values()):
        assert sorted_checksum(mapping_chunks(dict(sorted(assignment.items())), 3)) == expected


def _boom(keys: Sequence[str], nodes: Sequence[str]) -> Iterator[tuple[Sequence[str],
                                                                           Sequence[str]]]:
    yield keys[:2], nodes[:2]
    raise RuntimeError("killed mid-write")


def test_a_crash_mid_write_leaves_no_manifest_and_latest_unmoved(tmp_path: Path) -> None:
    v1 = Manifest.create(job_id="j", version=1, period_end=END, plan_id="p1",
                         assignment={"a": "n1", "b": "n1"})
    write_manifest(tmp_path, v1)
    write_latest(tmp_path, "j", 1)
    before = sorted(os.listdir(tmp_path / "j"))
    latest = latest_path(tmp_path, "j").read_bytes()
    head = ManifestHead.create(job_id="j", version=2, period_end=END, plan_id="p2")
    with pytest.raises(RuntimeError, match="killed mid-write"):
        write_manifest_streamed(tmp_path, head, _boom(["a", "b", "c"], ["n1", "n2", "n2"]))
    assert not manifest_path(tmp_path, "j", 2).exists()
    assert sorted(os.listdir(tmp_path / "j")) == before  # the temp file is gone too
    assert latest_path(tmp_path, "j").read_bytes() == latest
    assert read_latest_version(tmp_path, "j") == 1
    with pytest.raises(ManifestError, match="not published"):
        write_latest(tmp_path, "j", 2)  # LATEST can never be moved to the version that died


@pytest.mark.parametrize(("keys", "nodes", "message"), [
    (["b", "a"], ["n", "n"], "ascending code-point order"),
    (["a", "a"], ["n", "m"], "unique"),
    (["a", ""], ["n", "n"], "must not be empty"),
    (["a", "b"], ["n", ""], "must not be empty"),
    (["a", "b"], ["n", 3], "must be a string"),
])
def test_what_is_not_one_sorted_assignment_is_refused_with_nothing_written(
        tmp_path: Path, keys: list[str], nodes: list[str], message: str) -> None:
    head = ManifestHead.create(job_id="j", version=1, period_end=END, plan_id="p")
    with pytest.raises(ManifestError, match=message) as err:
        write_manifest_streamed(tmp_path, head, chunked(keys, nodes, 1))
    assert "field 'assignment'" in str(err.value)
    assert os.listdir(tmp_path / "j") == []


def test_another_checksum_than_planned_or_a_schedule_elsewhere_publishes_nothing(
        tmp_path: Path) -> None:
    assignment = {"a": "n1", "b": "n2"}
    head = ManifestHead.create(job_id="j", version=1, period_end=END, plan_id="p")
    with pytest.raises(ManifestError, match="the plan recorded sha256:"):
        write_manifest_streamed(tmp_path, head, chunked(*_arrays(assignment)),
                                expected_checksum=assignment_checksum({"a": "n1"}))
    elsewhere = _schedule({"a": "n9", "b": "n2"}, 1)
    assert elsewhere is not None
    resealed = Schedule.sealed(elsewhere.waves, elsewhere.limits, assignment_checksum(assignment))
    for schedule, message in ((elsewhere, "schedule.checksum"), (resealed, "'a'")):
        with pytest.raises(ManifestError, match=message):
            write_manifest_streamed(
                tmp_path, ManifestHead.create(job_id="j", version=1, period_end=END,
                                              plan_id="p", schedule=schedule),
                chunked(*_arrays(assignment)))
    assert os.listdir(tmp_path / "j") == []


def test_a_different_version_already_there_is_refused(tmp_path: Path) -> None:
    head = ManifestHead.create(job_id="j", version=1, period_end=END, plan_id="p")
    path, _ = write_manifest_streamed(tmp_path, head, chunked(["a"], ["n1"]))
    first = path.read_bytes()
    with pytest.raises(ManifestError, match="versions are immutable"):
        write_manifest_streamed(tmp_path, head, chunked(["a"], ["n2"]))
    assert path.read_bytes() == first
    assert sorted(os.listdir(path.parent)) == [path.name]


def test_the_reader_hashes_what_it_validates_in_file_order_or_sorted(tmp_path: Path) -> None:
    """A manifest written by hand out of order still reads, and its digest is the definition's;
    a tampered node is a digest that differs from the recorded checksum."""
    whole = Manifest.create(job_id="j", version=1, period_end=END, plan_id="p",
                            assignment={"b": "n2", "a": "n1", "é": "n3"})
    text = whole.to_json()
    shuffled = text.replace('"a": "n1",\n    "b": "n2"', '"b": "n2",\n    "a": "n1"')
    assert shuffled != text
    parsed = Manifest.from_json(shuffled, "hand.json")
    assert parsed.actual_checksum == whole.checksum == parsed.checksum
    tampered = Manifest.from_json(text.replace('"n3"', '"n4"'), "t.json")
    assert tampered.actual_checksum == assignment_checksum({"a": "n1", "b": "n2", "é": "n4"})
    assert tampered.actual_checksum != tampered.checksum
