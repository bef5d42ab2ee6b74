"""The closed-loop benchmark's plumbing on the tiny data set: rows, strategy choice, targets, plot."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

import bench.closed_loop as cl
from bench.closed_loop.report import format_table, plot, targets
from runtime.replay.datasets import Datasets


def args(**kw: object) -> argparse.Namespace:
    base = {"job": None, "strategy": None, "periods": None, "budget": None, "time_limit": None,
            "compress": 52, "plot": None, "quick": False, "json": None}
    return argparse.Namespace(**{**base, **kw})


def test_milp_loop_moves_within_budget_and_none_stays(tiny: Datasets, tmp_path: Path) -> None:
    rows = cl.run_strategy(cl.Run(2, "milp", 3, 4, 0.5, 4), tmp_path / "m", data=tiny)
    assert [r["period"] for r in rows] == [1, 2, 3]
    assert rows[0]["load_index"] == 100.0 and rows[0]["migrations"] == 0
    assert rows[0]["collocation_factor"] == 0.0  # the initial allocation separates every pair
    assert all(0 < r["migrations"] <= 4 for r in rows[1:])
    assert all(r["planned_load_distance"] <= rows[0]["load_distance"] for r in rows[1:])
    assert all(r["migration_pause_s"] > 0 for r in rows[1:])
    still = cl.run_strategy(cl.Run(2, "none", 3, 4, 0.5, 4), tmp_path / "n", data=tiny)
    assert [r["migrations"] for r in still] == [0, 0, 0]
    assert {r["collocation_factor"] for r in still} == {0.0}


def test_potc_pays_merges(tiny: Datasets, tmp_path: Path) -> None:
    rows = cl.run_strategy(cl.Run(1, "potc", 4, 13, 0.5, 4), tmp_path, data=tiny)
    assert sum(r["merge_tuples"] for r in rows) > 0
    assert all(r["migrations"] == 0 for r in rows)


def test_missing_strategies_are_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    import placement.registry

    monkeypatch.setattr(placement.registry, "strategy_names", lambda: ("flux", "milp"))
    assert cl.available(["albic", "milp", "none", "cola"]) == (["milp", "none"], ["albic", "cola"])
    with pytest.raises(ValueError, match=r"none of the strategies .*albic.*not registered"):
        cl.choose(args(strategy=["albic"]))
    quick = cl.choose(args(quick=True))
    assert quick.job == 2 and quick.strategies == ("milp", "none")
    assert quick.missing == ("albic", "cola") and "not registered" in quick.notes[0]
    chosen = cl.choose(args(job=1, strategy=["milp,flux", "potc"], periods=5))
    assert chosen.strategies == ("milp", "flux", "potc") and chosen.budget == 13
    with pytest.raises(ValueError, match="unknown strategy"):
        cl.choose(args(strategy=["milpp"]))


def row(strategy: str, period: int, cf: float, li: float, mig: int, ld: float = 3.0
        ) -> dict[str, Any]:
    return {"job": 2, "strategy": strategy, "period": period, "collocation_factor": cf,
            "load_distance": ld + 5, "load_index": li, "migrations": mig,
            "migration_pause_s": 0.1, "planned_load_distance": ld, "system_load_pct": 50.0,
            "merge_tuples": 0, "wall_s": 0.1}


def test_targets_table_and_plot(tmp_path: Path) -> None:
    rows = [row("albic", p, min(100.0, 15.0 * p), max(50.0, 100 - 6.0 * p), 10)
            for p in range(1, 11)]
    rows += [row("cola", p, 100.0, 76.0, 190, ld=9.0) for p in range(1, 11)]
    lines = "\n".join(targets(rows, 2, 10))
    assert "[match] albic climbs to COLA's collocation: 100.0 % vs COLA 100.0 %" in lines
    assert "[match] albic cuts the load index from 100 % to about 50 %: 50.7 %" in lines
    assert "[match] COLA migrates ~200" in lines and "[match] albic migrates at most" in lines
    assert "[match] albic's load distance below COLA's" in lines
    early = [r for r in rows if r["period"] <= 3]
    assert "[miss ] albic climbs" in "\n".join(targets(early, 2, 10))
    assert "[n/a  ]" in "\n".join(targets([r for r in rows if r["strategy"] == "cola"], 2, 10))
    assert len(format_table(rows).splitlines()) == 22
    out = tmp_path / "fig.png"
    plot(rows, out, "test")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
