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
    assert "moved back" in printed
    assert sum(printed.count(w) for w in ("match:", "miss:", "inconclusive:")) == 2
    assert len(verdicts(rows)) == 3 and plain["node_noise"] == 0.5


def _rows(back_plain: int, back_stable: int, ld_stable: float = 10.0) -> list[dict[str, object]]:
    return [{"variant": "plain", "moved_back": back_plain, "mean_ld": 10.0,
             "moves_per_period": 9.0},
            {"variant": "stable", "moved_back": back_stable, "mean_ld": ld_stable,
             "moves_per_period": 8.0}]


def test_the_verdicts_need_evidence_before_they_call_five_times_fewer_a_match() -> None:
    assert verdicts(_rows(4, 0))[0].startswith("inconclusive: moves back 4 -> 0")
    assert verdicts(_rows(10, 2))[0].startswith("match: moves back 10 -> 2")
    assert verdicts(_rows(10, 3))[0].startswith("miss: moves back 10 -> 3")
    assert verdicts(_rows(10, 0, 11.5))[1].startswith("miss: mean LD 10.00 -> 11.50")
