"""`reconf bench execution`: the same plan at once and in waves, measured on the replay engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.execution import verdicts
from bench.execution.run import apply_schedule, prepare
from reconf.cli import main
from runtime.replay.datasets import Datasets
from runtime.replay.spec import ReplaySpec
from schemas.schedule import WaveLimits


def test_waves_keep_the_peak_under_the_ceiling_the_all_at_once_move_breaks(tiny: Datasets) -> None:
    spec = ReplaySpec("bx", job=2, nodes=4, keygroups_per_node=2, periods=6, load_pct=70)
    setup = prepare(spec, tiny, 2, "albic")
    at_once = apply_schedule(setup, tiny, "at once", WaveLimits(None, None, None, None))
    waves = apply_schedule(setup, tiny, "waves", WaveLimits(2, None, None, 95.0))
    assert at_once.moves == waves.moves > 4 and at_once.waves == 1 < waves.waves
    assert waves.peak_during_pct <= 95.0 < at_once.peak_during_pct
    assert at_once.apply_s <= waves.apply_s <= waves.sequential_s  # bounded cost in time
    assert waves.state_bytes == at_once.state_bytes > 0
    # the same target either way: the period after the move measures the same
    assert waves.after_peak_pct == pytest.approx(at_once.after_peak_pct)


def test_reconf_bench_execution_quick_prints_verdicts_and_writes_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "execution.json"
    assert main(["bench", "execution", "--quick", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["variant"] for r in rows] == ["at once", "waves", "rated"]
    printed = capsys.readouterr().out
    assert "peak during %" in printed and "rate B/s" in printed and "miss" not in printed
    assert all(v.split(":")[0] in ("match", "beat") for v in verdicts(rows, 95.0))
    waves, rated = rows[1], rows[2]
    # the byte rate: no wave faster than it, at least bytes / rate in all, never faster than
    # without (whether 1e6 binds depends on the plan's waves; 2e5 below always does)
    assert rated["rate"] == 1e6 and rated["max_bytes_per_s"] <= 1e6
    assert rated["apply_s"] >= rated["state_bytes"] / 1e6 and rated["apply_s"] >= waves["apply_s"]
    assert rated["peak_during_pct"] == waves["peak_during_pct"]  # the same waves, paced
    # docs/benchmarks.md: `reconf bench execution --quick --rate 2e5`
    assert main(["bench", "execution", "--quick", "--rate", "2e5", "--json", str(out)]) == 0
    slow = json.loads(out.read_text())[2]
    assert slow["rate"] == slow["max_bytes_per_second"] == 2e5
    assert slow["max_bytes_per_s"] <= 2e5 and slow["apply_s"] >= slow["state_bytes"] / 2e5
    assert slow["apply_s"] > rated["apply_s"] and slow["apply_s"] > waves["apply_s"]
    assert waves["max_bytes_per_s"] > 2e5  # so the slow rate bound at least one wave


def test_a_bad_rate_is_refused_with_exit_2_and_nothing_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "execution.json"
    for bad in ("0", "-1e6", "fast", "inf"):
        with pytest.raises(SystemExit) as done:
            main(["bench", "execution", "--quick", f"--rate={bad}", "--json", str(out)])
        assert done.value.code == 2 and "argument --rate: must be" in capsys.readouterr().err
    assert not out.exists()
