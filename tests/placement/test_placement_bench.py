"""`reconf bench balance` and `reconf bench scale` plumbing on small slices (figures: the bench)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

import bench.balance as balance
import bench.scale as scale
from bench import BENCHMARKS
from bench.balance.report import format_table, summary, target_lines


def _args(path: Path, **over: object) -> argparse.Namespace:
    values = {"quick": False, "json": path, "resume": False, "clusters": "20/400",
              "seeds": 1, "limits": "0.3", "solvers": "highs", "max_migrations": "10",
              "varies": "20,40"}
    values.update(over)
    return argparse.Namespace(**values)


def test_grids_match_the_issue() -> None:
    full, quick = balance.FULL, balance.QUICK
    assert balance.CLUSTERS == {"20/400": (20, 400, 10), "40/800": (40, 800, 20),
                                "60/1200": (60, 1200, 30)}
    assert full["max_migrations"] == [10, 20, 30, 40] and full["varies"] == [10, 20, 30, 40, 50]
    assert full["limits"] == [1.0, 2.0, 5.0, 10.0] and full["solvers"] == ["highs", "cbc"]
    assert len(full["seeds"]) >= 3
    assert quick["clusters"] == ["20/400", "40/800"] and quick["max_migrations"] == [10, 20]
    assert quick["varies"] == [20, 40] and quick["limits"] == [2.0] and quick["seeds"] == [1]
    assert [r[0] for r in balance.runs(full)].count("milp") == 8
    assert {"balance", "scale"} <= set(BENCHMARKS)


def test_balance_rows_resume_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    path = tmp_path / "balance.json"
    rows = balance.run(_args(path))
    assert len(rows) == 2 * 3  # 2 cells x (milp, flux, greedy)
    for row in rows:
        assert set(balance.ROW_KEYS) <= set(row)
    milp = [r for r in rows if r["strategy"] == "milp"]
    flux = {r["cell"]: r["load_distance"] for r in rows if r["strategy"] == "flux"}
    assert all(r["load_distance"] <= flux[r["cell"]] + 1e-9 for r in milp)
    assert all(r["lower_bound"] is not None for r in milp)
    assert json.loads(path.read_text()) == rows
    err = capsys.readouterr().err
    assert "[2/2] 20/400 mm=10 varies=40 seed=1" in err and "ETA" in err
    again = balance.run(_args(path, resume=True))  # nothing left to run
    assert again == rows and "(2 already in" in capsys.readouterr().err
    text = summary(rows)
    assert "MILP (highs) <= Flux in every cell at 0.3 s: yes (0 of 2 cells violating)" in text
    ratio = sum(r["load_distance"] / flux[r["cell"]] for r in milp) / len(milp)
    assert f"mean MILP/Flux ratio at 0.3 s: {ratio:.3f} (target <= 0.7)" in text
    assert "milp-highs@2s: no cells" in text  # the 2 s targets need 2 s rows
    assert "milp-highs@0.3s" in format_table(rows)


def test_scale_row_and_targets() -> None:
    row = scale.plan_once("milp", {"solver": "highs", "time_limit_s": 1.0}, 1, 40, 1200)
    assert row["peak_rss_mib"] > 0
    flux = scale.run_isolated("flux", {}, 1, nodes=40, keygroups=1200)
    assert flux["peak_rss_mib"] > 0 and flux["load_distance"] >= row["load_distance"] - 1e-9
    lines = scale.targets([flux, row])
    assert lines[0].startswith("seed 1: plan in <= 60 s: yes")
    assert lines[1].startswith("seed 1: LD <= Flux's: yes")
    assert "milp-highs@1s" in scale.format_table([flux, row])


def test_heterogeneous_grid_rows_and_summary(tmp_path: Path) -> None:
    g = balance.grid(_args(tmp_path / "x.json", heterogeneous=True, clusters=None, seeds=None,
                           limits=None, solvers=None, max_migrations=None, varies=None))
    assert g == balance.HETEROGENEOUS
    assert g["clusters"] == list(balance.CLUSTERS) and len(g["seeds"]) >= 3
    assert g["max_migrations"] == [10, 20, 30, 40] and g["scenarios"] == ["het", "hot1", "hot3"]
    rows = balance.run(_args(tmp_path / "het.json", heterogeneous=True, varies="20"))
    assert {r["scenario"] for r in rows} == {"het", "hot1", "hot3"} and len(rows) == 3 * 3
    assert all(r["cell"].startswith(r["scenario"] + "|") for r in rows)
    assert all(r["status"] != "infeasible" for r in rows)
    text = summary(rows)
    assert "MILP <= min(Flux, greedy) in every cell at 0.3 s: yes (0 of 3 cells violating)" in text
    per_scenario = "\n".join(target_lines(rows, "highs", 0.3))
    assert "  het: 1 cells, LD before" in per_scenario and "  hot3: 1 cells" in per_scenario
    assert format_table(rows).splitlines()[0].startswith("scen.")
