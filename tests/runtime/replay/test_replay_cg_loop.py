"""The Consistent Grouping closed loop (bench/closed_loop/cg.py) on the tiny data set: the
pairing relieves the overloaded reference nodes where key grouping alone does not, and the
capacity change is visible to the planner."""

from __future__ import annotations

from pathlib import Path

from bench.closed_loop.cg import CgRun, cg_summary, changes_at, pairing_speed, run_cg
from runtime.replay.datasets import Datasets


def test_cg_relieves_the_weak_nodes_and_follows_the_capacity_change(tiny: Datasets,
                                                                     tmp_path: Path) -> None:
    count = 9
    kg = run_cg(CgRun("kg", count), tmp_path / "kg", data=tiny)
    cg = run_cg(CgRun("cg", count), tmp_path / "cg", data=tiny)
    assert [r["period"] for r in cg] == list(range(1, count + 1))
    assert all(r["migrations"] == 0 for r in kg)
    first_change = changes_at(count)[0]
    assert cg[first_change - 1]["strong"] != cg[0]["strong"]  # the strong set rotated
    before = cg[first_change - 2]  # the last period of the first phase
    assert before["spread"] < kg[first_change - 2]["spread"] / 2
    assert max(r["migrations"] for r in cg) <= 25
    lines = cg_summary(kg + cg, count, pairing_speed(nodes=50, vws=500, repeat=1))
    assert any(line.startswith("  [") and "Fig. 8: cg" in line for line in lines)
    assert any("pairing cycle <= 1 s at 50 nodes" in line for line in lines)
