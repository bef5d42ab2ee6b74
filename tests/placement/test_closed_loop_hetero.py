"""The heterogeneous closed loop's helpers: capacities, the overload check, the summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from placement_testlib import make_state

from bench.closed_loop.hetero import (
    STRONG_CAPACITY,
    make_heterogeneous,
    overload,
    summary_lines,
)
from placement.model import Budget
from placement.registry import get_strategy


@dataclass
class _Engine:
    nodes: tuple[str, ...] = tuple(f"node-{i:02d}" for i in range(8))
    capacity: dict[str, float] = field(default_factory=dict)
    period_s: float = 300.0
    cursor: int = 0
    unit_ms: float = 1.0

    def traffic_units(self, p: int, routing: str = "key") -> float:
        return 1000.0


@dataclass
class _Spec:
    load_pct: float = 80.0


@dataclass
class _Runtime:
    engine: _Engine = field(default_factory=_Engine)
    spec: _Spec = field(default_factory=_Spec)


def test_every_fourth_node_is_stronger_and_the_unit_follows_the_capacity() -> None:
    runtime = _Runtime()
    caps = make_heterogeneous(runtime)  # type: ignore[arg-type]
    assert [n for n, c in caps.items() if c == STRONG_CAPACITY] == ["node-00", "node-04"]
    total = sum(caps.values())  # 2·2 + 6 = 10 reference nodes
    assert runtime.engine.unit_ms == pytest.approx(0.8 * 300_000.0 * total / 1000.0)
    runtime.engine.cursor = 1
    with pytest.raises(ValueError, match="already ran"):
        make_heterogeneous(runtime)  # type: ignore[arg-type]


def test_overload_names_a_plan_that_relieves_what_another_leaves() -> None:
    """n0 (capacity 1) at 150 %, n1 (capacity 2) at 25 %: one move of g0 relieves n0."""
    state = make_state([100.0, 50.0, 50.0], [0, 0, 1], [1.0, 2.0], [False, False])
    budget = Budget(max_migrations=1)
    kept = get_strategy("random")(state, Budget(max_migrations=0))
    top, witness = overload(state, budget, kept, 0.5)
    assert top == pytest.approx(150.0) and witness == "greedy"
    fixed = get_strategy("milp")(state, budget, time_limit_s=0.5)
    assert overload(state, budget, fixed, 0.5)[1] == ""  # nothing above 100 % is left
    stuck = make_state([150.0], [0], [1.0, 2.0], [False, False])  # one key group, 150 % alone
    assert overload(stuck, budget, get_strategy("milp")(stuck, budget), 0.5)[1] == ""


def _row(strategy: str, period: int, ld: float, top: float, planned: float | None,
         by: str | None) -> dict[str, Any]:
    return {"strategy": strategy, "period": period, "load_distance": ld, "max_util_pct": top,
            "planned_max_util_pct": planned, "relievable_by": by}


def test_summary_counts_overloads_and_relievable_periods() -> None:
    rows = [_row("milp", 1, 30.0, 112.0, 95.0, ""), _row("milp", 2, 10.0, 99.0, 98.0, ""),
            _row("flux", 1, 30.0, 112.0, 104.0, "milp"), _row("flux", 2, 15.0, 101.0, 99.0, "")]
    lines = summary_lines(rows)
    milp = next(line for line in lines if line.startswith("  milp:"))
    flux = next(line for line in lines if line.startswith("  flux:"))
    assert "> 100 % in 1 of 2 periods (peak 112.0 %)" in milp
    assert "relievable within the budget: 0" in milp
    assert "> 100 % in 2 of 2 periods" in flux and "planned > 100 % in 1" in flux
    assert "relievable within the budget: 1 (periods 1)" in flux
    assert lines[-1] == "  LD per period: milp: 30.0 10.0; flux: 30.0 15.0"
    assert summary_lines([{"strategy": "milp", "period": 1, "load_distance": 1.0}]) == []
