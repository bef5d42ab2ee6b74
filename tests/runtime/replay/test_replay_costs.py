"""The cost model on a two-node example worked out by hand, through the engine and the landing.

Operators a (1 unit per tuple, stateless) -> b (2 units per tuple, sums per key), two key groups
each; a 100-byte tuple costs 1 unit to serialize and 1 to deserialize; source tuples always
arrive over the network. Period 0: key x (3 tuples) on a0 -> b0, all on node n0 (collocated);
key y (4 tuples) on a1 (n0) -> b1 (n1): remote. Then b1 migrates to n0 and period 1 repeats.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from runtime.replay.costs import CostModel, Traffic, keygroup_units, node_units
from runtime.replay.dataflow import Dataflow, Layout, Operator, Stream
from runtime.replay.engine import ReplayEngine, calibrate_unit_ms
from runtime.replay.hashing import key_group
from runtime.replay.source import landing_tables
from schemas.landing import EDGES, KEYGROUPS, NODES

COSTS = CostModel(ser_units_per_byte=0.01, deser_units_per_byte=0.01, migration_units_fixed=0,
                  pause_fixed_s=0.5, migration_bytes_per_s=100)
X = next(f"k{i}" for i in range(100) if key_group(f"k{i}", 2) == 0)
Y = next(f"k{i}" for i in range(100) if key_group(f"k{i}", 2) == 1)


def hand_engine() -> ReplayEngine:
    table = tuple(sorted([X, Y]))
    per_period = [X] * 3 + [Y] * 4
    keys = np.array([table.index(k) for k in per_period * 2])
    period = np.repeat([0, 1], 7)
    values = np.arange(1.0, 15.0)
    flow = Dataflow(
        name="hand",
        operators=(Operator("a", proc_units=1.0),
                   Operator("b", proc_units=2.0, window="round", entry_bytes=50)),
        keys={"a": table, "b": table},
        streams=(
            Stream("src>a", "a", 100, period, keys, keys, np.full(14, -1), np.zeros(14)),
            Stream("a>b", "b", 100, period, keys, keys, np.zeros(14, dtype=np.int64), values,
                   src="a", parent="src>a", parent_row=np.arange(14)),
        ),
        periods=2, windows_per_round=1, window_close=np.array([1]),
    )
    layout = Layout.of(flow, 2, seed=0)
    assignment = {"a-kg000": "n0", "a-kg001": "n0", "b-kg000": "n0", "b-kg001": "n1"}
    return ReplayEngine(flow, layout, assignment=assignment, nodes=["n0", "n1"], unit_ms=10.0,
                        period_s=1.0, costs=COSTS)


def test_period_costs_migration_and_collocation_by_hand() -> None:
    engine = hand_engine()
    p0 = engine.step()
    # a0: 3 proc + 3 source deser = 6; a1: 4 + 4 + 4 serialized to n1 = 12; b0: 6; b1: 8 + 4 = 12
    assert p0.kg_cpu_ms.tolist() == [60.0, 120.0, 60.0, 120.0]
    assert p0.node_cpu_ms.tolist() == [240.0, 120.0]
    assert p0.tuples_in.tolist() == [3, 4, 3, 4] and p0.tuples_out.tolist() == [3, 4, 0, 0]
    assert list(zip(p0.edge_src.tolist(), p0.edge_dst.tolist(), p0.edge_tuples.tolist(),
                    p0.edge_bytes.tolist(), strict=True)) == [(0, 2, 3, 300), (1, 3, 4, 400)]
    assert p0.state_bytes.tolist() == [0, 0, 50, 50]

    report = engine.migrate({"a-kg000": "n0", "a-kg001": "n0", "b-kg000": "n0",
                             "b-kg001": "n0"}, ["n0", "n1"])
    assert report.moved == ("b-kg001",) and report.state_bytes == 50
    assert report.pause_s == pytest.approx(0.5 + 50 / 100)
    assert report.units == pytest.approx(1.0)  # 0.5 to serialize at n1, 0.5 to deserialize at n0

    p1 = engine.step()
    # collocated now: a1 = 4 + 4 = 8, b1 = 8; n0 also deserializes the state, n1 serialized it
    assert p1.kg_cpu_ms.tolist() == [60.0, 80.0, 60.0, 80.0]
    assert p1.node_cpu_ms.tolist() == pytest.approx([285.0, 5.0])
    assert p1.migration.moved == ("b-kg001",)
    assert p1.state_bytes.tolist() == [0, 0, 0, 0]  # the round window closed after period 1
    sums = {engine.flow.keys["b"][e]: s for (_w, e), (s, _c) in engine.results["b"].items()}
    assert sums == {X: 1 + 2 + 3 + 8 + 9 + 10, Y: 4 + 5 + 6 + 7 + 11 + 12 + 13 + 14}


def test_landing_tables_and_calibration() -> None:
    engine = hand_engine()
    assert calibrate_unit_ms(engine, 50.0) == pytest.approx(0.5 * 1000 * 2 / 36)
    end = datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)
    tables = landing_tables(engine.step(), engine.layout, end, 1.0)
    kg = tables[KEYGROUPS].to_pydict()
    assert kg["keygroup"] == ["a-kg000", "a-kg001", "b-kg000", "b-kg001"]
    assert kg["operator"] == ["a", "a", "b", "b"] and kg["node"] == ["n0", "n0", "n0", "n1"]
    assert kg["cpu_ms"] == [60.0, 120.0, 60.0, 120.0]
    assert {t.isoformat() for t in kg["ts"]} == {"2026-01-01T00:00:00+00:00"}
    assert tables[EDGES].to_pydict()["dst_keygroup"] == ["b-kg000", "b-kg001"]
    assert tables[NODES].to_pydict()["cpu_ms"] == [240.0, 120.0]


def test_cost_functions_directly() -> None:
    t = Traffic.zeros(2)
    t.processed[:] = [10, 0]
    t.merged[:] = [0, 3]
    t.remote_out_bytes[:] = [200, 0]
    t.remote_in_bytes[:] = [0, 300]
    units = keygroup_units(np.array([0.5, 1.0]), t, CostModel(merge_units_per_entry=2.0))
    assert units.tolist() == [5.0 + 2.0, 6.0 + 3.0]
    assert node_units(units, np.array([1, 1]), 2, np.array([1.0, 0.0])).tolist() == [1.0, 16.0]
    with pytest.raises(ValueError, match="finite"):
        CostModel(ser_units_per_byte=-1)
