"""`reconf bench live`'s figures from recorded records (bench/live/report.py): the moments after
each period end, where the time went per task, the target's verdicts; and the job config and the
task-log markers it reads (bench/live/kit.py). The live run itself is not a timed test here:
tests/e2e/test_bench_live.py runs it end to end and checks its structure only."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bench.live.kit import _log_marks, job_config
from bench.live.report import (
    PARTS,
    TARGET_S,
    breakdown,
    period_rows,
    print_tables,
    target_row,
    verdict,
)

#: two scheduled runs of a live run (SPL 30 s), as kit.read_records returned them
RECORDS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "bench_live_records.json").read_text())


def test_each_moment_is_seconds_after_its_period_end() -> None:
    rows = period_rows(RECORDS, warmup=0)
    assert [r["period_end"] for r in rows] == [r["period_end"] for r in RECORDS]
    second = rows[1]
    assert second["landed_s"] == 0.4
    assert second["version"] == 3 and second["state"] == "success"
    # the cycle in order: noticed, then each stage's task inside its start-end, then published
    order = [second["noticed_s"]] + [second[f"{s}_{k}_s"] for s in ("collect", "validate", "plan",
                                                                   "publish")
                                     for k in ("start", "stage_start", "stage_end", "end")]
    assert order == sorted(order)
    assert second["publish_stage_start_s"] <= second["published_s"] <= second["publish_end_s"]
    assert second["published_s"] == pytest.approx(8.9, abs=0.05)


def test_the_parts_of_the_tasks_add_up_to_the_run_from_creation_to_publish_end() -> None:
    for rec, row in zip(RECORDS, period_rows(RECORDS, warmup=0), strict=True):
        total = sum(v for task in row["parts"].values() for v in task.values())
        span = rec["tasks"]["publish"]["end"] - rec["run"]["created"]
        assert total == pytest.approx(span, abs=0.01)


def test_the_breakdown_and_the_target_count_only_the_timed_periods() -> None:
    rows = period_rows(RECORDS, warmup=1)
    assert [r["warmup"] for r in rows] == [True, False]
    parts = breakdown(rows)
    assert [p["task"] for p in parts] == ["wait_for_landing", "collect", "validate", "plan",
                                          "publish"]
    validate = parts[2]
    assert validate["stage_s"] == pytest.approx(rows[1]["parts"]["validate"]["stage"], abs=0.01)
    assert validate["total_s"] == pytest.approx(sum(validate[f"{p}_s"] for p in PARTS), abs=0.02)
    target = target_row(rows, 30.0)
    assert (target["periods"], target["published"]) == (1, 1)
    assert target["p50_s"] == target["max_s"] == rows[1]["published_s"]
    assert target["verdict_p50"] == target["verdict_max"] == "beat"  # 8.9 s < 0.9 x 15 s


def test_the_verdicts_and_a_period_that_never_published() -> None:
    assert TARGET_S == 15.0
    assert [verdict(v, 15.0) for v in (13.4, 13.5, 15.0, 15.1, None)] == [
        "beat", "match", "match", "miss", "miss"]
    records = copy.deepcopy(RECORDS)
    del records[1]["published"]
    target = target_row(period_rows(records, warmup=0), 30.0)
    assert target["published"] == 1 and target["max_s"] is None
    assert target["verdict_max"] == "miss"
    assert target["p50_s"] == pytest.approx(18.1, abs=0.05)  # of what did publish


def test_the_tables_print_each_period_and_the_target(capsys: pytest.CaptureFixture[str]) -> None:
    rows = period_rows(RECORDS, warmup=1)
    print_tables(rows, breakdown(rows), {**target_row(rows, 30.0), "scheduler_cpu_pct": 12.5})
    out = capsys.readouterr().out
    assert "20:04:00*" in out and "20:04:30 " in out  # the warm-up marked
    assert "all tasks" in out and "scheduler 12.5 %" in out
    assert "p50 8.9 s  beat" in out and "max 8.9 s  beat" in out


def test_the_job_is_the_demo_job_on_a_short_grid(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from schemas.config import resolve_job

    start = datetime(2026, 1, 1, tzinfo=UTC)
    path = tmp_path / "jobs.toml"
    path.write_text(job_config(timedelta(seconds=30), start))
    monkeypatch.setenv("RECONF_CONFIG", str(path))
    job = resolve_job("demo")
    assert (job.spl, job.start_date, job.catchup_periods) == (timedelta(seconds=30), start, 0)
    assert job.landing_wait == timedelta(seconds=30) and job.shadow_time_budget_s == 10.0
    assert (job.strategy, job.max_migrations, job.solver_time_limit_s) == ("milp", 8, 5.0)
    assert job.source["keygroups_per_operator"] == 16


def test_the_stage_lines_and_the_parse_are_read_from_a_task_log(tmp_path: Path) -> None:
    log = tmp_path / "attempt=1.log"
    lines = [
        {"timestamp": "2026-11-28T20:04:38.500000Z", "event": "Worker startup parse complete"},
        {"timestamp": "2026-11-28T20:04:38.733775Z", "event": "reconf-stage publish start"},
        {"timestamp": "2026-11-28T20:04:39.042538Z", "event": "reconf-stage publish done 0.31 s"},
    ]
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    marks = _log_marks(log)
    assert marks["stage_end"] - marks["stage_start"] == pytest.approx(0.309, abs=1e-3)
    assert marks["parsed"] < marks["stage_start"]
