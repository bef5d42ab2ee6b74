"""`reconf bench whatif`: the what-if of a period timed per shadow, from its input file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from jobs.whatif.codec import encode
from jobs.whatif.input import WhatIfInput, whatif_input
from placement.model import Budget
from placement.registry import get_strategy
from placement.workloads.synthetic import synthetic_state
from schemas.config import JobConfig

ROOT = Path(__file__).resolve().parents[2]


def _reconf(*args: str, tmpdir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return subprocess.run([sys.executable, "-m", "reconf.cli", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)


def test_bench_whatif_times_each_shadow_against_its_cap(tmp_path: Path) -> None:
    state = synthetic_state(nodes=4, keygroups=16, operators=2, varies=40.0, seed=3)
    budget = Budget(max_migrations=3)
    plan = get_strategy("milp")(state, budget, time_limit_s=2.0)
    job = JobConfig("wb", max_migrations=3, shadow_strategies=("greedy", "flux", "albic"),
                    solver_time_limit_s=2.0)
    data = whatif_input(job, "2026-01-01T00:05:00Z", "milp", state, plan, budget)
    assert data is not None
    source = tmp_path / "input.json"
    source.write_text(encode(data, {WhatIfInput.__name__: WhatIfInput}))
    out = tmp_path / "rows.json"
    done = _reconf("bench", "whatif", "--input", str(source), "--workers", "2",
                   "--json", str(out))
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())
    assert [r["strategy"] for r in rows] == ["greedy", "flux", "albic"]
    for r in rows:
        assert r["status"] == "planned" and r["verdict"] == "match"
        assert 0 < r["wall_s"] <= r["cap_s"] and r["time_limit_s"] == 2.0
        assert r["ld_after"] is not None and r["migrations"] <= 3
    assert "3 of 3 shadows planned within their budget" in done.stdout
    # no --input: the newest t32k input a cycle bench run left under the temporary directory
    left = tmp_path / "tmp" / "reconf-bench-cycle-x" / "worker-native" / "whatif" / "t32k"
    left.mkdir(parents=True)
    (left / "t32k@2026-01-01T00_10_00Z.json").write_text(source.read_text())
    done = _reconf("bench", "whatif", "--only", "greedy", "--json", str(out),
                   tmpdir=tmp_path / "tmp")
    assert done.returncode == 0, done.stderr
    assert [r["strategy"] for r in json.loads(out.read_text())] == ["greedy"]
    assert str(left) not in done.stderr and "wb @ 2026-01-01T00:05:00Z" in done.stdout
    # one shadow hung: stopped at its cap, a miss (a budget whose first share, ~6 s, holds a
    # shadow worker's start-up on a loaded machine: at 4 s greedy itself missed at load 15)
    env_fault = {"RECONF_SHADOW_FAULT": "flux:hang"}
    os.environ.update(env_fault)
    try:
        done = _reconf("bench", "whatif", "--input", str(source), "--only", "greedy", "flux",
                       "--budget", "12", "--workers", "1", "--json", str(out))
    finally:
        os.environ.pop("RECONF_SHADOW_FAULT")
    rows = json.loads(out.read_text())
    assert [(r["strategy"], r["status"], r["verdict"]) for r in rows] == [
        ("greedy", "planned", "match"), ("flux", "timed_out", "miss")]
    assert rows[1]["wall_s"] >= rows[1]["cap_s"] - 0.05


def test_bench_whatif_refuses_a_bad_input_with_one_message(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    done = _reconf("bench", "whatif", "--input", str(bad), "--json", str(tmp_path / "r.json"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is not a readable what-if input" in done.stderr
    assert not (tmp_path / "r.json").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    done = _reconf("bench", "whatif", "--json", str(tmp_path / "r.json"), tmpdir=empty)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "run `reconf bench cycle" in done.stderr and not (tmp_path / "r.json").exists()
