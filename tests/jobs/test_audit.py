"""`reconf audit` after real cycles (Spark, Delta, GE, MLflow): what it prints comes from the MLflow
run, and agrees with the plans / plan_moves Delta tables; the run itself carries the audit trail
(moves with reasons, Delta versions, Airflow provenance, a run description); bad input exits 2.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from mlflow import MlflowClient
from pipeline_kit import JOB_ID, P1, P2, P3, all_keygroups, of_period, rows, stamp

from jobs.plan.stage import plan_period
from jobs.publish.stage import publish_period
from jobs.tracking.store import read_csv_artifact, run_name
from jobs.validate.stage import validate_period
from placement.reasons import REASON_CODES
from reconf.cli import main
from schemas.config import Paths, resolve_job
from schemas.tables import PLAN_MOVES, PLANS

pytestmark = pytest.mark.spark

# What Airflow's task runner exports to a running task (airflow.sdk context_to_airflow_vars).
AIRFLOW_CTX = {"AIRFLOW_CTX_DAG_ID": f"reconfigure_{JOB_ID}",
               "AIRFLOW_CTX_DAG_RUN_ID": "scheduled__2026-01-01T00:10:00+00:00",
               "AIRFLOW_CTX_TRY_NUMBER": "2", "AIRFLOW_CTX_TASK_ID": "plan",
               "RECONF_AIRFLOW_URL": "http://airflow.example:8080/"}


@pytest.fixture(scope="module")
def audited(collected_template, config_file, spark, tmp_path_factory) -> Path:
    """P1 planned and published by hand, P2 as if inside an Airflow task; both validated."""
    home = tmp_path_factory.mktemp("audit") / "home"
    shutil.copytree(collected_template, home)
    paths = Paths(home)
    job = resolve_job(JOB_ID, config_file)
    for period_end, env in ((P1, {}), (P2, AIRFLOW_CTX)):
        with pytest.MonkeyPatch.context() as mp:
            for key, value in env.items():
                mp.setenv(key, value)
            validate_period(job, period_end, paths=paths, spark=spark)
            plan_period(job, period_end, paths=paths, spark=spark)  # logs the period's report
            publish_period(job, period_end, paths=paths, spark=spark)
    return home


@pytest.fixture
def paths(audited, config_file, monkeypatch) -> Paths:
    monkeypatch.setenv("RECONF_HOME", str(audited))
    monkeypatch.setenv("RECONF_CONFIG", str(config_file))
    for key in AIRFLOW_CTX:
        monkeypatch.delenv(key, raising=False)
    return Paths.from_env()


def _audit(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["audit", "--job", JOB_ID, *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_audit_reports_the_moves_of_the_plans_table(paths, spark, capsys):
    for period_end in (P1, P2):
        code, out, _ = _audit(capsys, "--period-end", stamp(period_end), "--json")
        assert code == 0
        report = json.loads(out)
        moves = rows(spark, paths, PLAN_MOVES.name, of_period(period_end))
        delta = {(r.keygroup, r.src_node, r.dst_node) for r in moves.itertuples()}
        audited = {(m["keygroup"], m["from"], m["to"]) for m in report["moves"]}
        assert audited == delta
        assert report["migrations"] == len(delta) <= 3
        assert all(m["reason"] and m["load_pct"] is not None and m["state_bytes"] is not None
                   for m in report["moves"])
        plan = rows(spark, paths, PLANS.name, of_period(period_end)).iloc[0]
        assert report["run"]["id"] == plan["mlflow_run_id"]
        assert report["run"]["name"] == run_name(stamp(period_end))
        assert report["strategy"] == plan["strategy"] == "milp"
        assert report["budget"]["max_migrations"] == 3
        assert report["load_distance"]["before"] == pytest.approx(plan["load_distance_before"])
        assert report["load_distance"]["after"] == pytest.approx(plan["load_distance_after"])
        assert report["validation"]["success"] is True
        assert report["published"]["assignment_version"] == (1 if period_end == P1 else 2)
        assert set(report["delta_versions"]) == {"keygroup_stats", "comm_stats", "node_stats",
                                                 "assignments", "plans", "plan_moves",
                                                 "assignment_versions"}  # published: its version
        # The plans version in the run is a real link: time travel to it finds this plan.
        at = (spark.read.format("delta").option("versionAsOf", report["delta_versions"]["plans"])
              .load(paths.table(PLANS.name)).where(of_period(period_end)).collect())
        assert [(r["mlflow_run_id"], r["status"]) for r in at] == [(report["run"]["id"], "planned")]
        assert {"moves.csv", "keygroups.csv", "nodes.csv", "plan.json", "node_loads.png",
                "validation.json"} <= set(report["artifacts"])
    # The text form names every moved key group with its from/to.
    code, text, _ = _audit(capsys, "--period-end", stamp(P1))
    assert code == 0
    for m in rows(spark, paths, PLAN_MOVES.name, of_period(P1)).itertuples():
        assert f"{m.keygroup}: {m.src_node} -> {m.dst_node}" in text
    assert "strategy milp" in text and "load distance" in text and "validation: passed" in text
    assert "Airflow: not run by Airflow" in text


def test_audit_of_one_key_group(paths, spark, capsys):
    moves = rows(spark, paths, PLAN_MOVES.name, of_period(P1))
    assert len(moves) > 0, "the tiny job's first plan moves key groups"
    moved = moves.iloc[0]
    code, out, _ = _audit(capsys, "--period-end", stamp(P1), "--key-group", moved["keygroup"])
    assert code == 0
    # the MILP's reason in its family's words: the load it relieved, with the numbers
    assert (f"MOVED {moved['src_node']} -> {moved['dst_node']} because load relieved: "
            f"{moved['src_node']} ") in out
    code, out, _ = _audit(capsys, "--period-end", stamp(P1), "--key-group", moved["keygroup"],
                          "--json")
    k = json.loads(out)["keygroup"]
    assert (k["moved"], k["from"], k["to"]) == (True, moved["src_node"], moved["dst_node"])
    assert k["load_pct"] > 0 and k["reason_codes"]
    assert set(k["reason_codes"]) <= set(REASON_CODES) and k["reason_codes"][-1] == "load_relieved"
    stayed = sorted(all_keygroups() - set(moves["keygroup"]))
    code, out, _ = _audit(capsys, "--period-end", stamp(P1), "--key-group", stayed[0])
    assert code == 0 and "stayed on" in out and "not moved:" in out


def test_the_run_carries_the_audit_trail(paths):
    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    report = json.loads(_json_report(P2))
    run = client.get_run(report["run"]["id"])
    tags = run.data.tags
    assert tags["reconf.airflow.dag_id"] == f"reconfigure_{JOB_ID}"
    assert tags["reconf.airflow.run_id"] == AIRFLOW_CTX["AIRFLOW_CTX_DAG_RUN_ID"]
    assert tags["reconf.airflow.try_number"] == "2"
    assert tags["reconf.airflow.url"] == ("http://airflow.example:8080/dags/reconfigure_tiny/runs/"
                                          "scheduled__2026-01-01T00%3A10%3A00%2B00%3A00")
    assert tags["reconf.trigger"] == "airflow"
    note = tags["mlflow.note.content"]
    assert "Strategy **milp**" in note and "Load distance" in note
    assert "plans v" in note and "Published** as assignment version 2" in note
    assert "reconfigure_tiny" in note
    moves = read_csv_artifact(client, run.info.run_id, "moves.csv")
    assert {"keygroup", "src_node", "dst_node", "load_pct", "state_bytes", "reason"} <= set(moves[0])
    for m in moves:
        assert m["keygroup"] in note


def _json_report(period_end) -> str:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["audit", "--job", JOB_ID, "--period-end", stamp(period_end), "--json"]) == 0
    return buffer.getvalue()


@pytest.mark.parametrize(("args", "message"), [
    (["--job", "nosuch", "--period-end", stamp(P1)],
     "unknown job 'nosuch': the MLflow store has no experiment for it; jobs with runs: tiny"),
    (["--job", JOB_ID, "--period-end", stamp(P3)],
     f"no run of job 'tiny' for the period ending {stamp(P3)}; nearest periods with a run: "
     f"{stamp(P1)}, {stamp(P2)}"),
    (["--job", JOB_ID, "--period-end", "yesterday"], "--period-end: period end 'yesterday' is not"),
    (["--job", JOB_ID, "--period-end", "2026-01-01T00:05:00"], "has no time zone; append Z"),
    (["--job", JOB_ID, "--period-end", stamp(P1), "--key-group", "nope"],
     "--key-group 'nope' is not a key group of this run (8 key groups, e.g. op0-kg000"),
    (["--job", JOB_ID, "--period-end", stamp(P1), "--key-group", "1"],
     "--key-group '1' matches several key groups (op0-kg001, op1-kg001); give the full id"),
    (["--job", JOB_ID, "--period-end", stamp(P1), "--dry-run"], "job 'tiny' has no dry run"),
    (["--job", JOB_ID, "--period-end", stamp(P1), "--plan-id", f"{JOB_ID}@{stamp(P1)}#7"],
     f"--plan-id 'tiny@{stamp(P1)}#7' is not a plan of job 'tiny' for the period ending "
     f"{stamp(P1)}; its plans: tiny@{stamp(P1)}"),
])
def test_bad_input_exits_2_with_one_clear_message(paths, capsys, args, message):
    before = sorted(p.name for p in paths.mlflow.rglob("*"))
    code = main(["audit", *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("reconf audit: error: ") and message in err
    lines = err.strip().splitlines()  # what, where, fix: like every exit 2
    assert len(lines) == 3 and lines[1].startswith("  where: ") and lines[2].startswith("  fix:   ")
    assert sorted(p.name for p in paths.mlflow.rglob("*")) == before


def test_no_store_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "empty"))
    assert main(["audit", "--job", JOB_ID, "--period-end", stamp(P1)]) == 2
    assert "no MLflow store at" in capsys.readouterr().err
    assert not (tmp_path / "empty").exists()  # no empty store was created
