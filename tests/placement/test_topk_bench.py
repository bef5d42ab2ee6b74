"""`reconf bench topk` on a tiny cluster: rows for every k, and k covering every pair loses
nothing (the same plan, the same true collocation as all pairs)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

import bench.topk as topk
from bench import BENCHMARKS


def test_topk_bench_rows_and_no_loss_when_k_covers_every_pair(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert BENCHMARKS["topk"] == "bench.topk"
    monkeypatch.setattr(topk, "SIZES_QUICK", ((4, 40, 4),))
    monkeypatch.setattr(topk, "STRATEGIES", ("cola",))
    out = tmp_path / "topk.json"
    assert topk.main(argparse.Namespace(quick=True, json=str(out), periods=1)) == 0
    rows = json.loads(out.read_text())
    assert [r["k"] for r in rows] == ["all", 64, 16, 4, 1]
    by_k = {r["k"]: r for r in rows}
    assert by_k[64]["pairs_retained"] == by_k["all"]["pairs_all"]  # 10 downstream units < 64
    assert by_k[64]["collocation_true"] == by_k["all"]["collocation_true"]
    assert by_k[1]["pairs_retained"] < by_k["all"]["pairs_all"]
    assert all(r["collocation_seen"] <= r["collocation_true"] + 1e-9 for r in rows)
    assert "collocation reached, top-k" in capsys.readouterr().out
