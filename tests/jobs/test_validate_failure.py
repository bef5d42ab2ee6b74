"""A bad period stops the cycle at validate: nothing planned, nothing published, runtime unchanged."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pipeline_kit import (
    JOB_ID,
    P1,
    P2,
    all_keygroups,
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

from jobs.errors import StageError
from jobs.plan.stage import plan_period
from jobs.publish.stage import publish_period
from jobs.tracking.store import run_name
from jobs.validate.stage import read_report, report_path, validate_period
from reconf.cli import main
from runtime.source import write_period
from schemas.landing import EDGES, KEYGROUPS, NODES, SCHEMAS
from schemas.tables import ASSIGNMENT_VERSIONS, ASSIGNMENTS, KEYGROUP_STATS, PLAN_MOVES, PLANS

pytestmark = pytest.mark.spark

DROPPED = "op1-kg002"  # the runtime stopped reporting this key group,
NAN_CPU = "op0-kg001"  # reported cpu_ms = NaN in one sample of this one,
NULL_TUPLES = "op0-kg002"  # and no tuples_in (null) in one sample of this one


def _land_bad_period(paths, job):
    """Land P2 as the runtime would, then re-land it with those three defects."""
    where = land(paths, P2, job)
    tables = {k: pq.read_table(where / k / "part-0.parquet") for k in (KEYGROUPS, EDGES, NODES)}
    kg = tables[KEYGROUPS].to_pandas()
    kg = kg[kg["keygroup"] != DROPPED].reset_index(drop=True)
    cpu = kg["cpu_ms"].to_numpy(copy=True)
    cpu[kg.index[kg["keygroup"] == NAN_CPU][0]] = math.nan
    tuples_in = kg["tuples_in"].astype(object)
    tuples_in[kg.index[kg["keygroup"] == NULL_TUPLES][0]] = None
    columns = {name: kg[name].tolist() for name in SCHEMAS[KEYGROUPS].names}
    columns["tuples_in"] = tuples_in.tolist()
    arrays = [
        # from_pandas=False keeps NaN a NaN (pyarrow would otherwise turn it into a null)
        pa.array(cpu, type=pa.float64(), from_pandas=False) if field.name == "cpu_ms"
        else pa.array(columns[field.name], type=field.type)
        for field in SCHEMAS[KEYGROUPS]
    ]
    tables[KEYGROUPS] = pa.Table.from_arrays(arrays, schema=SCHEMAS[KEYGROUPS])
    bad = tables[KEYGROUPS].column("cpu_ms").to_numpy()
    assert np.isnan(bad).sum() == 1 and tables[KEYGROUPS].column("cpu_ms").null_count == 0
    assert tables[KEYGROUPS].column("tuples_in").null_count == 1
    write_period(paths.landing, JOB_ID, P2, tables)


def test_bad_stats_stop_the_cycle_and_keep_the_published_assignment(
    collected_home, job, spark, capsys
):
    paths = collected_home
    # A first good cycle: P1 published as v1 and running.
    validate_period(job, P1, paths=paths, spark=spark)
    plan_period(job, P1, paths=paths, spark=spark)
    assert publish_period(job, P1, paths=paths, spark=spark).version == 1
    assert apply_latest(paths, job).status == "applied"

    _land_bad_period(paths, job)
    before = {
        "versions": {t: v for t, v in delta_versions(paths).items()
                     if t in (PLANS.name, PLAN_MOVES.name, ASSIGNMENTS.name, ASSIGNMENT_VERSIONS.name)},
        "published": tree(paths.published),
    }
    capsys.readouterr()

    code = main(["cycle", "--job", JOB_ID, "--period-end", stamp(P2)])

    captured = capsys.readouterr()
    assert code == 2
    assert captured.out.startswith(f"collect {JOB_ID}@{stamp(P2)}")  # collect ran...
    assert "plan " not in captured.out and "publish " not in captured.out  # ...plan never did
    assert captured.err.startswith("reconf cycle: error: validate: the period's stats FAILED")
    assert captured.err.count("error:") == 1 and DROPPED in captured.err
    # collect does not judge, it aggregates: the bad period is in the stats tables
    collected = rows(spark, paths, KEYGROUP_STATS.name, of_period(P2))
    assert set(collected["keygroup"]) == all_keygroups() - {DROPPED}
    after_versions = {t: v for t, v in delta_versions(paths).items() if t in before["versions"]}
    assert after_versions == before["versions"]
    assert tree(paths.published) == before["published"]
    assert latest(paths) == "1\n"
    assert rows(spark, paths, PLANS.name, of_period(P2)).empty
    assert rows(spark, paths, PLAN_MOVES.name, of_period(P2)).empty
    assert sorted(rows(spark, paths, ASSIGNMENT_VERSIONS.name)["version"]) == [1]
    assert [r.info.run_name for r in mlflow_runs(paths)] == [run_name(stamp(P1))]

    # The stage itself: a StageError that names the failed expectations and the key groups.
    with pytest.raises(StageError) as caught:
        validate_period(job, P2, paths=paths, spark=spark)
    message = str(caught.value)
    assert "expect_column_distinct_values_to_equal_set" in message
    assert f"missing (1): {DROPPED}" in message
    assert "keygroup_stats.cpu_ms" in message and "expect_column_values_to_not_be_null" in message
    assert f"keygroup={NAN_CPU}" in message
    assert "keygroup_stats.tuples_in" in message and f"keygroup={NULL_TUPLES}" in message
    assert "nothing was planned or published" in caught.value.fix
    assert str(report_path(paths, JOB_ID, P2)) in caught.value.where
    report = read_report(paths, JOB_ID, P2)
    assert report is not None and report["success"] is False
    assert report["expected_keygroups_from"] == "published assignment v1"
    failed = {(f["table"], f["expectation"], f["column"]) for f in report["failures"]}
    assert ("keygroup_stats", "expect_column_distinct_values_to_equal_set", "keygroup") in failed
    offenders = {
        f["column"]: {r.get("keygroup") for r in f["rows"]}
        for f in report["failures"] if f["expectation"] == "expect_column_values_to_not_be_null"
    }
    assert offenders == {"cpu_ms": {NAN_CPU}, "load_pct": {NAN_CPU}, "tuples_in": {NULL_TUPLES}}

    # The runtime keeps v1: nothing new to apply (in-process and through the CLI).
    kept = apply_latest(paths, job)
    assert (kept.status, kept.version) == ("unchanged", 1)
    assert main(["apply", "--job", JOB_ID]) == 0
    assert capsys.readouterr().out.strip() == "unchanged: v1 is already running"
    assert json.loads((paths.runtime / JOB_ID / "runtime.json").read_text())["version"] == 1
