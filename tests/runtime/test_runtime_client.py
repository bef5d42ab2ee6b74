"""The assignment client: every refusal keeps the running assignment and persists nothing."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from runtime.client import (
    AssignmentClient,
    AssignmentRefused,
    ChecksumMismatch,
    CorruptManifest,
    MissingKeygroups,
    StaleVersion,
    TerminatedNodeInUse,
    UnknownKeygroups,
    UnknownNodes,
)
from runtime.source import state_path
from runtime.synthetic import SyntheticJob, SyntheticSpec
from schemas.manifest import (
    Manifest,
    ScalingSection,
    latest_path,
    manifest_path,
    write_latest,
    write_manifest,
)

END = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
SPEC = SyntheticSpec("demo", operators=2, keygroups_per_operator=4, nodes=3)


def publish(
    root: Path, version: int, assignment: dict[str, str], scaling: ScalingSection | None = None
) -> Path:
    m = Manifest.create(
        job_id="demo",
        version=version,
        period_end=END,
        plan_id=f"p{version}",
        assignment=assignment,
        scaling=scaling,
    )
    path = write_manifest(root, m)
    write_latest(root, "demo", version)
    return path


def moved(job: SyntheticJob, **changes: str) -> dict[str, str]:
    new = dict(job.assignment)
    new.update({k.replace("_", "-"): v for k, v in changes.items()})
    return new


@pytest.fixture
def job(tmp_path: Path) -> SyntheticJob:
    return SyntheticJob(SPEC, tmp_path / "state")


def test_nothing_published(job: SyntheticJob, tmp_path: Path) -> None:
    assert AssignmentClient(tmp_path / "pub", "demo").fetch_latest() is None
    result = job.apply_latest(tmp_path / "pub")
    assert (result.status, result.version) == ("unchanged", None)


def test_apply_then_same_version_is_nothing_new(job: SyntheticJob, tmp_path: Path) -> None:
    pub = tmp_path / "pub"
    publish(pub, 1, moved(job, op0_kg000="node-02"))
    result = job.apply_latest(pub)
    assert result.applied and result.version == 1 and result.moved == ("op0-kg000",)
    assert job.assignment["op0-kg000"] == "node-02"
    again = job.apply_latest(pub)
    assert (again.status, again.version, again.moved) == ("unchanged", 1, ())
    client = AssignmentClient(pub, "demo")
    latest = client.fetch_latest()
    assert latest is not None
    assert (
        client.accept(
            latest,
            current_version=1,
            known_keygroups=set(SPEC.keygroups),
            known_nodes=set(SPEC.node_names),
        )
        is False
    )
    # A fresh runtime process picks the applied state up from runtime.json.
    reborn = SyntheticJob(SPEC, tmp_path / "state")
    assert reborn.version == 1 and dict(reborn.assignment) == dict(job.assignment)


def _tamper(pub: Path, version: int) -> None:
    path = manifest_path(pub, "demo", version)
    body = json.loads(path.read_text())
    body["assignment"]["op0-kg001"] = "node-00"
    path.write_text(json.dumps(body))


def _corrupt(pub: Path, version: int) -> None:
    manifest_path(pub, "demo", version).write_text('{"job_id": "demo", "version": ')


Break = Callable[[Path, int], None]


@pytest.mark.parametrize(
    ("name", "assignment_change", "scaling", "breaker", "refusal", "words"),
    [
        ("checksum", {"op1_kg000": "node-00"}, None, _tamper, ChecksumMismatch, "checksum"),
        ("unknown kg", {"op9_kg000": "node-00"}, None, None, UnknownKeygroups, "op9-kg000"),
        ("unknown node", {"op0_kg000": "node-77"}, None, None, UnknownNodes, "node-77"),
        ("missing kg", None, None, None, MissingKeygroups, "op1-kg003"),
        ("corrupt", {"op1_kg000": "node-00"}, None, _corrupt, CorruptManifest, "not valid JSON"),
        (
            "terminated",
            {"op0_kg000": "node-02"},
            ScalingSection(nodes_to_terminate=("node-02",)),
            None,
            TerminatedNodeInUse,
            "node-02",
        ),
    ],
)
def test_refusal_keeps_current_assignment(
    job: SyntheticJob,
    tmp_path: Path,
    name: str,
    assignment_change: dict[str, str] | None,
    scaling: ScalingSection | None,
    breaker: Break | None,
    refusal: type[AssignmentRefused],
    words: str,
) -> None:
    pub = tmp_path / "pub"
    publish(pub, 1, moved(job, op0_kg003="node-02"))
    assert job.apply_latest(pub).applied
    running = dict(job.assignment)
    state_bytes = state_path(tmp_path / "state", "demo").read_bytes()

    if assignment_change is None:
        bad = {kg: n for kg, n in running.items() if kg != "op1-kg003"}
    else:
        bad = moved(job, **assignment_change)
    publish(pub, 2, bad, scaling)
    if breaker is not None:
        breaker(pub, 2)

    client = AssignmentClient(pub, "demo")
    with pytest.raises(refusal) as caught:
        manifest = client.fetch_latest()
        assert manifest is not None
        client.accept(
            manifest,
            current_version=1,
            known_keygroups=set(SPEC.keygroups),
            known_nodes=set(SPEC.node_names),
        )
    message = str(caught.value)
    assert words in message
    assert str(pub / "demo") in message  # says where
    result = job.apply_latest(pub)
    assert result.refused and result.version == 1 and words in result.reason
    assert dict(job.assignment) == running
    assert state_path(tmp_path / "state", "demo").read_bytes() == state_bytes


def test_older_version_is_refused(job: SyntheticJob, tmp_path: Path) -> None:
    pub = tmp_path / "pub"
    publish(pub, 1, moved(job, op0_kg000="node-02"))
    publish(pub, 2, moved(job, op0_kg001="node-02"))
    assert job.apply_latest(pub).version == 2
    running = dict(job.assignment)
    latest_path(pub, "demo").write_text("1\n")  # a bad hand edit moving LATEST back
    manifest = AssignmentClient(pub, "demo").fetch_latest()
    assert manifest is not None and manifest.version == 1
    with pytest.raises(StaleVersion, match=r"v1\.json: version 1 is older than v2"):
        AssignmentClient(pub, "demo").accept(
            manifest,
            current_version=2,
            known_keygroups=set(SPEC.keygroups),
            known_nodes=set(SPEC.node_names),
        )
    result = job.apply_latest(pub)
    assert result.refused and result.version == 2 and "older" in result.reason
    assert dict(job.assignment) == running


def test_corrupt_latest_is_refused(job: SyntheticJob, tmp_path: Path) -> None:
    pub = tmp_path / "pub"
    (pub / "demo").mkdir(parents=True)
    latest_path(pub, "demo").write_text("garbage")
    with pytest.raises(CorruptManifest, match="LATEST"):
        AssignmentClient(pub, "demo").fetch_latest()
    result = job.apply_latest(pub)
    assert result.refused and result.version is None


def test_latest_naming_missing_manifest_is_refused(tmp_path: Path) -> None:
    pub = tmp_path / "pub"
    (pub / "demo").mkdir(parents=True)
    latest_path(pub, "demo").write_text("4\n")
    with pytest.raises(CorruptManifest, match=r"v4\.json.*not found"):
        AssignmentClient(pub, "demo").fetch_latest()


def test_manifest_of_another_job_is_refused(tmp_path: Path) -> None:
    m = Manifest.create(
        job_id="other", version=1, period_end=END, plan_id="p", assignment={"a": "b"}
    )
    with pytest.raises(CorruptManifest, match="job 'other'"):
        AssignmentClient(tmp_path, "demo").accept(
            m, current_version=None, known_keygroups={"a"}, known_nodes={"b"}
        )


def test_scaling_added_nodes_count_as_known(job: SyntheticJob, tmp_path: Path) -> None:
    pub = tmp_path / "pub"
    publish(
        pub,
        1,
        moved(job, op0_kg000="node-03", op0_kg001="node-03"),
        ScalingSection(nodes_to_add=("node-03",), reason="scale out"),
    )
    result = job.apply_latest(pub)
    assert result.applied, result.reason
    assert "node-03" in job.state.nodes
    # Terminating an emptied node removes it from the runtime's nodes.
    empty_00 = {kg: ("node-01" if n == "node-00" else n) for kg, n in job.assignment.items()}
    publish(pub, 2, empty_00, ScalingSection(nodes_to_terminate=("node-00",)))
    assert job.apply_latest(pub).applied
    assert job.state.nodes == ("node-01", "node-02", "node-03")


class Blocked(BaseException):
    """A read that blocked (raised by `_deadline`)."""


@contextlib.contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """Fail (rather than hang the suite) when the body blocks, e.g. opening a FIFO."""

    def expired(signum: int, frame: object) -> None:
        raise Blocked(f"blocked for over {seconds} s")  # not an OSError: nothing may catch it

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _plant(path: Path, kind: str) -> None:
    """Put a special file where published/ holds a regular one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "etc-passwd":
        path.symlink_to("/etc/passwd")
    elif kind == "directory":
        path.mkdir()
    else:  # a regular file far past any version number
        path.write_bytes(b"1" * 10_000)


SPECIAL = ("fifo", "dev-zero", "etc-passwd", "directory", "huge")


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_special_latest_is_refused_at_once_without_echoing_it(
    job: SyntheticJob, tmp_path: Path, kind: str
) -> None:
    pub = tmp_path / "pub"
    _plant(latest_path(pub, "demo"), kind)
    with _deadline(10), pytest.raises(CorruptManifest, match="LATEST") as caught:
        AssignmentClient(pub, "demo").fetch_latest()
    assert "root:" not in str(caught.value)  # /etc/passwd's content is never printed
    with _deadline(10):
        result = job.apply_latest(pub)
    assert result.refused and result.version is None and "root:" not in result.reason


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_special_manifest_is_refused_at_once(job: SyntheticJob, tmp_path: Path, kind: str) -> None:
    pub = tmp_path / "pub"
    publish(pub, 1, dict(job.assignment))
    _plant(manifest_path(pub, "demo", 1), kind)
    with _deadline(10), pytest.raises(CorruptManifest, match=r"v1\.json") as caught:
        AssignmentClient(pub, "demo").fetch_latest()
    assert "root:" not in str(caught.value)
