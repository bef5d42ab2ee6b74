"""End to end: the real DAG (`airflow dags test`) for two consecutive periods on real Spark, Delta,
Great Expectations and MLflow, the runtime applying each version, then the Delta tables read back
with time travel."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reconf.demo import ensure_airflow, run_dag
from reconf.settings import make_source
from runtime.synthetic import SyntheticJob
from schemas.config import Paths, resolve_job
from schemas.manifest import assignment_checksum, read_latest_version, read_manifest

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

CONFIG = """
[defaults]
spl = "5m"
strategy = "milp"
max_migrations = 3
solver_time_limit_s = 2
start_date = 2026-03-01T00:00:00Z

[jobs.e2e]
source = { kind = "synthetic", operators = 2, keygroups_per_operator = 6, nodes = 3, seed = 11, varies = 40 }
"""


@pytest.fixture()
def e2e_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    config = tmp_path / "jobs.toml"
    config.write_text(CONFIG)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    paths = Paths.from_env()
    paths.home.mkdir(parents=True)
    return paths


def test_two_periods_through_the_real_dag(e2e_home: Paths) -> None:
    paths = e2e_home
    job = resolve_job("e2e")
    source = make_source(job, paths)
    ensure_airflow(paths)
    first = datetime(2026, 3, 1, 0, 5, tzinfo=UTC)
    periods = [first, first + timedelta(minutes=5)]
    for version, period_end in enumerate(periods, start=1):
        source.land_period(paths.landing, period_end)
        run_dag(paths, "e2e", period_end, paths.home / "logs" / f"{version}.log")
        applied = source.apply_latest(paths.published)
        assert applied.status == "applied" and applied.version == version

    # Published: two immutable versions, LATEST on the newest, checksums that verify.
    assert read_latest_version(paths.published, "e2e") == 2
    manifests = [read_manifest(paths.published, "e2e", v) for v in (1, 2)]
    for manifest, period_end in zip(manifests, periods, strict=True):
        assert manifest.checksum == assignment_checksum(manifest.assignment)
        assert manifest.period_end == period_end.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert isinstance(source, SyntheticJob)
    assert dict(source.assignment) == dict(manifests[1].assignment)

    from jobs.spark import get_spark

    spark = get_spark(paths)

    def delta(name: str, version: int | None = None):  # a Spark DataFrame
        reader = spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(paths.table(name)).where("job_id = 'e2e'")

    # Time travel: version 0 is the empty table, each collect adds exactly one period.
    assert delta("keygroup_stats", 0).count() == 0
    after_first = delta("keygroup_stats", 1)
    assert after_first.count() == 12
    assert {r[0] for r in after_first.select("period_end").distinct().collect()} == {periods[0].replace(tzinfo=None)}
    assert delta("keygroup_stats").count() == 24
    assert delta("assignment_versions", 1).count() == 1
    assert delta("assignment_versions").count() == 2

    plans = {r["period_end"]: r for r in delta("plans").collect()}
    assert len(plans) == 2 and all(r["status"] == "published" for r in plans.values())
    for row in plans.values():
        assert row["migrations"] <= 3
        assert row["load_distance_after"] <= row["load_distance_before"] + 1e-9
        assert json.loads(row["plan_json"])["migrations"] == row["migrations"]
    moves = delta("plan_moves").count()
    assert moves == sum(r["migrations"] for r in plans.values())
    # The second plan started from version 1, as the runtime ran it.
    assert plans[periods[1].replace(tzinfo=None)]["base_version"] == 1

    # MLflow: one run per cycle, tagged with the version it published and the Airflow run.
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    experiment = client.get_experiment_by_name("e2e")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.run_name for r in runs) == [
        "e2e@2026-03-01T00:05:00Z", "e2e@2026-03-01T00:10:00Z"]
    for run in runs:
        assert run.data.tags["reconf.assignment_version"] in {"1", "2"}
        assert run.data.tags["reconf.airflow_run_id"].startswith("manual__")
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"plan.json", "moves.csv", "node_loads.png", "validation.json"} <= artifacts
