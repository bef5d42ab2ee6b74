"""The soak (bench/soak/): its invariant checker is not blind, its fault schedule is a function
of the seed, and a short soak of the real stages with faults ends without a violation.

The checker's tests break a real store by hand, one invariant each: a store made by three clean
periods of the soak (module fixture), copied per test, checked once clean (no violation), then
broken and checked again (the invariant's violation, or the test fails).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.soak import run_soak
from bench.soak.invariants import DISK_PER_PERIOD, Checker
from bench.soak.report import replay_command, summary, targets
from bench.soak.schedule import FAULTS, STAGES, draw, draw_kill, schedule
from bench.soak.schedule import SCHEDULER_KILLS as SCHEDULED_KINDS
from bench.soak.world import JOB

CLEAN_PERIODS = 3


@pytest.fixture(scope="module")
def clean_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three periods of the soak's job, no fault: three published versions, applied."""
    root = tmp_path_factory.mktemp("soak") / "clean"
    rows = run_soak(root, CLEAN_PERIODS, seed=0, kinds=(), echo=False)
    assert [r["violations"] for r in rows] == [[]] * CLEAN_PERIODS
    return root


@pytest.fixture
def store(clean_store: Path, tmp_path: Path) -> tuple[Path, Checker]:
    """A copy of the clean store and a checker that has seen it once (and found nothing)."""
    root = tmp_path / "store"
    shutil.copytree(clean_store, root, symlinks=True)
    runs = root / "runs.jsonl"  # the log and the runs name the original's files: the copy's
    runs.write_text(runs.read_text().replace(str(clean_store), str(root)))
    conn = sqlite3.connect(root / "home" / "mlflow" / "mlflow.db")
    conn.execute("UPDATE runs SET artifact_uri = replace(artifact_uri, ?, ?)",
                 (str(clean_store), str(root)))
    conn.commit()
    conn.close()
    checker = Checker(root / "home", JOB, runs)
    assert checker.check(CLEAN_PERIODS) == []
    return root, checker


def _found(checker: Checker, invariant: str) -> list[str]:
    found = checker.check(CLEAN_PERIODS + 1)
    assert found, f"the checker missed the broken {invariant} invariant"
    assert all(v.period == CLEAN_PERIODS + 1 for v in found)
    return [v.detail for v in found if v.invariant == invariant]


