"""What the pipeline refuses to publish, and how it never wedges a job (real Spark + Delta).

Each test reproduces one way a wrong assignment could reach the runtime, or a job could stop
publishing for good, and checks the stage that must stop it.
"""

from __future__ import annotations

import math
import os
import signal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from mlflow import MlflowClient
from pipeline_kit import (
    JOB_ID,
    MAX_MIGRATIONS,
    P1,
    P2,
    P3,
    apply_latest,
    delta_versions,
    land,
    latest,
    mlflow_runs,
    of_period,
    rows,
    stamp,
    tree,
)

from jobs.collect.stage import collect
from jobs.errors import StageError
from jobs.plan.stage import build_state, plan_period
from jobs.publish.stage import publish_period
from jobs.validate.stage import read_report, validate_period
from reconf.cli import main
from schemas.landing import RUNTIME_REPORT, read_runtime_report
from schemas.manifest import latest_path, read_manifest
from schemas.tables import ASSIGNMENT_VERSIONS, PLAN_MOVES, PLANS

pytestmark = pytest.mark.spark


def _moved(before: dict[str, str], after: dict[str, str]) -> int:
    return sum(before[k] != after[k] for k in before)


def test_a_plan_overtaken_by_a_newer_version_is_stale_and_a_replan_publishes(
    collected_home, job, spark, capsys
):
    paths = collected_home
    # P1 and P2 are planned while nothing is published yet; then P1 is published as v1.
    plan_period(job, P1, paths=paths, spark=spark)
    plan_period(job, P2, paths=paths, spark=spark)
    assert publish_period(job, P1, paths=paths, spark=spark).version == 1
    published_before = tree(paths.published)

    result = publish_period(job, P2, paths=paths, spark=spark)

    assert (result.status, result.version) == ("stale", None)
    assert "v1 has been published since" in result.reason and "Plan the period again" in result.reason
    assert tree(paths.published) == published_before and latest(paths) == "1\n"
    assert rows(spark, paths, PLANS.name, of_period(P2)).iloc[0]["status"] == "stale"
    assert sorted(rows(spark, paths, ASSIGNMENT_VERSIONS.name)["version"]) == [1]
    # Through the CLI: refused, exit 2, one message.
    capsys.readouterr()
    assert main(["publish", "--job", JOB_ID, "--period-end", stamp(P2)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"reconf publish: refused: the plan of {JOB_ID}@{stamp(P2)} is stale")
    assert "\n  where: plans row " in err and "\n  fix:   plan the period again" in err

    # The next run plans from v1 and publishes v2, within one period's budget of it.
    replanned = plan_period(job, P2, paths=paths, spark=spark)
    assert replanned.plan_json["newest_version"] == 1
    assert publish_period(job, P2, paths=paths, spark=spark).version == 2


def test_plan_and_publish_need_a_passing_validation_of_the_current_collect(
    collected_home, job, spark
):
    paths = collected_home
    plan_period(job, P1, paths=paths, spark=spark)  # P1 was collected and validated
    # The runtime re-lands P1 with a node it does not have, and P1 is collected again.
    where = land(paths, P1, job)
    part = where / "nodes" / "part-0.parquet"
    nodes = pq.read_table(part)
    ghost = nodes.slice(0, 1).set_column(
        nodes.schema.get_field_index("node"), "node", pa.array(["node-99"], pa.string()))
    pq.write_table(pa.concat_tables([nodes, ghost]), part)
    collect(job, P1, paths=paths, spark=spark)
    assert read_report(paths, JOB_ID, P1) is None  # the re-collect withdrew the old verdict

    # Not validated since the re-collect: neither plan nor publish goes ahead.
    with pytest.raises(StageError, match="was not validated since it was last collected"):
        plan_period(job, P1, paths=paths, spark=spark)
    with pytest.raises(StageError, match="was not validated since it was last collected"):
        publish_period(job, P1, paths=paths, spark=spark)

    # Validation refuses the node the runtime does not own (its report lists its nodes).
    runtime = read_runtime_report(where)
    assert runtime is not None and "node-99" not in runtime.nodes
    with pytest.raises(StageError) as caught:
        validate_period(job, P1, paths=paths, spark=spark)
    assert "node-99" in str(caught.value)
    report = read_report(paths, JOB_ID, P1)
    assert report is not None and report["known_nodes_from"] == "the runtime's report"

    for stage in (plan_period, publish_period):
        with pytest.raises(StageError, match="failed validation"):
            stage(job, P1, paths=paths, spark=spark)
    assert latest(paths) is None and rows(spark, paths, ASSIGNMENT_VERSIONS.name).empty
    # A dry run still shows what a plan would be, and writes no plan.
    dry = plan_period(job, P1, paths=paths, spark=spark, dry_run=True)
    assert dry.plan.migrations <= MAX_MIGRATIONS


def test_a_version_the_runtime_did_not_apply_is_not_the_base_of_later_plans(
    collected_home, job, spark
):
    paths = collected_home
    plan_period(job, P1, paths=paths, spark=spark)
    assert publish_period(job, P1, paths=paths, spark=spark).version == 1
    # The runtime never applies v1 (it refused it, or is behind): P3 is landed from its
    # initial allocation, and its report says so.
    where = land(paths, P3, job)
    assert read_runtime_report(where).version is None  # type: ignore[union-attr]
    collect(job, P3, paths=paths, spark=spark)
    validate_period(job, P3, paths=paths, spark=spark)
    running = dict(zip(*rows(spark, paths, "keygroup_stats", of_period(P3))[["keygroup", "node"]]
                       .T.values, strict=True))

    planned = plan_period(job, P3, paths=paths, spark=spark)

    assert planned.base_version is None and planned.plan_json["newest_version"] == 1
    assert "the runtime still ran its initial allocation, not v1" in planned.plan.message
    # The budget bounds the moves the runtime will make: from what it runs, not from v1.
    assert _moved(running, dict(planned.plan.assignment)) <= MAX_MIGRATIONS
    assert publish_period(job, P3, paths=paths, spark=spark).version == 2
    assert apply_latest(paths, job).status == "applied"


def test_a_runtime_report_of_a_version_never_published_is_refused(collected_home, job, spark):
    paths = collected_home
    where = land(paths, P3, job)
    (where / RUNTIME_REPORT).write_text(
        '{"format": 1, "version": 7, "nodes": ["node-00", "node-01", "node-02"]}\n')
    collect(job, P3, paths=paths, spark=spark)
    with pytest.raises(StageError, match="reports running v7 of job 'tiny', which reconf never"):
        validate_period(job, P3, paths=paths, spark=spark)


@pytest.mark.parametrize("kind", ["garbage", "fifo", "etc-passwd", "dev-zero"])
def test_garbage_latest_stops_publish_before_any_write(collected_home, job, spark, kind):
    """LATEST replaced by text, a FIFO (publish would block holding the job lock) or a link to
    /etc/passwd or /dev/zero: refused at once, its content never echoed."""
    paths = collected_home
    plan_period(job, P1, paths=paths, spark=spark)
    path = latest_path(paths.published, JOB_ID)
    path.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "garbage":
        path.write_text("garbage\n")
    else:
        path.symlink_to("/etc/passwd" if kind == "etc-passwd" else "/dev/zero")
    before = (delta_versions(paths), tree(paths.published))

    def blocked(signum: int, frame: object) -> None:
        raise KeyboardInterrupt("publish blocked on LATEST")  # nothing may catch it

    previous = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(60)
    try:
        with pytest.raises(StageError) as caught:
            publish_period(job, P1, paths=paths, spark=spark)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)

    assert "LATEST is unreadable" in caught.value.what and str(path) == caught.value.where
    assert "root:" not in str(caught.value)
    assert f"rm {path}" in caught.value.fix  # nothing was ever published: remove it
    assert (delta_versions(paths), tree(paths.published)) == before


