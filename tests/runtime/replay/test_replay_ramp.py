"""The load ramp: a rate profile in the replay, and Algorithm 1 scaling out then in on it."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

import bench.closed_loop as cl
from bench.closed_loop.ramp import (
    RampRun,
    ScalingInvariantError,
    check_placement,
    check_terminable,
    ramp_summary,
    run_ramp,
)
from bench.closed_loop.report import plot
from runtime.replay.datasets import Datasets
from runtime.replay.flights import build_job, period_of_rows
from runtime.replay.source import new_engine
from runtime.replay.spec import ReplaySpec, ramp_profile


def test_rate_profile_sizes_the_periods(tiny: Datasets) -> None:
    assert period_of_rows(10, 3).tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert np.bincount(period_of_rows(100, 3, (1.0, 2.0, 1.0))).tolist() == [25, 50, 25]
    with pytest.raises(ValueError, match="without a row"):
        period_of_rows(5, 3, (1.0, 100.0, 1.0))
    flat = build_job(2, tiny, periods=6)
    ramp = build_job(2, tiny, periods=6, rate=(1, 1, 2.5, 2.5, 0.6, 0.6))
    assert flat.inputs_per_period.sum() == ramp.inputs_per_period.sum()
    per = ramp.inputs_per_period
    assert per[2] / per[0] == pytest.approx(2.5, rel=0.01)
    assert per[4] / per[0] == pytest.approx(0.6, rel=0.02)
    # more tuples per period, same cost model: the node load follows the rate
    spec = ReplaySpec("r", job=2, nodes=3, keygroups_per_node=2, periods=6,
                      rate_profile=(1, 1, 2.5, 2.5, 0.6, 0.6))
    engine = new_engine(spec, data=tiny)
    cpu = [float(engine.step().node_cpu_ms.sum()) for _ in range(5)]
    assert cpu[2] / cpu[0] == pytest.approx(2.5, rel=0.15)
    assert cpu[4] / cpu[0] == pytest.approx(0.6, rel=0.15)


def test_spec_profile_is_checked_and_constant_keeps_its_fingerprint() -> None:
    base = ReplaySpec("r", job=2, periods=6)
    assert base.rate_profile == () and base.to_dict()["rate_profile"] == []
    ramped = ReplaySpec("r", job=2, periods=6, rate_profile=ramp_profile(6))
    assert ramped.fingerprint() != base.fingerprint()
    assert ReplaySpec.from_mapping(ramped.to_dict()) == ramped
    for bad in ([1.0] * 5, [1.0, 0.0, 1, 1, 1, 1], [1, 1, 1, 1, 1, float("nan")], "fast"):
        with pytest.raises(ValueError, match="rate_profile"):
            ReplaySpec("r", job=2, periods=6, rate_profile=bad)  # type: ignore[arg-type]
    profile = ramp_profile(12)
    assert profile[0] == 1.0 and max(profile) > 2.0 and profile[-1] == 0.6
    assert profile.index(max(profile)) < len(profile) - 3


def test_ramp_scales_out_then_in_and_keeps_every_key_group(tiny: Datasets,
                                                          tmp_path: Path) -> None:
    rows = run_ramp(RampRun(2, "milp", 12, 6, 0.5, nodes=3, keygroups_per_node=2), tmp_path,
                    data=tiny)
    decisions = [r["decision"] for r in rows]
    first_out, first_in = decisions.index("out"), decisions.index("in")
    assert first_out < first_in
    nodes = [r["nodes"] for r in rows]
    assert max(nodes) > nodes[0] and nodes[-1] < max(nodes)
    assert any(r["nodes_terminated"] for r in rows[first_in:])
    assert all(r["nodes_marked"] <= r["nodes"] for r in rows)
    assert rows[-1]["sums_checked"] == 48  # every tailnum of the tiny data set, group-by equal
    summary = "\n".join(ramp_summary(rows))
    assert "[match] a scale-out, then a scale-in" in summary
    out = tmp_path / "ramp.png"
    plot(rows, out, "ramp")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_invariant_checks_catch_violations(tiny: Datasets) -> None:
    spec = ReplaySpec("r", job=2, nodes=3, keygroups_per_node=2, periods=4)
    engine = new_engine(spec, data=tiny)
    engine.step()
    check_placement(engine, set(spec.node_names))
    busy = engine.assignment[engine.layout.names[0]]
    with pytest.raises(ScalingInvariantError, match="terminated while it holds"):
        check_terminable(engine, (busy,))
    with pytest.raises(ScalingInvariantError, match="the engine runs nodes"):
        check_placement(engine, set(spec.node_names) - {busy})
    # state left behind on a node the key group no longer lives on = a lost key group
    gid = next(g for node, gids in engine.store.holders().items() for g in gids)
    kg = engine.layout.names[gid]
    other = next(n for n in engine.nodes if n != engine.assignment[kg])
    engine.assignment[kg] = other
    with pytest.raises(ScalingInvariantError, match="lost on migration"):
        check_placement(engine, set(spec.node_names))


def test_scenario_flag_rejects_non_planners() -> None:
    parser = argparse.ArgumentParser()
    cl.add_arguments(parser)
    args = parser.parse_args(["--scenario", "ramp", "--strategy", "potc"])
    args.quick, args.json = False, None
    with pytest.raises(ValueError, match="needs a planner"):
        cl.run(args)
    assert parser.parse_args([]).scenario == "steady"
