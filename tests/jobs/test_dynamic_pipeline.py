"""A dynamic job (the query platform) through collect -> validate -> plan -> publish -> apply.

Queries arrive and leave between periods: every period's manifest places exactly the queries that
ran at its end (none lost, none twice), departed ones are gone from it, arrivals are placed
without counting as migrations, and the runtime accepts each version. Bad facet rows (a
subscription to an unknown source, a negative rate, a unit twice) stop the cycle at validate with
the rows named, and nothing is planned or published.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from mlflow import MlflowClient
from pipeline_kit import SPL, T0, delta_versions, run_cycle, snapshot, tree

from jobs.errors import StageError
from jobs.lake.base import period_predicate, read_table
from jobs.run import run_collect, run_plan, run_publish, run_validate
from reconf.audit import audit, format_report
from reconf.settings import make_source
from schemas.config import Paths, resolve_job
from schemas.landing import SOURCES, SUBSCRIPTIONS, format_period_end
from schemas.manifest import read_manifest
from schemas.tables import KEYGROUP_STATS, PLANS, SOURCE_STATS
from schemas.tables import SUBSCRIPTIONS as SUBSCRIPTIONS_TABLE

pytestmark = pytest.mark.spark

JOB = "queries"
CONFIG = f"""\
[jobs.{JOB}]
spl = "5m"
units = "dynamic"
strategy = "greedy"
max_migrations = 2
solver_time_limit_s = 2
start_date = 2026-01-01T00:00:00Z
source = {{ kind = "queries", nodes = 3, hours_per_period = 6, lifetime_hours = 24, sample_every = 60 }}
"""


@pytest.fixture
def dynamic_home(home: Paths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    config = tmp_path / "dynamic.toml"
    config.write_text(CONFIG)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    return home


def _units(spark, paths: Paths, table, period_end) -> list[str]:
    rows = read_table(spark, paths, table).where(period_predicate(JOB, period_end))
    return sorted(r["keygroup"] for r in rows.select("keygroup").collect())


def test_queries_arrive_and_leave_through_the_pipeline(spark, dynamic_home: Paths) -> None:
    paths = dynamic_home
    job = resolve_job(JOB)
    previous: dict[str, str] = {}
    for n in (1, 2):  # P1: every query arrives; P2: arrivals and departures since v1
        period_end = T0 + n * SPL
        runtime = make_source(job, paths)
        runtime.land_period(paths.landing, period_end)
        ran = dict(runtime.state.assignment)  # type: ignore[attr-defined]
        result = run_cycle(JOB, period_end)
        assert result.status == "published" and result.version == n
        manifest = read_manifest(paths.published, JOB, n)
        # exactly the queries that ran at the period's end: none lost, none twice, none departed
        assert sorted(manifest.assignment) == sorted(ran) == _units(spark, paths, KEYGROUP_STATS,
                                                                    period_end)
        subscribed = _units(spark, paths, SUBSCRIPTIONS_TABLE, period_end)
        assert subscribed == sorted(q for q in ran for _ in range(2))  # two sources each
        sources = read_table(spark, paths, SOURCE_STATS).where(period_predicate(JOB, period_end))
        assert sources.count() == len(runtime.trace.sources)  # type: ignore[attr-defined]
        row = read_table(spark, paths, PLANS).where(period_predicate(JOB, period_end)).first()
        assert row is not None
        plan = json.loads(row["plan_json"])
        arrivals = set(ran) - set(previous)
        moved = {m["keygroup"] for m in plan["moves"]}
        assert len(plan["moves"]) <= 2  # placing arrivals is not a migration
        assert "arriving unit(s) placed first" in plan["message"]
        if n > 1:
            assert arrivals and set(previous) - set(ran)  # queries came and went
            # a query kept from the last version moves only as one of the budget's migrations
            kept = set(ran) & set(previous)
            assert {q for q in kept if manifest.assignment[q] != previous[q]} <= moved
        # the Herding metrics of the cycle, before (where the runtime ran) and after, in MLflow
        metrics = MlflowClient(tracking_uri=paths.mlflow_uri).get_run(
            row["mlflow_run_id"]).data.metrics
        assert metrics["traffic_lower_bound_after"] <= metrics["stream_traffic_after"]
        assert {"replication_factor_before", "balance_after", "stream_traffic_before"} <= set(
            metrics)
        if n > 1:  # `reconf audit` explains where an arrival went and why
            arrival = sorted(arrivals)[0]
            report = audit(JOB, format_period_end(period_end), arrival, paths=paths)
            explained = report["keygroup"]
            assert explained["arrived"] and explained["to"] == manifest.assignment[arrival]
            assert len(explained["placement"]["sources"]) == 2  # its dest and carrier streams
            assert "pre-placed on the least utilised node" in explained["reason"]
            assert "ARRIVED" in format_report(report) and report["herding"] is not None
        applied = make_source(job, paths).apply_latest(paths.published)
        assert applied.applied, applied.reason
        after = make_source(job, paths).state  # type: ignore[attr-defined]
        assert dict(after.assignment) == dict(manifest.assignment) and after.version == n
        previous = dict(manifest.assignment)


def _corrupt(where: Path) -> None:
    """A subscription to an unknown source, a unit listed twice, and a negative rate."""
    subs = pq.read_table(where / SUBSCRIPTIONS / "part-0.parquet").to_pylist()
    first = subs[0]
    subs.append(dict(first))  # the same query again
    subs.append({**subs[2], "source": "dest:NOWHERE"})
    schema = pq.read_schema(where / SUBSCRIPTIONS / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist(subs, schema=schema),
                   where / SUBSCRIPTIONS / "part-0.parquet")
    rates = pq.read_table(where / SOURCES / "part-0.parquet").to_pylist()
    rates[0]["tuples_per_s"] = -1.0
    pq.write_table(pa.Table.from_pylist(rates, schema=pq.read_schema(
        where / SOURCES / "part-0.parquet")), where / SOURCES / "part-0.parquet")


def test_bad_facets_stop_at_validate_with_the_rows_named(spark, dynamic_home: Paths) -> None:
    paths = dynamic_home
    job = resolve_job(JOB)
    period_end = T0 + SPL
    where = make_source(job, paths).land_period(paths.landing, period_end)
    _corrupt(where)
    run_collect(JOB, period_end)
    before = snapshot(paths)
    with pytest.raises(StageError) as failed:
        run_validate(JOB, period_end)
    text = str(failed.value)
    assert "source=dest:NOWHERE" in text  # the subscription to an unknown source
    assert "tuples_per_s=-1.0" in text  # the negative rate
    assert "listed exactly once per source" in text  # the unit twice, its rows named
    with pytest.raises(StageError, match="failed validation"):
        run_plan(JOB, period_end)
    with pytest.raises(StageError, match="no plan"):
        run_publish(JOB, period_end)
    assert snapshot(paths) == before and delta_versions(paths) == before["delta_versions"]
    assert tree(paths.published) == {}


def _everyone_leaves(where: Path) -> None:
    """The runtime lands a period in which no query runs: no key-group, edge or subscription
    rows (the files are there, empty, as the landing contract has them)."""
    for kind in ("keygroups", "edges", SUBSCRIPTIONS):
        for file in (where / kind).glob("*.parquet"):
            pq.write_table(pq.read_table(file).slice(0, 0), file)


def test_a_period_every_unit_has_left_publishes_an_empty_manifest(spark, dynamic_home: Paths
                                                                  ) -> None:
    """Not bad input but a state to plan for: collect, validate, plan and publish it, and the
    runtime accepts the empty assignment; the next period's arrivals are placed as usual."""
    paths = dynamic_home
    job = resolve_job(JOB)
    make_source(job, paths).land_period(paths.landing, T0 + SPL)
    assert run_cycle(JOB, T0 + SPL).version == 1
    assert make_source(job, paths).apply_latest(paths.published).applied
    where = make_source(job, paths).land_period(paths.landing, T0 + 2 * SPL)
    _everyone_leaves(where)

    result = run_cycle(JOB, T0 + 2 * SPL)

    assert (result.status, result.version) == ("published", 2)
    manifest = read_manifest(paths.published, JOB, 2)
    assert dict(manifest.assignment) == {}
    row = read_table(spark, paths, PLANS).where(period_predicate(JOB, T0 + 2 * SPL)).first()
    assert row is not None and "every unit has left" in row["message"]
    applied = make_source(job, paths).apply_latest(paths.published)
    assert applied.applied and applied.version == 2, applied.reason


def test_an_inf_source_rate_under_a_dry_run_is_refused_with_where_and_fix(
        spark, dynamic_home: Paths, capsys: pytest.CaptureFixture[str]) -> None:
    """A dry run plans a period validate never saw: the planner's own checks refuse the row with
    the same what/where/fix as every other exit 2."""
    from reconf.cli import main

    paths = dynamic_home
    period_end = T0 + SPL
    where = make_source(resolve_job(JOB), paths).land_period(paths.landing, period_end)
    rates = pq.read_table(where / SOURCES / "part-0.parquet").to_pylist()
    rates[0]["tuples_per_s"] = float("inf")
    pq.write_table(pa.Table.from_pylist(rates, schema=pq.read_schema(
        where / SOURCES / "part-0.parquet")), where / SOURCES / "part-0.parquet")
    run_collect(JOB, period_end)
    capsys.readouterr()
    code = main(["plan", "--job", JOB, "--period-end", format_period_end(period_end),
                 "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "inf" in err
    assert "\n  where: lake tables" in err and f"reconf validate --job {JOB}" in err
