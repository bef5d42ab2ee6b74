"""A runtime that skips versions still applies their scaling actions (runtime/client.py
`nodes_after_skipped`): a jump from v_a to v_c leaves it on the nodes that applying every version
in turn would have, on the synthetic runtime and on the replay query platform alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.replay.datasets import Datasets
from runtime.replay.queries import QueryPlatform, QuerySpec
from runtime.synthetic import SyntheticJob, SyntheticSpec
from schemas.manifest import Manifest, ScalingSection, manifest_path, write_latest, write_manifest

END = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
SPEC = SyntheticSpec("demo", operators=2, keygroups_per_operator=4, nodes=3)
POOL = tuple(f"node-{i:02d}" for i in range(6))


def publish(root: Path, job: str, version: int, assignment: dict[str, str],
            scaling: ScalingSection | None = None) -> None:
    write_manifest(root, Manifest.create(job_id=job, version=version,
                                         period_end=END + timedelta(minutes=5 * version),
                                         plan_id=f"p{version}", assignment=assignment,
                                         scaling=scaling))
    write_latest(root, job, version)


def test_a_skipped_termination_and_a_skipped_scale_out_both_reach_the_runtime(tmp_path: Path
                                                                               ) -> None:
    pub, job = tmp_path / "pub", SyntheticJob(SPEC, tmp_path / "state")
    kgs = SPEC.keygroups
    publish(pub, "demo", 1, {kg: "node-00" for kg in kgs})
    assert job.apply_latest(pub).applied  # runs v1 on node-00..02
    # v2 drains and terminates node-02; v3 adds node-03; v4 places on node-03 (and node-00)
    publish(pub, "demo", 2, {kg: "node-01" for kg in kgs},
            ScalingSection(nodes_to_terminate=("node-02",), reason="scale in"))
    publish(pub, "demo", 3, {kg: "node-01" for kg in kgs},
            ScalingSection(nodes_to_add=("node-03",), reason="scale out"))
    publish(pub, "demo", 4, {kg: ("node-03" if i % 2 else "node-00") for i, kg in enumerate(kgs)})
    result = job.apply_latest(pub)  # v1 -> v4: v2 and v3 never ran here
    assert result.applied and result.version == 4, result.reason
    assert job.state.nodes == ("node-00", "node-01", "node-03")


def test_an_unreadable_version_in_between_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    pub, job = tmp_path / "pub", SyntheticJob(SPEC, tmp_path / "state")
    kgs = SPEC.keygroups
    publish(pub, "demo", 1, {kg: "node-00" for kg in kgs},
            ScalingSection(nodes_to_terminate=("node-02",)))
    publish(pub, "demo", 2, {kg: "node-01" for kg in kgs})
    manifest_path(pub, "demo", 1).write_text("{ torn")
    before = job.state
    result = job.apply_latest(pub)
    assert result.status == "refused" and job.state == before
    assert "v1 lies between v0 (running) and v2 (LATEST)" in result.reason
    assert "republish v1" in result.reason and str(manifest_path(pub, "demo", 1)) in result.reason


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[tuple[dict[str, str], ScalingSection]], list[bool]]:
    """Versions whose scaling sections add and terminate nodes of a pool (each placing every key
    group on its nodes after scaling), and at which of them the skipping runtime looks."""
    nodes, versions = set(POOL[:3]), []
    for _ in range(draw(st.integers(1, 6))):
        add = draw(st.sets(st.sampled_from(sorted(set(POOL) - nodes)), max_size=2)) \
            if set(POOL) - nodes else set()
        after = nodes | add
        gone = draw(st.sets(st.sampled_from(sorted(after)), max_size=len(after) - 1))
        nodes = after - gone
        live = sorted(nodes)
        assignment = {kg: live[draw(st.integers(0, len(live) - 1))] for kg in SPEC.keygroups}
        versions.append((assignment, ScalingSection(nodes_to_add=tuple(sorted(add)),
                                                    nodes_to_terminate=tuple(sorted(gone)))))
    looks = [*draw(st.lists(st.booleans(), min_size=len(versions) - 1,
                            max_size=len(versions) - 1)), True]
    return versions, looks


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(histories())
def test_any_skipping_ends_on_the_nodes_of_applying_every_version(
        tmp_path_factory: pytest.TempPathFactory,
        history: tuple[list[tuple[dict[str, str], ScalingSection]], list[bool]]) -> None:
    versions, looks = history
    root = tmp_path_factory.mktemp("history")
    every, skipping = (SyntheticJob(SPEC, root / name) for name in ("every", "skipping"))
    for version, ((assignment, scaling), look) in enumerate(zip(versions, looks, strict=True), start=1):
        publish(root / "pub", "demo", version, assignment, scaling)
        assert every.apply_latest(root / "pub").applied
        if look:
            assert skipping.apply_latest(root / "pub").applied
    assert skipping.state == every.state


def test_the_query_platform_jumping_versions_drops_a_skipped_termination(
        tiny: Datasets, tmp_path: Path) -> None:
    platform = QueryPlatform(QuerySpec("q", nodes=3, hours_per_period=6, lifetime_hours=24),
                             tmp_path / "runtime", data=tiny)
    pub = tmp_path / "pub"
    platform.land_period(tmp_path / "landing", datetime(2026, 1, 1, 0, 5, tzinfo=UTC))
    running = sorted(platform.state.assignment)
    assert running and set(platform.state.nodes) == {"node-00", "node-01", "node-02"}
    publish(pub, "q", 1, dict.fromkeys(running, "node-00"),
            ScalingSection(nodes_to_terminate=("node-02",), reason="scale in"))
    publish(pub, "q", 2, dict.fromkeys(running, "node-01"))
    result = platform.apply_latest(pub)
    assert result.applied and result.version == 2, result.reason
    assert set(platform.state.nodes) == {"node-00", "node-01"}
    assert set(platform.state.assignment.values()) == {"node-01"}
