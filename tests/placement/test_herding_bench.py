"""The herding benchmark's parts on small inputs: the generator and the experiments run.

Targets live in the benchmark (`reconf bench herding`); these only check the machinery."""

from __future__ import annotations

import numpy as np

from bench.herding.report import targets
from bench.herding.sim import dynamic_run, gap_point, static_point
from bench.herding.workload import workload


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


def test_the_grid_runs_point_by_point_keeps_its_rows_and_reports_from_them(tmp_path) -> None:
    import json

    from bench.herding import QUICK, _loaded, points, run

    cfg = {**QUICK, "n": 300, "k": 5, "runs": 2, "ks": [3, 5], "betas": [2.0, 3.0],
           "gap": [(8, 2, 2, 2.0)], "gap_runs": 1}
    grid = points(cfg, ("k", "beta", "gap"))
    assert [label for _, label, _ in grid] == [
        "k=3 seed 1", "k=3 seed 2", "k=5 seed 1", "k=5 seed 2", "beta=2.0 seed 1",
        "beta=2.0 seed 2", "beta=3.0 seed 1", "beta=3.0 seed 2", "MILP n=8 k=2 seed 1"]
    path = tmp_path / "rows.json"
    rows = run(cfg, ("k", "beta", "gap"), checkpoint=str(path))
    kept = json.loads(path.read_text())
    assert len(kept) == len(rows) == 8 * 10 + 1  # 10 algorithms a point, one MILP row
    # the default point (k = 5, beta = 2) is one computation shown under both sweeps
    under = {r["experiment"]: r["rf"] for r in rows if r["seed"] == 1 and r.get("x") in (5, 2.0)
             and r.get("algorithm") == "ic"}
    assert under["k"] == under["beta"]
    assert len(_loaded([str(path), str(path)])) == len(rows)  # a row held twice is kept once


def test_the_capacities_experiment_measures_the_gap_on_unequal_servers(tmp_path) -> None:
    """`reconf bench herding --medium --only capacities` (docs/algorithms.md's table)."""
    import json

    from reconf.cli import main

    out = tmp_path / "rows.json"
    assert main(["bench", "herding", "--medium", "--only", "capacities", "--json",
                 str(out)]) == 0

    rows = json.loads(out.read_text())
    assert len(rows) == 20 and all(r["experiment"] == "capacities" for r in rows)
    for r in rows:
        assert r["caps"] == [1.0, 2.0, 5.0] and r["bound"] <= r["optimum"] + 1e-6
        assert min(r["ic"], r["mms"], r["mqp"]) >= r["optimum"] - 1e-6
