"""Routing policies in the replay engine: every policy keeps every tuple and every sum."""

from __future__ import annotations

import numpy as np
import pytest

from runtime.replay.datasets import Datasets
from runtime.replay.engine import ReplayEngine
from runtime.replay.flights import build_job
from runtime.replay.source import initial_assignment, new_engine
from runtime.replay.spec import JOB_OPERATORS, ReplaySpec
from runtime.routing import POLICIES, SPLITTING


def run(tiny: Datasets, routing: str, **extra: object) -> tuple[dict, dict, int, int, np.ndarray]:
    spec = ReplaySpec(f"r{routing}", job=1, nodes=3, keygroups_per_node=2, periods=5,
                      routing=routing, window_hours=48, top_k=3, **extra)  # type: ignore[arg-type]
    engine = new_engine(spec, data=tiny)
    tuples = merged = 0
    keys = np.zeros(3, dtype=np.int64)
    for _ in range(5):
        m = engine.step()
        base = engine.layout.offset["topk"]
        tuples += int(m.tuples_in[base:base + 6].sum())
        merged += m.merged
        keys += m.node_keys
    return dict(engine.results["topk"]), dict(engine.results["global"]), tuples - merged, \
        merged, keys


@pytest.mark.parametrize("policy", POLICIES)
def test_each_policy_conserves_tuples_and_sums(tiny: Datasets, policy: str) -> None:
    topk, top, tuples, merged, keys = run(tiny, policy, epsilon=0.05)
    k_topk, k_top, k_tuples, k_merged, k_keys = run(tiny, "key")
    assert tuples == k_tuples and k_merged == 0  # every tuple processed once, merges on top
    assert topk.keys() == k_topk.keys()
    for cell, (total, count) in k_topk.items():
        assert topk[cell][1] == count and topk[cell][0] == pytest.approx(total)
    if policy in ("ch", "chbl"):  # other key groups hold other keys: other local top-k's
        assert all(top[c][0] == topk[c][0] for c in top)  # but each candidate's full sum
    else:
        assert top == k_top  # the global top-k sees the merged sums (whole-number delays)
    if policy in ("sg", "potc_msg"):
        assert merged > 0 and keys.sum() > k_keys.sum()  # keys spread: more memory
    if policy not in SPLITTING:
        assert merged == 0


def test_old_potc_config_is_pkg_and_parses(tiny: Datasets) -> None:
    spec = ReplaySpec.from_mapping({"kind": "replay", "job": 1, "routing": "potc"}, job_id="x")
    assert spec.routing == "potc" and spec.fingerprint() == ReplaySpec(
        "y", job=1, routing="potc").fingerprint()
    assert run(tiny, "potc")[:4] == run(tiny, "pkg")[:4]


def test_per_operator_routing_and_config_errors(tiny: Datasets) -> None:
    spec = ReplaySpec("o", job=1, nodes=3, keygroups_per_node=2, periods=5, window_hours=48,
                      operator_routing={"topk": "porc"})
    engine = new_engine(spec, data=tiny)
    assert engine.router.policy == {"geohash": "kg", "topk": "porc", "global": "kg"}
    flow, layout = engine.flow, engine.layout
    start = initial_assignment(spec, layout)
    for bad, match in [({"routing": "round"}, "unknown routing policy 'round'"),
                       ({"epsilon": -0.1}, "epsilon must be a number"),
                       ({"operator_routing": {"topk": "zz"}}, "operator_routing.topk")]:
        with pytest.raises(ValueError, match=match):
            ReplaySpec("b", job=1, **bad)  # type: ignore[arg-type]
    for routing, match in [({"global": "porc"}, "not mergeable"),
                           ({"nosuch": "kg"}, "does not have")]:
        with pytest.raises(ValueError, match=match):  # when the config loads
            ReplaySpec("c", job=1, operator_routing=routing)
        with pytest.raises(ValueError, match=match):  # and in the engine itself
            ReplayEngine(flow, layout, assignment=start, nodes=spec.node_names, unit_ms=1.0,
                         period_s=300, operator_routing=routing)


def test_the_operator_table_is_the_compiled_jobs(tiny: Datasets) -> None:
    for job, ops in JOB_OPERATORS.items():
        flow = build_job(job, tiny, periods=4)
        assert {op.name: op.mergeable for op in flow.operators} == ops


@pytest.mark.parametrize("policy", ["porc", "sg"])
def test_periodic_aggregation_moves_partials_home_every_period_and_keeps_the_sums(
        tiny: Datasets, policy: str) -> None:
    """`aggregate_every = 1` (Nasir et al. §5.3): after each period every entry of the split
    operator sits in its key's principal key group; the results equal key grouping's, and the
    merges are never fewer than at window end only."""
    spec = ReplaySpec("agg", job=1, nodes=3, keygroups_per_node=2, periods=5, routing=policy,
                      window_hours=48, top_k=3, epsilon=0.05, aggregate_every=1)
    engine = new_engine(spec, data=tiny)
    base, home = engine.layout.offset["topk"], engine.router.home("topk")
    for _ in range(5):
        engine.step()
        held = [(g - base, e) for g, _w, e, _t, _c in engine.store.items()
                if base <= g < base + 6]
        assert all(int(home[e]) == g for g, e in held)
    topk, top, tuples, merged, _ = run(tiny, policy, epsilon=0.05, aggregate_every=1)
    k_topk, k_top, k_tuples, _, _ = run(tiny, "key")
    at_end = run(tiny, policy, epsilon=0.05)[3]
    assert tuples == k_tuples and topk.keys() == k_topk.keys() and top == k_top
    for cell, (total, count) in k_topk.items():
        assert topk[cell][1] == count and topk[cell][0] == pytest.approx(total)
    assert merged >= at_end > 0
    with pytest.raises(ValueError, match="aggregate_every"):
        ReplaySpec("bad", job=1, aggregate_every=-1)
