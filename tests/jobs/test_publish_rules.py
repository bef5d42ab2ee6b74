"""publish: versions only go up (backfills are historical), and a crash mid-publish is mended."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

import pytest
from delta.tables import DeltaTable
from pipeline_kit import (
    JOB_ID,
    P1,
    P2,
    all_keygroups,
    apply_latest,
    delta_versions,
    latest,
    of_period,
    rows,
    tree,
)

from jobs.plan.stage import plan_period
from jobs.publish.stage import publish_period
from schemas.manifest import (
    Manifest,
    ScalingSection,
    manifest_path,
    read_manifest,
    write_manifest,
)
from schemas.schedule import Schedule
from schemas.tables import ASSIGNMENT_VERSIONS, ASSIGNMENTS, PLANS

pytestmark = pytest.mark.spark


def test_backfill_of_an_older_period_is_historical_and_latest_stays(collected_home, job, spark):
    paths = collected_home  # P1 and P2 collected
    plan_period(job, P2, paths=paths, spark=spark)
    first = publish_period(job, P2, paths=paths, spark=spark)
    assert (first.version, first.status) == (1, "published")
    published = tree(paths.published)
    av_version = delta_versions(paths)[ASSIGNMENT_VERSIONS.name]

    plan_period(job, P1, paths=paths, spark=spark)  # the backfill of an older period
    backfill = publish_period(job, P1, paths=paths, spark=spark)

    assert (backfill.version, backfill.status, backfill.manifest) == (None, "historical", None)
    statuses = rows(spark, paths, PLANS.name).set_index("period_end")["status"]
    assert statuses.to_dict() == {
        P1.replace(tzinfo=None): "historical", P2.replace(tzinfo=None): "published"
    }
    assert latest(paths) == "1\n"
    assert tree(paths.published) == published  # no v2.json, LATEST untouched
    assert delta_versions(paths)[ASSIGNMENT_VERSIONS.name] == av_version
    assert rows(spark, paths, ASSIGNMENT_VERSIONS.name)["version"].tolist() == [1]

    again = publish_period(job, P1, paths=paths, spark=spark)  # rerun: still historical
    assert again.status == "historical" and latest(paths) == "1\n"


def _manifest_of(plan_result, version: int, **changes) -> Manifest:
    scaling = plan_result.plan.scaling
    fields = {
        "job_id": JOB_ID, "version": version, "period_end": P1, "plan_id": plan_result.plan_id,
        "assignment": dict(plan_result.plan.assignment),
        "scaling": ScalingSection(
            nodes_to_add=scaling.nodes_to_add, nodes_to_mark=scaling.nodes_to_mark,
            nodes_to_terminate=scaling.nodes_to_terminate, reason=scaling.reason,
        ),
        "created_at": datetime(2026, 1, 1, 0, 5, 30, tzinfo=UTC),
        # the plan's move schedule, as publish writes it
        "schedule": Schedule.from_dict(plan_result.plan_json["schedule"], "plan"),
        **changes,
    }
    return Manifest.create(**fields)


def test_crash_after_the_manifest_is_written_is_mended_by_publish(collected_home, job, spark):
    paths = collected_home
    planned = plan_period(job, P1, paths=paths, spark=spark)
    path = manifest_path(paths.published, JOB_ID, 1)

    # Another plan's manifest sits at v1 with no version row: the orphan of a publisher that
    # crashed before its commit point (LATEST never named it). It is moved aside, not published.
    other = dict(planned.plan.assignment)
    other[sorted(other)[0]] = "node-02" if other[sorted(other)[0]] != "node-02" else "node-01"
    orphan = write_manifest(paths.published, _manifest_of(planned, 1, plan_id="tiny@elsewhere",
                                                          assignment=other, schedule=None)).read_bytes()
    assert publish_period(job, P1, paths=paths, spark=spark).version == 1
    assert read_manifest(paths.published, JOB_ID, 1).plan_id == planned.plan_id
    kept = list((paths.published / JOB_ID / ".orphaned").iterdir())
    assert [p.read_bytes() for p in kept] == [orphan]
    assert latest(paths) == "1\n"

    # Start again from nothing published, for the crash of this very plan.
    shutil.rmtree(paths.published)
    for table in (ASSIGNMENTS, ASSIGNMENT_VERSIONS):
        DeltaTable.forPath(spark, paths.table(table.name)).delete()

    # The crash: publish wrote v1.json for this very plan, then died before any Delta commit.
    crashed = write_manifest(paths.published, _manifest_of(planned, 1))
    on_disk = crashed.read_bytes()
    assert latest(paths) is None and rows(spark, paths, ASSIGNMENT_VERSIONS.name).empty

    result = publish_period(job, P1, paths=paths, spark=spark)

    assert (result.version, result.status, result.manifest) == (1, "published", str(path))
    assert path.read_bytes() == on_disk  # the manifest on disk is the version, untouched
    manifest = read_manifest(paths.published, JOB_ID, 1)
    assert latest(paths) == "1\n"
    version_row = rows(spark, paths, ASSIGNMENT_VERSIONS.name)
    assert len(version_row) == 1
    assert version_row.iloc[0][["version", "plan_id", "checksum", "status"]].tolist() == [
        1, planned.plan_id, manifest.assignment_digest, "published"
    ]
    assigned = rows(spark, paths, ASSIGNMENTS.name)
    assert set(assigned["keygroup"]) == all_keygroups() and len(assigned) == len(all_keygroups())
    assert dict(zip(assigned["keygroup"], assigned["node"], strict=True)) == dict(manifest.assignment)
    assert rows(spark, paths, PLANS.name, of_period(P1)).iloc[0]["status"] == "published"
    assert sorted(p.name for p in (paths.published / JOB_ID).iterdir()) == ["LATEST", "v1.json"]
    assert apply_latest(paths, job).status == "applied"
