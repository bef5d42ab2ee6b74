"""The what-if compares like with like and its description always fits MLflow's limit.

Pure (no Spark, no MLflow server): every plan is scored in every objective the state allows,
the rows are ranked by the in-force strategy's objective with "best" per objective, per-node
metrics go to their own rows (never columns), and the run description, at 60 and 100 nodes with
a row for every registered strategy and long messages, stays under MLflow's 8000 characters
with its first line the in-force objective and no row lost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobs.tracking.audit_trail import NOTE_LIMIT, explain_moves, note_markdown
from jobs.tracking.store import plan_metrics
from jobs.whatif.report import (
    best_by_objective,
    columns_of,
    comparison_row,
    markdown_table,
    objective_values,
    per_node_rows,
    rank_rows,
)
from placement.model import Budget
from placement.registry import get_strategy
from placement.workloads.synthetic import synthetic_state
from schemas.headline import objective_for
from schemas.strategies import STRATEGIES


def _rows(nodes: int, in_force: str
          ) -> tuple[list[dict[str, Any]], dict[str, float], list[dict[str, str]]]:
    state = synthetic_state(nodes=nodes, keygroups=3 * nodes, operators=3, varies=0.5, seed=1)
    cg = get_strategy("cg")(state, Budget(max_migrations=2 * nodes))
    greedy = get_strategy("greedy")(state, Budget(max_migrations=2 * nodes))
    long = "x" * 700  # a strategy's long message: cut in the table, whole in the CSV
    rows = [comparison_row(name, "in force" if name == in_force else "shadow", "planned",
                           plan, 0.5, long, objective_values(state, plan))
            for name, plan in ((n, cg if i % 2 else greedy)
                               for i, n in enumerate(sorted(STRATEGIES)))]
    moves = [{k: str(v) for k, v in m.items()} for m in explain_moves(state, cg)]
    metrics = {k: float(v) for k, v in plan_metrics(cg).items()}
    return rank_rows(rows, in_force), metrics, moves


@pytest.mark.parametrize("nodes", [60, 100])
@pytest.mark.parametrize("in_force", sorted(STRATEGIES))
def test_the_description_fits_mlflows_limit_with_every_strategys_row(nodes: int,
                                                                      in_force: str) -> None:
    rows, metrics, moves = _rows(nodes, in_force)
    assert not [c for c in columns_of(rows) if "/" in c], "per-node metrics are no columns"
    tags = {"reconf.param.strategy": in_force, "reconf.publish_status": "published",
            "reconf.assignment_version": "2", "reconf.whatif.status": "done"}
    cells = [{k: "" if v is None else str(v) for k, v in r.items()} for r in rows]
    note = note_markdown("run", tags, metrics, moves, cells)
    assert len(note) <= NOTE_LIMIT, len(note)
    assert note.startswith(f"**{objective_for(in_force).label} "), note.splitlines()[0]
    for name in STRATEGIES:  # no whole row lost
        assert f"| {name} |" in note or f"| **{name}** (in force) |" in note, name
    width = max(len(line) for line in markdown_table(cells))
    assert width < 400, width


def test_per_node_metrics_become_rows_of_their_own_artifact() -> None:
    state = synthetic_state(nodes=8, keygroups=24, operators=2, varies=0.5, seed=2)
    plan = get_strategy("cg")(state, Budget(max_migrations=6))
    out = per_node_rows([("cg", plan), ("flux", None)])
    assert {r["metric"] for r in out} == {"utilisation_pct", "vws", "vws_optimal"}
    assert len(out) == 3 * 8 and {r["node"] for r in out} == set(state.node_ids)


def test_rows_rank_by_the_in_force_objective_and_best_is_per_objective() -> None:
    def row(name: str, role: str, **values: float) -> dict[str, Any]:
        return {"strategy": name, "role": role, "status": "planned", "migrations": 1,
                **{f"{k}_after": v for k, v in values.items()}}

    rows = [row("sprawl", "in force", cost_total=5.0, load_distance=9.0),
            row("milp", "shadow", cost_total=7.0, load_distance=1.0),
            row("greedy", "shadow", cost_total=4.0, load_distance=3.0),
            {"strategy": "flux", "role": "shadow", "status": "failed"}]
    ranked = rank_rows(rows, "sprawl")
    assert [r["strategy"] for r in ranked] == ["sprawl", "greedy", "milp", "flux"]
    assert [r.get("rank") for r in ranked] == [2, 1, 3, None]
    assert best_by_objective(ranked) == {"cost_total": "greedy", "load_distance": "milp"}
    # a maximised objective ranks the other way
    rod = rank_rows([row("rod", "in force", feasible_set_ratio=0.2),
                     row("llf", "shadow", feasible_set_ratio=0.5)], "rod")
    assert [r["rank"] for r in rod] == [2, 1]


def test_compare_judges_every_strategy_in_the_in_force_objective() -> None:
    from reconf.compare import format_compare, summarise

    def row(name: str, role: str, cost: float, ld: float) -> dict[str, str]:
        return {"strategy": name, "role": role, "status": "published" if role == "in force"
                else "planned", "cost_total_after": str(cost), "load_distance_after": str(ld),
                "migrations": "2", "migration_cost": "1", "wall_s": "0.1"}

    periods = [{"period_end": f"2026-01-01T00:0{i}:00Z", "rows": [
        row("sprawl", "in force", 100.0, 50.0), row("milp", "shadow", 150.0 - 60 * i, 1.0)]}
        for i in range(2)]
    summary = {s.strategy: s for s in summarise(periods)}
    milp = summary["milp"]
    assert milp.objective == "cost_total" and (milp.better, milp.equal, milp.worse) == (1, 0, 1)
    assert milp.value_after == pytest.approx(120.0) and milp.in_force_value_after == 100.0
    text = format_compare({"job_id": "wan", "periods": periods, "periods_with_whatif": 2,
                           "strategies": list(summary.values())})
    assert "SPRAWL cost after (min)" in text and "LD after" in text


def test_the_demo_line_leads_with_the_jobs_objective(tmp_path: Path) -> None:
    """`reconf demo`'s summary of a cycle, read back from a real MLflow store: a SPRAWL job's
    line leads with its cost and bound, load distance second."""
    from jobs.tracking.store import open_experiment, open_store
    from reconf.demo import _cycle_summary
    from schemas.config import Paths
    from schemas.landing import parse_period_end

    paths = Paths(tmp_path / "home")
    client = open_store(paths)
    experiment = open_experiment(client, paths, "wan")
    stamp = "2026-01-01T00:05:00Z"
    run = client.create_run(experiment, tags={
        "reconf.period_end": stamp, "reconf.dry_run": "false", "reconf.param.strategy": "sprawl",
        "reconf.assignment_version": "4"})
    for key, value in {"cost_total_before": 1.19e6, "cost_total_after": 6.0e5,
                       "lower_bound": 5.97e5, "load_distance_before": 12.81,
                       "load_distance_after": 53.23, "migrations": 3.0}.items():
        client.log_metric(run.info.run_id, key, value)
    summary = _cycle_summary(paths, "wan", parse_period_end(stamp))
    assert summary["headline"] == ("SPRAWL cost 1.19e+06 -> 6e+05 (min, lower bound 5.97e+05); "
                                   "load distance 12.810 -> 53.230")
    assert summary["version"] == "4" and summary["migrations"] == "3"


def test_the_chart_shows_every_objective_first_the_ranking_one(tmp_path: Path) -> None:
    """`whatif/comparison.png`: a panel per objective any plan was scored in, the in-force
    strategy's first (the ranking's), so the chart shows what each alternative trades."""
    import matplotlib.image

    from jobs.whatif.chart import plot_comparison

    def row(name: str, role: str, **values: float) -> dict[str, Any]:
        return {"strategy": name, "role": role, "status": "planned", "migrations": 2,
                "load_distance_before": 12.8, **{f"{k}_after": v for k, v in values.items()}}

    rows = [row("sprawl", "in force", cost_total=4.4e5, load_distance=53.2,
                collocation_factor=20.0, utilisation_imbalance=40.0) | {"lower_bound": 4.4e5},
            row("milp", "shadow", cost_total=float("inf"), load_distance=1.0,
                collocation_factor=10.0, utilisation_imbalance=1.0),
            {"strategy": "flux", "role": "shadow", "status": "failed"}]
    shown = plot_comparison(rows, "wan", tmp_path / "all.png", "sprawl")
    assert [o.name for o in shown] == ["cost_total", "load_distance", "collocation_factor",
                                       "utilisation_imbalance"]
    only_ld = plot_comparison([{k: v for k, v in r.items() if not k.endswith("_after")
                                or k == "load_distance_after"} for r in rows],
                              "wan", tmp_path / "ld.png", "greedy")
    assert [o.name for o in only_ld] == ["load_distance"]
    tall, short = (matplotlib.image.imread(tmp_path / n).shape[0] for n in ("all.png", "ld.png"))
    assert tall > 3 * short * 0.9, (tall, short)  # four panels, each as tall as the one


def test_a_rows_bound_is_named_as_its_own_strategys() -> None:
    """The bound column holds each strategy's bound on its own objective (SPRAWL's on its cost
    beside the MILP's on load distance): headed and explained so, never read as an LD bound."""
    from jobs.whatif.report import text_table

    rows = [{"strategy": "sprawl", "role": "in force", "status": "published", "rank": "1",
             "load_distance_after": "53.229", "lower_bound": "438576.0", "migrations": "4",
             "cost_total_after": "438576.0"},
            {"strategy": "milp", "role": "shadow", "status": "planned", "rank": "2",
             "load_distance_after": "12.807", "lower_bound": "12.807", "migrations": "0",
             "cost_total_after": "inf"}]
    for head in (markdown_table(rows)[0], text_table(rows)[0]):
        assert "own bound" in head and "lower bound" not in head, head
    note = note_markdown("run", {"reconf.param.strategy": "sprawl"}, {}, [], rows)
    assert ("`own bound` is the bound a strategy reports on its own objective (the MILP's on "
            "load distance, SPRAWL's on its cost)") in note


def test_a_shadows_child_run_carries_no_per_node_metric() -> None:
    """cg's per-node utilisation and VW counts as a shadow: rows of `whatif/per_node.csv`, not
    metric keys of the child run (they made flights2's experiment carry 122 metrics)."""
    from jobs.tracking.store import plan_metrics
    from jobs.whatif.stage import shadow_metrics

    state = synthetic_state(nodes=20, keygroups=60, operators=3, varies=0.5, seed=3)
    plan = get_strategy("cg")(state, Budget(max_migrations=10))
    every = plan_metrics(plan)
    assert len([k for k in every if "/" in k]) >= 3 * 20  # what a cg plan computes per node
    logged = shadow_metrics(plan)
    assert not [k for k in logged if "/" in k] and len(logged) < 25
    assert logged == {k: v for k, v in every.items() if "/" not in k}
    assert {r["node"] for r in per_node_rows([("cg", plan)])} == set(state.node_ids)
