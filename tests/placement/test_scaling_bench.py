"""bench/scale_in.py: the Figure 5 setup and the verdict logic (the runs are in the benchmark)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from bench import BENCHMARKS
from bench.scale_in import case_state, first_good, verdict
from placement.metrics import node_loads


@pytest.mark.parametrize(("overloaded", "hot"), [(1, {"n000"}), (5, {f"n00{i}" for i in range(5)})])
def test_case_state_marks_ten_and_overloads_nodes_of_a(overloaded: int, hot: set[str]) -> None:
    state = case_state(overloaded)
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    assert len(state.nodes) == 60 and len(state.keygroups) == 1200
    assert marked == {f"n{i:03d}" for i in range(50, 60)}
    loads = node_loads(state, state.assignment)
    assert {n for n, v in loads.items() if v > 99.999} == hot
    assert all(loads[n] == pytest.approx(100.0) for n in hot)
    assert not hot & marked


def rows(strategy: str, lds: Sequence[float], on_b: Sequence[int]) -> list[dict[str, Any]]:
    return [{"case": "1OL", "strategy": strategy, "round": i, "load_distance": ld,
             "keygroups_on_marked": b, "migrations": 20, "wall_s": 0.0}
            for i, (ld, b) in enumerate(zip(lds, on_b, strict=True))]


def test_first_good_needs_ld_to_stay_good() -> None:
    assert first_good(rows("milp", [30, 5, 12, 4, 3], [9] * 5)) == 3
    assert first_good(rows("milp", [30, 20], [9, 9])) is None


def test_verdict_match_beat_miss() -> None:
    base = rows("drain_then_balance", [39] * 10 + [2], [200 - 20 * i for i in range(11)])
    fast = rows("milp", [39, 9, 8, 7, 6, 5, 4, 3, 2, 2, 1, 1],
                [200, 190, 170, 150, 130, 110, 90, 70, 50, 30, 10, 0])
    assert verdict(base + fast)[0].endswith("match")
    assert verdict(base + fast[:10] + [dict(fast[-1], round=10)])[0].endswith("beat")
    slow = fast[:11] + [dict(fast[-1], round=r, keygroups_on_marked=5) for r in range(11, 14)]
    assert verdict(base + slow + [dict(fast[-1], round=14)])[0].endswith("miss")
    assert BENCHMARKS["scale-in"] == "bench.scale_in"
