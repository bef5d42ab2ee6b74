"""The herding benchmark's parts on small inputs: the generator and the experiments run.

Targets live in the benchmark (`reconf bench herding`); these only check the machinery."""

from __future__ import annotations

import numpy as np

from bench.herding_report import targets
from bench.herding_sim import dynamic_run, gap_point, static_point
from bench.herding_workload import workload


def test_generator_deals_n_queries_of_d_distinct_sources() -> None:
    w = workload(2000, 3, 2.0, seed=4)
    deg = np.diff(w.indptr)
    assert w.n == 2000 and deg.max() == 3 and deg.mean() > 2.95
    for q in range(0, 2000, 97):
        row = w.indices[w.indptr[q]:w.indptr[q + 1]]
        assert len(set(row.tolist())) == len(row)
    assert (np.bincount(w.indices, minlength=w.m) > 0).all()  # m is what the degrees made


def test_heavier_tails_make_fewer_sources() -> None:
    assert workload(3000, 2, 1.5, 1).m < workload(3000, 2, 2.0, 1).m < workload(3000, 2, 3.0, 1).m


def test_rates_follow_popularity_as_asked() -> None:
    pos = workload(3000, 2, 2.0, 1, rate_exp=2.0, correlation="positive")
    neg = workload(3000, 2, 2.0, 1, rate_exp=2.0, correlation="negative")
    top = int(np.argmax(np.bincount(pos.indices)))
    assert pos.rates[top] == pos.rates.max() and neg.rates[top] == neg.rates.min()


def test_static_dynamic_and_gap_experiments_run() -> None:
    rows = [{**r, "experiment": "beta", "x": 2.0} for r in static_point(600, 6, 2, 2.0, 1)]
    assert {r["algorithm"] for r in rows} >= {"ic", "mms", "least_cost", "onrand"}
    assert all(r["rf"] >= 1.0 - 1e-9 for r in rows)
    dyn = dynamic_run(5, 2, 2.0, 1, steps=400, lifetime=100.0, churn_every=100,
                      metrics=("least_cost", "onrand"))
    assert all(r["rf"] >= 1.0 - 1e-9 and r["series"] for r in dyn)
    gap = gap_point(10, 2, 2, 2.0, 1, 5.0)
    assert gap["bound"] <= gap["optimum"] + 1e-6 <= gap["ic"] + 1e-6
    assert targets(rows)  # the report reads its own rows
