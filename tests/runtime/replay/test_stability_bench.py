"""`reconf bench stability`: the closed loop on replayed data with noisy loads, plain and with
the band and cooldown (bench/stability.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.stability import verdicts
from reconf.cli import main


def test_reconf_bench_stability_quick_prints_both_variants_and_writes_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "stability.json"
    assert main(["bench", "stability", "--quick", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    plain, stable = rows
    assert (plain["variant"], stable["variant"]) == ("plain", "stable")
    assert stable["cooldown"] == 3 and plain["cooldown"] == 0
    assert stable["moved_back"] <= plain["moved_back"]  # the cooldown forbids moves back
    assert stable["moved_back"] == 0
    printed = capsys.readouterr().out
    assert "moved back" in printed and printed.count("match") + printed.count("miss") == 2
    assert len(verdicts(rows)) == 2
