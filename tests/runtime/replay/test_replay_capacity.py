"""Heterogeneous replay nodes: capacities per node and capacity changes mid-run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from runtime.replay.capacity import rotating_changes, strong_nodes
from runtime.replay.datasets import Datasets
from runtime.replay.source import ReplayJob, new_engine
from runtime.replay.spec import ReplaySpec

STRONG = strong_nodes(10, 3, 5.0)  # Fig. 8: y = 3 of n = 10 nodes z = 5x stronger


def _spec(**kw: object) -> ReplaySpec:
    return ReplaySpec("het", job=2, nodes=10, periods=6, keygroups_per_node=2,
                      load_pct=80.0, **kw)  # type: ignore[arg-type]


def test_three_of_ten_nodes_five_times_stronger_and_the_strong_set_rotating(
        tiny: Datasets) -> None:
    changes = rotating_changes(10, 3, 5.0, (3, 5))
    spec = _spec(capacities=list(STRONG), capacity_changes=[
        {"period": p, "capacities": list(c)} for p, c in changes])
    engine = new_engine(spec, data=tiny)
    seen = []
    for n in range(1, 7):
        m = engine.step()
        seen.append(m.capacity.tolist())
        assert m.capacity.sum() == pytest.approx(22.0)  # the sum stays constant
        util = m.node_cpu_ms / (m.capacity * spec.period_s * 1000.0)
        assert np.all(np.isfinite(util))
        assert spec.capacity_at(n) == dict(zip(m.nodes, m.capacity.tolist(), strict=True))
    assert seen[0][:3] == [5.0] * 3 and seen[1] == seen[0]
    assert seen[2][3:6] == [5.0] * 3 and seen[2][:3] == [1.0] * 3
    assert seen[4][6:9] == [5.0] * 3 and seen[5] == seen[4]


def test_calibration_uses_the_capacities(tiny: Datasets) -> None:
    """80 % of a 22-capacity cluster is more CPU than 80 % of a 10-node reference cluster:
    the CPU unit scales with the capacity sum, so the measured cluster load stays at 80 %."""
    het = new_engine(_spec(capacities=list(STRONG)), data=tiny)
    ref = new_engine(_spec(), data=tiny)
    assert het.unit_ms / ref.unit_ms == pytest.approx(2.2)
    m = ref.step()
    assert m.capacity.tolist() == [1.0] * 10


def test_a_restarted_runtime_resumes_on_the_changed_capacities(tiny: Datasets,
                                                                 tmp_path: Path) -> None:
    spec = _spec(capacities=list(STRONG), capacity_changes=[[3, list(strong_nodes(10, 3, 5, 3))]])
    job = ReplayJob(spec, tmp_path, data=tiny)
    for _ in range(3):
        job.engine.step()
    job._checkpoint()
    again = ReplayJob(spec, tmp_path, data=tiny)
    assert again.engine.cursor == 3
    assert again.engine.capacity["node-03"] == 5.0 and again.engine.capacity["node-00"] == 1.0
    assert again.engine.unit_ms == pytest.approx(job.engine.unit_ms)


@pytest.mark.parametrize(("kw", "message"), [
    ({"capacities": [1.0] * 9}, "one capacity weight per node"),
    ({"capacities": [0.0] + [1.0] * 9}, "node-00's capacity must be a number in"),
    ({"capacities": [-5] + [1.0] * 9}, "node-00's capacity"),
    ({"capacity_changes": [{"period": 1, "capacities": [1.0] * 10}]}, "from 2 on"),
    ({"capacity_changes": [{"period": 3, "capacities": [1.0] * 10},
                           {"period": 3, "capacities": [1.0] * 10}]}, "after the previous"),
    ({"capacity_changes": [{"period": 3}]}, "exactly `period` and `capacities`"),
    ({"capacity_changes": [{"period": 3, "capacities": []}]}, "one weight per node"),
])
def test_bad_capacities_are_refused_naming_the_field(kw: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _spec(**kw)


def test_homogeneous_specs_fingerprint_as_before() -> None:
    assert _spec().fingerprint() != _spec(capacities=list(STRONG)).fingerprint()
    assert _spec().to_dict()["capacities"] == []
