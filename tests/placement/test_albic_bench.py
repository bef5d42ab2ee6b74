"""`reconf bench collocation` plumbing on a tiny cluster (the real figures live in the bench)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.collocation import format_summary, format_targets, format_trend, run, run_cell

KEYS = {"cluster", "max_collocation", "strategy", "iteration", "load_distance",
        "collocation_factor", "load_index", "migrations", "wall_s"}


def test_run_cell_rows_and_tables() -> None:
    rows = run_cell((4, 40, 4), 100.0, figure="t", max_iterations=3, patience=10,
                    time_limit_s=0.5, seed=2)
    assert len(rows) == 3 * 4
    assert all(set(r) >= KEYS for r in rows)
    assert {r["strategy"] for r in rows} == {"albic", "albic_many", "cola", "milp"}
    by = {(r["strategy"], r["iteration"]): r for r in rows}
    for it in (1, 2, 3):
        assert by[("albic", it)]["migrations"] <= 20
        assert by[("albic_many", it)]["collocation_factor"] >= by[("milp", it)][
            "collocation_factor"]
    assert by[("cola", 1)]["load_index"] < 100.0  # collocation lowers the system load
    text = format_trend(rows, every=2) + format_summary(rows) + format_targets(rows)
    assert "4/40/4" in text and "albic_many" in text and "COLA" in text


def test_run_cell_stops_when_albic_collocation_stalls() -> None:
    rows = run_cell((4, 40, 4), 0.0, figure="t", max_iterations=50, patience=2,
                    time_limit_s=0.3, seed=1, strategies=("albic",))
    assert 3 <= len(rows) < 50  # x = 0: nothing to collocate, stops after `patience` + 1


def test_strategy_subset_compared_with_earlier_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cola_rows = run(quick=True, max_iterations=2, strategies=("cola",),
                    json_path=tmp_path / "cola.json")
    assert {r["strategy"] for r in cola_rows} == {"cola"}
    capsys.readouterr()
    # A later run of albic alone: the targets compare it with the earlier COLA rows.
    rows = run(quick=True, max_iterations=2, strategies=("albic",),
               compare_with=tmp_path / "cola.json")
    assert {r["strategy"] for r in rows} == {"albic"} and len(rows) == 2
    out = capsys.readouterr().out
    assert "comparing with 2 rows" in out
    assert "x=50 albic: LD" in out and "< COLA" in out  # the target line needs COLA's rows
    with pytest.raises(ValueError, match="unknown strategies"):
        run(quick=True, strategies=("albic", "nope"))
    with pytest.raises(ValueError, match="cannot read"):
        run(quick=True, strategies=("albic",), compare_with=tmp_path / "missing.json")
