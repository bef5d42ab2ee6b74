"""A manifest's move schedule: covered by a checksum, optional, invisible to assignment-only readers."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.model import ClusterState, KeyGroup, Move, Node
from placement.waves import plan_waves
from reconf.settings import make_source
from runtime.client import next_state
from runtime.source import ApplyResult, RuntimeState
from schemas.config import JobConfig, Paths
from schemas.manifest import (
    Manifest,
    ManifestError,
    assignment_checksum,
    manifest_checksum,
    read_manifest,
    write_latest,
    write_manifest,
)
from schemas.schedule import WaveLimits, apply_waves

END = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
START = {"k0": "a", "k1": "a", "k2": "a", "k3": "b"}
TARGET = {"k0": "b", "k1": "c", "k2": "c", "k3": "b"}


def scheduled(version: int = 2) -> Manifest:
    state = ClusterState((Node("a"), Node("b"), Node("c")),
                         tuple(KeyGroup(k, "op", 10.0, state_bytes=100) for k in START), START)
    moves = tuple(Move(k, START[k], TARGET[k], 0.0) for k in sorted(START) if START[k] != TARGET[k])
    schedule = plan_waves(state, moves, WaveLimits(max_moves_per_node=1), TARGET)
    return Manifest.create(job_id="demo", version=version, period_end=END, plan_id="p2",
                           assignment=TARGET, schedule=schedule,
                           created_at=datetime(2026, 1, 1, 0, 6, tzinfo=UTC))


def test_round_trip_keeps_the_schedule_and_it_leads_to_the_assignment(tmp_path: Path) -> None:
    manifest = scheduled()
    assert manifest.schedule is not None and len(manifest.schedule.waves) == 3
    write_manifest(tmp_path, manifest)
    again = read_manifest(tmp_path, "demo", 2)
    assert again == manifest
    assert again.schedule is not None
    assert apply_waves(START, again.schedule.waves) == dict(again.assignment)


def test_a_manifest_without_schedule_loads_and_is_written_as_before() -> None:
    plain = Manifest.create(job_id="demo", version=1, period_end=END, plan_id="p1",
                            assignment=START)
    assert "schedule" not in json.loads(plain.to_json())
    assert Manifest.from_json(plain.to_json(), "v1.json").schedule is None


def test_the_checksum_of_a_scheduled_manifest_covers_its_schedule() -> None:
    manifest = scheduled()
    body = json.loads(manifest.to_json())
    assert manifest.schedule is not None
    assert body["checksum"] == manifest_checksum(assignment_checksum(body["assignment"]),
                                                 manifest.schedule)
    assert body["checksum"] != assignment_checksum(body["assignment"])
    assert manifest.assignment_digest == assignment_checksum(body["assignment"])


@settings(max_examples=40)
@given(st.dictionaries(st.sampled_from([f"k{i}" for i in range(8)]), st.sampled_from("abc"),
                       min_size=1), st.integers(1, 3))
def test_deleting_the_schedule_never_passes_the_checksum(target: dict[str, str],
                                                         per_node: int) -> None:
    start = {k: "a" for k in target}
    state = ClusterState((Node("a"), Node("b"), Node("c")),
                         tuple(KeyGroup(k, "op", 1.0, state_bytes=10) for k in start), start)
    moves = tuple(Move(k, "a", target[k], 0.0) for k in sorted(start) if target[k] != "a")
    schedule = plan_waves(state, moves, WaveLimits(max_moves_per_node=per_node), target)
    body = json.loads(Manifest.create(job_id="demo", version=2, period_end=END, plan_id="p2",
                                      assignment=target, schedule=schedule).to_json())
    del body["schedule"]
    stripped = Manifest.from_json(json.dumps(body), "v2.json")
    assert stripped.actual_checksum != stripped.checksum


def test_a_runtime_refuses_a_manifest_whose_schedule_was_deleted(tmp_path: Path) -> None:
    write_manifest(tmp_path, scheduled())
    write_latest(tmp_path, "demo", 2)
    path = tmp_path / "demo" / "v2.json"
    body = json.loads(path.read_text())
    del body["schedule"]
    path.write_text(json.dumps(body, indent=2))
    current = RuntimeState("demo", 1, START, ("a", "b", "c"))
    outcome = next_state(tmp_path, current, START)
    assert isinstance(outcome, ApplyResult) and outcome.status == "refused"
    assert "does not match" in outcome.reason and "v2.json" in outcome.reason


def test_a_runtime_of_a_job_with_execution_limits_never_applies_a_manifest_without_one(
        job: JobConfig, tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home")
    source = make_source(job, paths)
    assert any(v is not None for v in job.execution.limits.to_dict().values())
    running = dict(source.state.assignment)  # type: ignore[attr-defined]
    nodes = sorted(set(running.values()))
    first = sorted(running)[0]
    target = {**running, first: next(n for n in nodes if n != running[first])}
    write_manifest(paths.published, Manifest.create(
        job_id=job.job_id, version=1, period_end=END, plan_id="p1", assignment=target))
    write_latest(paths.published, job.job_id, 1)
    result = source.apply_latest(paths.published)
    assert result.status == "refused", result
    assert "no move schedule" in result.reason and "v1.json" in result.reason
    assert dict(source.state.assignment) == running  # type: ignore[attr-defined]
    # a manifest that moves nothing needs no schedule
    write_manifest(paths.published, Manifest.create(
        job_id=job.job_id, version=2, period_end=END, plan_id="p2", assignment=running))
    write_latest(paths.published, job.job_id, 2)
    assert source.apply_latest(paths.published).status == "applied"


def test_an_altered_wave_is_refused() -> None:
    body = json.loads(scheduled().to_json())
    first, second = body["schedule"]["waves"][0], body["schedule"]["waves"][1]
    first["moves"], second["moves"] = second["moves"], first["moves"]
    with pytest.raises(ManifestError, match=r"v2\.json: field 'schedule.checksum'"):
        Manifest.from_json(json.dumps(body), "v2.json")


def test_a_schedule_moved_to_another_assignment_is_refused() -> None:
    body = json.loads(scheduled().to_json())
    body["assignment"]["k2"] = "a"
    body["checksum"] = assignment_checksum(body["assignment"])
    with pytest.raises(ManifestError, match="does not match the schedule and assignment"):
        Manifest.from_json(json.dumps(body), "v2.json")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda s: s.pop("limits"), "field 'schedule' must be an object with exactly"),
    (lambda s: s["waves"].append({"moves": []}), r"schedule.waves\[3\]' must be an object"),
    (lambda s: s["waves"][0]["moves"][0].update(state_bytes=-1), "state_bytes must be"),
    (lambda s: s["limits"].update(max_moves_per_node=0), "schedule.limits"),
])
def test_malformed_schedules_name_the_file_and_field(edit, message: str) -> None:
    body = json.loads(scheduled().to_json())
    edit(body["schedule"])
    with pytest.raises(ManifestError, match=message):
        Manifest.from_json(json.dumps(body), "v2.json")


def test_a_schedule_without_a_byte_rate_keeps_the_checksum_it_had_before_rates() -> None:
    schedule = scheduled().schedule
    assert schedule is not None
    # computed by the code before `max_bytes_per_second` existed: published schedules still verify
    assert schedule.checksum == \
        "sha256:eb02fee6138274c2235aeffdc541c5b60a00cb28340b7f5d4b382aa87c18853c"
    body = schedule.to_dict()
    assert "max_bytes_per_second" not in body["limits"] and schedule.expected_s() is None


def test_a_rated_schedule_records_each_waves_least_time_and_round_trips(tmp_path: Path) -> None:
    state = ClusterState((Node("a"), Node("b"), Node("c")),
                         tuple(KeyGroup(k, "op", 10.0, state_bytes=300) for k in START), START)
    moves = tuple(Move(k, START[k], TARGET[k], 0.0) for k in sorted(START) if START[k] != TARGET[k])
    schedule = plan_waves(state, moves, WaveLimits(max_moves_per_node=1,
                                                   max_bytes_per_second=200.0), TARGET)
    assert schedule.expected_s() == (1.5, 1.5, 1.5)  # 300 B at 200 B/s
    summary = schedule.summary()  # what MLflow's schedule.json and `reconf audit` show
    assert summary["expected_s"] == 4.5 and summary["per_wave"][0]["expected_s"] == 1.5
    manifest = Manifest.create(job_id="demo", version=3, period_end=END, plan_id="p3",
                               assignment=TARGET, schedule=schedule)
    write_manifest(tmp_path, manifest)
    assert read_manifest(tmp_path, "demo", 3) == manifest
    body = json.loads(manifest.to_json())
    # the wave's shape is unchanged (the Java reader checks it strictly): the rate is a limit
    assert all(set(w) == {"moves", "peak_pct", "over_ceiling"} for w in body["schedule"]["waves"])
    body["schedule"]["limits"]["max_bytes_per_second"] = 400.0  # a faster rate: altered
    with pytest.raises(ManifestError, match="does not match the schedule"):
        Manifest.from_json(json.dumps(body), "v3.json")
    body["schedule"]["limits"]["max_bytes_per_second"] = 0
    with pytest.raises(ManifestError, match="max_bytes_per_second must be a number > 0"):
        Manifest.from_json(json.dumps(body), "v3.json")