def test_an_out_of_range_budget_writes_nothing_not_even_an_mlflow_run(collected_home, spark, capsys):
    paths = collected_home
    before = delta_versions(paths)
    code = main(["plan", "--job", JOB_ID, "--period-end", stamp(P1),
                 "--max-migrations", "99999999999999999999"])
    assert code == 2 and "out of range" in capsys.readouterr().err
    assert delta_versions(paths) == before
    assert mlflow_runs(paths) == [] and rows(spark, paths, PLAN_MOVES.name).empty


def test_non_finite_loads_are_a_stage_error_not_a_type_error(job):
    row = {"keygroup": "op0-kg000", "operator": "op0", "node": "node-00", "load_pct": math.nan,
           "state_bytes": 10}
    with pytest.raises(StageError, match=r"keygroup_stats.load_pct of 'op0-kg000' is nan"):
        build_state(job, [row], [{"node": "node-00", "capacity": 1.0}], [], {})
    row["load_pct"] = None
    with pytest.raises(StageError, match=r"keygroup_stats\.load_pct of 'op0-kg000' is None"):
        build_state(job, [row], [{"node": "node-00", "capacity": 1.0}], [], {})


def test_arrow_edges_build_the_state_the_rows_build_and_refuse_the_same_values(job):
    """The plan stage hands comm_stats to the planner as Arrow columns (no object per row)."""
    kgs = [{"keygroup": f"op0-kg00{i}", "operator": "op0", "node": "node-00", "load_pct": 1.0 + i,
            "state_bytes": 10} for i in range(3)]
    nodes = [{"node": "node-00", "capacity": 1.0}, {"node": "node-01", "capacity": 1.0}]
    edges = [{"src_keygroup": "op0-kg000", "dst_keygroup": "op0-kg002", "tuples_per_s": 2.5},
             {"src_keygroup": "op0-kg001", "dst_keygroup": "op0-kg000", "tuples_per_s": 0.0}]
    rows = build_state(job, kgs, nodes, edges, {})
    columns = build_state(job, kgs, nodes, pa.Table.from_pylist(edges), {})
    assert list(columns.edges) == list(rows.edges) and columns == rows
    edges[1]["tuples_per_s"] = math.inf
    with pytest.raises(StageError, match=r"comm_stats\.tuples_per_s of 'op0-kg001' is inf"):
        build_state(job, kgs, nodes, pa.Table.from_pylist(edges), {})


def test_a_crash_recovered_publish_tags_its_mlflow_run(collected_home, job, spark):
    """The version row committed, then the publisher died: the rerun completes LATEST, the plan's
    status and the run's tags."""
    paths = collected_home
    planned = plan_period(job, P1, paths=paths, spark=spark)
    assert publish_period(job, P1, paths=paths, spark=spark).version == 1
    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    run_id = planned.mlflow_run_id
    assert run_id is not None
    for key in ("reconf.publish_status", "reconf.assignment_version", "reconf.manifest"):
        client.delete_tag(run_id, key)
    path_of_latest = latest_path(paths.published, JOB_ID)
    path_of_latest.unlink()

    again = publish_period(job, P1, paths=paths, spark=spark)

    assert (again.status, again.version) == ("already_published", 1)
    assert latest(paths) == "1\n"
    tags = client.get_run(run_id).data.tags
    assert tags["reconf.publish_status"] == "published"
    assert tags["reconf.assignment_version"] == "1"
    assert tags["reconf.manifest"] == str(paths.published / JOB_ID / "v1.json")
    assert read_manifest(paths.published, JOB_ID, 1).plan_id == planned.plan_id
