"""The Consistent Grouping simulator: queues against a plain FIFO loop, pairing towards α*."""

from __future__ import annotations

import numpy as np
import pytest

from bench.consistent_grouping.sim import (
    Workload,
    memory,
    normalized_imbalance,
    simulate,
    solve_zipf,
    zipf_keys,
)
from runtime.routing import KeyTable, route


def fifo(arrivals: list[float], service: float) -> list[float]:
    """Finish times of a deterministic single-server FIFO queue, one message at a time."""
    out, free = [], 0.0
    for a in arrivals:
        free = max(a, free) + service
        out.append(free)
    return out


def test_queue_and_latency_match_a_fifo_loop() -> None:
    keys = zipf_keys(3000, 50, 1.3, seed=5)
    capacity = np.array([1.0, 2.0, 3.0])
    r = simulate(keys, capacity, policy="kg", vws_per_worker=2, load=0.9, t0=500)
    bins, _ = route("kg", keys, KeyTable.build(int(keys.max()) + 1, 6, seed=1))
    workers = np.tile(np.arange(3), 2)[bins]
    speed = capacity / capacity.sum() / 0.9
    latency = np.zeros(len(keys))
    for w in range(3):
        idx = np.flatnonzero(workers == w)
        finish = fifo((idx + 1.0).tolist(), 1.0 / speed[w])
        latency[idx] = np.array(finish) - (idx + 1.0)
        end = 500.0 * np.arange(1, 7)
        queue = [sum(f > e for f, i in zip(finish, idx, strict=True) if i + 1 <= e) for e in end]
        assert r.queue[:, w].tolist() == queue
    assert r.latency == pytest.approx(latency.reshape(6, 500).mean(axis=1))


def test_capacity_change_is_exact_in_work_time() -> None:
    keys = np.zeros(1000, dtype=np.int64)  # one key: KG sends every message to one worker
    w0 = int(KeyTable.build(1, 2, seed=1).first[0]) % 2
    later = np.where(np.arange(2) == w0, 3.0, 1.0)
    r = simulate(keys, np.ones(2), policy="kg", vws_per_worker=1, load=1.0, t0=100,
                 changes=((500, later),))
    # speeds Σμ = 1: 0.5 per tick, then 0.75 from tick 500; always busy from tick 1
    assert r.queue[4, w0] == 500 - int(499 * 0.5)
    assert r.queue[9, w0] == 1000 - int(499 * 0.5 + 500 * 0.75)
    assert r.queue[:, 1 - w0].sum() == 0


def test_pairing_moves_vws_towards_capacity() -> None:
    keys = Workload("WP", 10_000, 0.05).solved().keys(200_000, seed=3)
    het = np.array([5.0] * 3 + [1.0] * 7)
    cg = simulate(keys, het, policy="porc", pairing=True, t0=2000)
    assert cg.vws[-1].sum() == 100 and cg.moves > 0
    assert cg.vws[-1][:3].mean() > 18 and cg.vws[-1][3:].mean() < 6  # α* = 22.7 and 4.5
    kg = simulate(keys, het, policy="kg", t0=2000)
    assert cg.mean_latency() < kg.mean_latency() / 10


def test_streams_and_metrics() -> None:
    z = solve_zipf(100_000, 0.0932)
    keys = zipf_keys(200_000, 100_000, z, seed=1)
    assert np.mean(keys == 0) == pytest.approx(0.0932, abs=0.003)
    assert normalized_imbalance(np.array([2, 1, 1, 0])) == 1.0
    assert memory(np.array([1, 1, 2, 2]), np.array([0, 1, 0, 0])) == 3