def _rewrite(home: Path, table: str, change: Any) -> None:
    """Rewrite a Delta table with `change(rows)` applied (a hand at the lake, outside reconf)."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    path = str(home / "lake" / table)
    data = DeltaTable(path).to_pyarrow_table()
    rows = data.to_pylist()
    change(rows)
    write_deltalake(path, pa.Table.from_pylist(rows, schema=data.schema), mode="overwrite",
                    partition_by=["job_id"])


def _newest(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return max(rows, key=lambda r: r["version"])


def test_versions_a_gap_in_the_version_table(store: tuple[Path, Checker]) -> None:
    root, checker = store

    def gap(rows: list[dict[str, Any]]) -> None:
        rows.append({**_newest(rows), "version": CLEAN_PERIODS + 2})

    _rewrite(root / "home", "assignment_versions", gap)
    assert any("not 1.." in d for d in _found(checker, "versions"))


def test_versions_latest_behind_and_a_manifest_missing(store: tuple[Path, Checker]) -> None:
    root, checker = store
    folder = root / "home" / "published" / JOB
    (folder / "LATEST").write_text("2\n")
    (folder / "v1.json").unlink()
    details = _found(checker, "versions")
    assert any("LATEST names 2" in d for d in details)
    assert any("v1 has a version row but no manifest" in d for d in details)


def test_versions_the_newest_checksum(store: tuple[Path, Checker]) -> None:
    root, checker = store
    path = root / "home" / "published" / JOB / f"v{CLEAN_PERIODS}.json"
    doc = json.loads(path.read_text())
    unit = sorted(doc["assignment"])[0]
    doc["assignment"][unit] = "node-elsewhere"
    path.chmod(0o644)
    path.write_text(json.dumps(doc))
    assert any("checksum does not hold" in d for d in _found(checker, "versions"))
    assert any("manifest changed" in d for d in _found(checker, "immutable"))


def test_provenance_an_unvalidated_period(store: tuple[Path, Checker]) -> None:
    root, _ = store
    reports = sorted((root / "home" / "reports" / JOB).glob("*/validation.json"))
    report = json.loads(reports[-1].read_text())
    reports[-1].write_text(json.dumps({**report, "success": False}))
    fresh = Checker(root / "home", JOB, root / "runs.jsonl")  # the version is new to it
    found = [v for v in fresh.check(CLEAN_PERIODS + 1) if v.invariant == "provenance"]
    assert found and "without passing validation" in found[0].detail


@pytest.mark.parametrize("part", ["plan", "mlflow-param", "mlflow-artifact"])
def test_immutable_a_published_record_changed(store: tuple[Path, Checker], part: str) -> None:
    root, checker = store
    home = root / "home"
    if part == "plan":
        def edit(rows: list[dict[str, Any]]) -> None:
            for r in rows:
                if r["status"] == "published":
                    r["message"] = f"{r['message'] or ''} (edited)"

        _rewrite(home, "plans", edit)
    elif part == "mlflow-param":
        conn = sqlite3.connect(home / "mlflow" / "mlflow.db")
        conn.execute("UPDATE params SET value = value || 'x'")
        conn.commit()
        conn.close()
    else:
        plan = next((home / "mlflow" / "artifacts").rglob("plan.json"))
        plan.write_text(plan.read_text() + " ")
    details = _found(checker, "immutable")
    assert any("changed after publish" in d for d in details)


def test_stale_a_version_planned_before_the_newest(store: tuple[Path, Checker]) -> None:
    root, _ = store

    def stale(rows: list[dict[str, Any]]) -> None:
        for r in rows:
            doc = json.loads(r["plan_json"])
            doc["newest_version"] = 0
            r["plan_json"] = json.dumps(doc)

    _rewrite(root / "home", "plans", stale)
    fresh = Checker(root / "home", JOB, root / "runs.jsonl")
    found = [v for v in fresh.check(CLEAN_PERIODS + 1) if v.invariant == "stale"]
    assert found and "planned when the newest version was v0" in found[-1].detail


def test_runtime_an_unpublished_version_or_a_stray_unit(store: tuple[Path, Checker]) -> None:
    root, checker = store
    path = root / "home" / "runtime" / JOB / "runtime.json"
    state = json.loads(path.read_text())
    path.write_text(json.dumps({**state, "version": CLEAN_PERIODS + 4}))
    assert any("not published" in d for d in _found(checker, "runtime"))
    unit = sorted(state["assignment"])[0]
    others = [n for n in state["nodes"] if n != state["assignment"][unit]]
    path.write_text(json.dumps({**state, "assignment": {**state["assignment"],
                                                        unit: others[0]}}))
    assert any("assignment is not" in d for d in _found(checker, "runtime"))


def test_locks_a_lock_left_held(store: tuple[Path, Checker]) -> None:
    root, checker = store
    fd = os.open(root / "home" / "locks" / f"{JOB}.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert any("still held" in d for d in _found(checker, "locks"))
    finally:
        os.close(fd)


@pytest.mark.parametrize("case", ["no-where-fix", "traceback", "step-failed", "not-refused",
                                  "traceback-file", "hung"])
def test_messages_every_failure_says_what_where_fix(store: tuple[Path, Checker],
                                                    case: str) -> None:
    root, checker = store
    err = root / "logs" / "999999-collect.err"
    text, rc, expected = {
        "no-where-fix": ("reconf collect: error: something is wrong\n", 2, "refused"),
        "traceback": ("Traceback (most recent call last):\n  File x\nKeyError: 1\n", 2, "any"),
        "step-failed": ("reconf collect: error: no\n  where: here\n  fix: this\n", 2, "ok"),
        "not-refused": ("", 0, "refused"),
        "traceback-file": ("", 0, "ok"),
        "hung": ("", -9, "any"),
    }[case]
    err.write_text(text)
    with (root / "runs.jsonl").open("a") as out:
        out.write(json.dumps({"period": CLEAN_PERIODS + 1, "purpose": "collect",
                              "argv": ["collect", "--job", JOB], "expected": expected, "rc": rc,
                              "seconds": 0.1, "stderr_log": str(err),
                              "hung": case == "hung"}) + "\n")
    if case == "traceback-file":
        logs = root / "home" / "logs"
        logs.mkdir(exist_ok=True)
        (logs / "reconf-collect-error-20260101-1.log").write_text("Traceback ...")
    assert _found(checker, "messages")


def test_disk_growth_and_leftover_temporaries(store: tuple[Path, Checker]) -> None:
    root, checker = store
    home = root / "home"
    (home / "lake" / "filler.bin").write_bytes(b"\0" * (DISK_PER_PERIOD + 1))
    (home / "published" / JOB / f".v{CLEAN_PERIODS + 1}.json.1234.tmp").write_text("{")
    details = _found(checker, "disk")
    assert any("grew by" in d for d in details)
    assert any("outlived their period" in d for d in details)


@given(seed=st.integers(0, 2**31), period=st.integers(1, 10_000))
def test_the_fault_schedule_is_a_function_of_seed_and_period(seed: int, period: int) -> None:
    assert draw(seed, period) == draw(seed, period)
    prefix = schedule(seed, 5)
    assert schedule(seed, 8)[:len(prefix)] == prefix  # --periods P replays the first P periods
    for d in draw(seed, period):
        assert d.step in FAULTS[d.kind].steps and d.period == period


def test_the_default_schedule_draws_every_kind_enough() -> None:
    quick = Counter(d.kind for d in schedule(1, 60))
    full = Counter(d.kind for d in schedule(1, 500))
    assert sum(full.values()) >= 300 and set(full) == set(FAULTS)
    assert sum(quick.values()) >= 30 and len(quick) >= 12


def test_report_targets_and_replay() -> None:
    rows = [{"seed": 7, "period": 1, "seconds": 2.0, "faults": [{"kind": "stop", "applied": True}],
             "violations": [{"invariant": "locks", "detail": "x", "known": None}]},
            {"seed": 7, "period": 1, "seconds": 30.0, "scheduled": True, "run": "success",
             "published": True, "violations": [],
             "faults": [{"kind": "kill-triggerer", "applied": True}]}]
    total = summary(rows, 120.0)
    assert (total["faults"], total["violations"], total["recoveries"]) == (2, 1, 1)
    assert total["by_kind"] == {"kill-triggerer": 1, "stop": 1}
    assert (total["scheduled_periods"], total["scheduled_runs"], total["scheduled_published"]) \
        == (1, {"success": 1}, 1)
    verdicts = {t["target"]: t["verdict"] for t in targets(total, quick=True)}
    assert verdicts["invariant violations"] == "miss" and verdicts["wall minutes"] == "beat"
    assert replay_command(7, 42) == "reconf bench soak --seed 7 --periods 42 --workers 1"
    assert replay_command(7, 3, scheduled=True, kinds=["kill-scheduler"]) == (
        "reconf bench soak --seed 7 --periods 0 --scheduled 3 --workers 1 --kinds kill-scheduler")


def test_the_scheduled_slice_draws_each_service_at_a_moment_of_its_own() -> None:
    """Each period's kill is a function of the seed and the period (`--scheduled P` replays
    periods 1..P); every kind is drawn; the triggerer's moment is the deferred landing wait,
    the others' a stage; `--kinds` without a slice kind draws no kill."""
    kinds = tuple(SCHEDULED_KINDS)
    draws = [draw_kill(3, p, kinds) for p in range(1, 31)]
    assert draws == [draw_kill(3, p, kinds) for p in range(1, 31)]
    assert {d.kind for d in draws if d} == set(SCHEDULED_KINDS)
    for d in draws:
        assert d is not None and 0 <= d.pause_s <= 1.5 and 0 <= d.down_s <= 3
        assert (d.task == "wait_for_landing") == (d.service == "triggerer")
        assert d.task in (*STAGES, "wait_for_landing")
    only = [draw_kill(3, p, ("kill-triggerer",)) for p in range(1, 9)]
    assert {d.kind if d else None for d in only} == {"kill-triggerer"}
    assert draw_kill(3, 1, ()) is None


def test_the_cli_refuses_an_unknown_fault_kind() -> None:
    """`reconf bench soak --kinds` names the kinds it knows (the quick soak's run through the
    CLI, its rows and its exit: tests/bench/test_soak_quick.py)."""
    import subprocess
    import sys

    from schemas.config import PROJECT_ROOT

    bad = subprocess.run([sys.executable, "-m", "reconf.cli", "bench", "soak", "--kinds", "nope"],
                         cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
                         check=False)
    assert bad.returncode == 2 and "unknown fault kind(s) ['nope']" in bad.stderr, bad.stderr
    assert "kill-scheduler" in bad.stderr  # the slice's kinds are kinds too
    empty = subprocess.run([sys.executable, "-m", "reconf.cli", "bench", "soak", "--periods",
                            "0", "--scheduled", "0"], cwd=PROJECT_ROOT, capture_output=True,
                           text=True, timeout=120, check=False)
    assert empty.returncode == 2 and "nothing to run" in empty.stderr, empty.stderr
    assert "where:" in empty.stderr and "fix:" in empty.stderr and "Traceback" not in empty.stderr
