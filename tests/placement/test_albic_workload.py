"""The §5.3 synthetic communication pattern, the remote-traffic cost model and the load index."""

from __future__ import annotations

import random

import pytest

from placement.albic import calc_scores
from placement.metrics import collocation_factor, load_index, mean_load
from placement.model import ClusterState, Edge, KeyGroup, Node
from placement.workloads.comm import comm_workload, fluctuate, remote_loads


@pytest.mark.parametrize("x", [0.0, 25.0, 50.0, 100.0])
def test_x_percent_of_traffic_is_one_to_one(x: float) -> None:
    w = comm_workload(20, 400, 10, x, 1)
    assert w.max_collocation == pytest.approx(x, abs=0.01)
    assert len(w.one_to_one) == round(x / 100 * 40) * 9
    state = w.state(w.initial)
    assert collocation_factor(state, w.initial) == 0.0  # op o on nodes ≡ o (mod 10)
    assert mean_load(state) == pytest.approx(50.0, rel=0.01)  # all traffic remote
    # only the one-to-one pairs beat avg·sF; full partitioning sits exactly at avg
    scores = calc_scores(state, w.initial, 1.0)
    assert set(scores.to_be_col_grps) == set(w.one_to_one)


def test_remote_traffic_costs_cpu_at_both_ends() -> None:
    base = {"a": 1.0, "b": 2.0, "c": 3.0}
    edges = (Edge("a", "b", 10.0), Edge("b", "c", 20.0), Edge("c", "c", 99.0))
    apart = remote_loads(base, edges, {"a": "n0", "b": "n1", "c": "n2"}, 0.1)
    assert apart == pytest.approx({"a": 2.0, "b": 5.0, "c": 5.0})
    ab = remote_loads(base, edges, {"a": "n0", "b": "n0", "c": "n2"}, 0.1)
    assert ab == pytest.approx({"a": 1.0, "b": 4.0, "c": 5.0})
    assert remote_loads(base, edges, dict.fromkeys(base, "n0"), 0.1) == base


def test_collocating_everything_halves_the_load_with_the_default_share() -> None:
    w = comm_workload(10, 100, 5, 100.0, 2)
    start = w.state(w.initial)
    together = dict(w.initial)
    op = {k.id: int(k.operator[2:]) for k in w.keygroups}
    for src, dst in sorted(w.one_to_one, key=lambda p: op[p[0]]):  # each chain on one node
        together[dst] = together[src]
    end = w.state(together)
    assert collocation_factor(end, together) == pytest.approx(100.0)
    assert load_index(end, start) == pytest.approx(50.0, rel=0.02)
    assert load_index(start, start) == pytest.approx(100.0)
    assert load_index(end, mean_load(start)) == load_index(end, start)


def test_load_index_rejects_a_zero_warmup_load() -> None:
    state = ClusterState((Node("n0"),), (KeyGroup("g", "A", 0.0),), {"g": "n0"})
    with pytest.raises(ValueError, match="warm-up system load"):
        load_index(state, state)
    with pytest.raises(ValueError, match="warm-up"):
        load_index(state, float("nan"))


def test_fluctuate_moves_twenty_percent_of_the_nodes_by_at_most_two_percent() -> None:
    w = comm_workload(20, 400, 10, 50.0, 1)
    base = w.base_loads()
    new = fluctuate(base, w.initial, tuple(n.id for n in w.nodes), random.Random(7))
    changed = {w.initial[k] for k in base if new[k] != base[k]}
    assert len(changed) == 4
    assert all(abs(new[k] / base[k] - 1.0) <= 0.02 + 1e-12 for k in base)
    again = fluctuate(base, w.initial, tuple(n.id for n in w.nodes), random.Random(7))
    assert again == new


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"max_collocation": 101.0}, "max_collocation"), ({"max_collocation": -1.0}, "max_coll"),
     ({"operators": 1}, "operators"), ({"remote_share": 1.0}, "remote_share")],
)
def test_comm_workload_bad_input(kwargs: dict[str, float], match: str) -> None:
    args = {"nodes": 4, "keygroups": 20, "operators": 2, "max_collocation": 50.0, "seed": 1}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        comm_workload(**args)  # type: ignore[arg-type]
