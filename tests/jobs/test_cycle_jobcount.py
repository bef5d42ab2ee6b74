"""`reconf bench cycle`'s count of each stage's Spark work (bench/cycle/jobcount.py): what the
drivers' event logs gained between two looks, Delta commits included, and the switch that gives
every driver an event log (jobs/spark/conf.py)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from bench.cycle.jobcount import EventLogCounter, print_work
from jobs.spark.conf import session_conf


def _job(job_id: int, description: str) -> str:
    return json.dumps({"Event": "SparkListenerJobStart", "Job ID": job_id, "Stage IDs": [job_id],
                       "Properties": {"spark.job.description": description}},
                      separators=(",", ":"))


def _line(event: str, **fields: Any) -> str:
    return json.dumps({"Event": event, **fields}, separators=(",", ":"))


def _append(path: Path, *lines: str, newline: bool = True) -> None:
    with path.open("a") as out:
        out.write("\n".join(lines) + ("\n" if newline else ""))


def test_each_look_counts_what_the_logs_gained_and_the_lake_committed(tmp_path: Path) -> None:
    events, lake = tmp_path / "events", tmp_path / "lake"
    (events / "eventlog_v2_app-2").mkdir(parents=True)
    (lake / "plans" / "_delta_log").mkdir(parents=True)
    log = events / "local-1.inprogress"
    _append(log, _job(0, "warm-up"), _line("SparkListenerJobEnd", **{"Job ID": 0}))
    counter = EventLogCounter(events)
    counter.start(lake)  # the warm-up is not counted
    (lake / "plans" / "_delta_log" / "00000000000000000000.json").write_text("{}")
    sql = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"
    _append(log, _line(sql, executionId=1),
            _job(1, "Delta: …: Compute snapshot for version: 3"),
            _line("SparkListenerStageSubmitted"), _line("SparkListenerJobEnd", **{"Job ID": 1}),
            _job(2, 'Spark Connect - plan {\n command {\n write_operation {'),
            _line("SparkListenerStageSubmitted"), _line("SparkListenerStageSubmitted"),
            _line("SparkListenerJobEnd", **{"Job ID": 2}))
    # a second driver (a +cluster worker's session), its log in a directory of its own
    _append(events / "eventlog_v2_app-2" / "events_1_app-2", _job(7, "select"),
            _line("SparkListenerJobEnd", **{"Job ID": 7}))
    # a line still being written is counted at the next look, not twice
    _append(log, _job(3, "Delta: x: Filtering files for query"), newline=False)
    work = counter.take(settle_s=0.1, timeout_s=0.5)
    assert (work.jobs, work.stages, work.sql, work.commits) == (3, 3, 1, 1)
    assert work.described == {"delta snapshot": 1, "write": 1, "query": 1}
    _append(log, "", _line("SparkListenerJobEnd", **{"Job ID": 3}))
    log.rename(events / "local-1")  # the session ended: the same log, renamed
    work = counter.take(settle_s=0.1, timeout_s=2.0)
    assert (work.jobs, work.stages, work.commits) == (1, 0, 0)
    assert work.described == {"delta file listing": 1}
    assert work.row("plan")["plan_jobs"] == 1
    assert counter.take(settle_s=0.1, timeout_s=0.5).jobs == 0


def test_the_table_shows_jobs_sql_and_commits_per_stage(capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    row: dict[str, object] = {"mode": "worker+connect", "job": "t10k"}
    for i, stage in enumerate(("collect", "validate", "plan", "publish")):
        row |= {f"{stage}_jobs": 10 + i, f"{stage}_sql": 5, f"{stage}_commits": i}
    print_work([row, {"mode": "worker+native", "job": "t10k"}])
    out = capsys.readouterr().out
    assert "worker+connect" in out and "worker+native" not in out
    assert "10/5/0" in out.split() and "46/20/6" in out.split()


def test_a_driver_logs_its_events_only_when_asked(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECONF_SPARK_EVENT_LOG", raising=False)
    assert not any(key.startswith("spark.eventLog") for key in session_conf())
    monkeypatch.setenv("RECONF_SPARK_EVENT_LOG", str(tmp_path))
    conf = session_conf()
    assert conf["spark.eventLog.enabled"] == "true" and conf["spark.eventLog.dir"] == str(tmp_path)
    assert conf["spark.eventLog.compress"] == "false"


def test_the_documented_spark_rows_command_parses() -> None:
    """docs/benchmarks.md, "Spark work per stage": the command that prints the table."""
    from bench.cycle import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    got = parser.parse_args(["--no-growth", "--no-fleet", "--modes", "worker+connect",
                             "worker+cluster", "--targets", "t10k"])
    assert got.modes == ["worker+connect", "worker+cluster"] and got.targets == ["t10k"]
    assert got.no_growth and got.no_fleet
