"""What-if: after a period's plan is published, other strategies plan the same state.

At plan time (jobs/plan/stage.py `record_plan`) the pipeline decides which strategies shadow the plan
(`choose_shadows`: by the facets the state provides) and stores, with the period's MLflow run,
everything they need: the `ClusterState` the plan in force was made on (after Algorithm 1's
node changes, if the job scales), the budget, the solver time limit, each shadow's params and
the plan in force (a JSON file under RECONF_HOME keyed by the plan id, its key and SHA-256 on
the run: jobs/whatif/input.py, jobs/whatif/codec.py: data, never a pickle). Nothing is rebuilt
later, so the shadows see exactly
what the real strategy saw, whatever the lake holds by then.

After publish, `run_whatif` (the DAG's `whatif` task, `reconf cycle`, `reconf whatif`) runs the
shadows in worker subprocesses within the job's `shadow_time_budget_s` (jobs/whatif/shadow.py; on a
Spark cluster on its executors, jobs/whatif/shadow_spark.py), and
logs each as a child run of the period's run (tag `mlflow.parentRunId`; the same metrics as a
real plan, its moves) and the comparison (jobs/whatif/report.py) on the period's run: the CSV,
an MLflow table, one chart and a table in the run's description. It reads and writes MLflow
only: the Delta tables and the published manifests are never touched.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.faults import failpoint
from jobs.whatif.chart import plot_comparison
from jobs.whatif.input import (
    INPUT_ARTIFACT,
    WhatIfInput,
    keep_input,
    load_input,
    save_input,
    whatif_input,
)
from jobs.whatif.report import (
    best_by_objective,
    columns_of,
    comparison_row,
    objective_values,
    per_node_rows,
    rank_rows,
)
from jobs.whatif.shadow import (
    ShadowOutcome,
    ShadowStatus,
    ShadowTask,
    run_shadows,
    shadow_state,
)
from placement.constraints import raised
from placement.model import Budget, Plan
from schemas.attempts import PlanStatus
from schemas.config import JobConfig, Paths
from schemas.headline import objective_for
from schemas.tracking import Artifact, Tag

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CHART_ARTIFACT", "COMPARISON_ARTIFACT", "INPUT_ARTIFACT", "WhatIfInput",
           "WhatIfResult", "keep_input", "load_input", "read_comparison", "run_whatif", "save_input",
           "shadow_metrics",
           "whatif_input"]

COMPARISON_ARTIFACT = Artifact.WHATIF_COMPARISON
CHART_ARTIFACT = Artifact.WHATIF_CHART
TABLE_ARTIFACT = Artifact.WHATIF_TABLE
PER_NODE_ARTIFACT = Artifact.WHATIF_PER_NODE
STATUS_TAG = Tag.WHATIF_STATUS
NOTE_LINE = 500  # a child run's one-line description, at most
_SHADOW = Tag.SHADOW_PREFIX  # the child runs' tags (never reconf.job_id: find_runs skips them)


@dataclass(frozen=True)
class WhatIfResult:
    job_id: str
    period_end: str
    status: str  # "done" or "skipped"
    reason: str = ""
    rows: tuple[dict[str, Any], ...] = ()
    run_id: str | None = None

    def summary(self) -> str:
        if self.status != "done":
            return f"what-if {self.job_id}@{self.period_end}: skipped: {self.reason}"
        shadows = [r for r in self.rows if r["role"] == "shadow"]
        counts: dict[str, int] = {}
        for row in shadows:
            counts[row["status"]] = counts.get(row["status"], 0) + 1
        told = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in sorted(counts.items()))
        return (f"what-if {self.job_id}@{self.period_end}: {len(shadows)} shadow strategies "
                f"({told or 'none'}), comparison on MLflow run {self.run_id}")


def read_comparison(client: Any, run_id: str) -> list[dict[str, str]]:
    """The comparison rows of a period's run ([] before its what-if ran)."""
    from jobs.tracking.store import read_csv_artifact

    return read_csv_artifact(client, run_id, COMPARISON_ARTIFACT)


def _objective_params(data: WhatIfInput) -> dict[str, Any]:
    """The params a family evaluates its objective with on other plans: SPRAWL's (β, its
    objective, queries) from the job's sprawl parameters when the period has them."""
    raw = dict(data.shadows).get("sprawl")
    if raw is None:
        return {}
    from placement.sprawl.params import SprawlParams

    try:
        return {"cost_total": SprawlParams.model_validate(dict(raw))}
    except ValueError:
        return {}


def _rows(data: WhatIfInput, outcomes: list[ShadowOutcome],
          in_force: str = PlanStatus.PUBLISHED) -> list[dict[str, Any]]:
    """The comparison: every plan scored in every objective the state allows, ranked by the
    in-force strategy's objective (jobs/whatif/report.py). `in_force`: the plan's publish status
    (a plan waiting for approval is still `planned`)."""
    params = _objective_params(data)

    def scored(plan: Any) -> dict[str, float]:
        return {} if plan is None else objective_values(data.state, plan, params)

    rows = [comparison_row(data.strategy, "in force", in_force, data.plan, data.plan.wall_s,
                           data.plan.message, scored(data.plan))]
    for o in outcomes:
        wall = o.plan.wall_s if o.plan is not None else o.wall_s
        message = o.message or (o.plan.message if o.plan else "")
        worse = raised(data.state, o.plan.assignment) if o.plan is not None else []
        if worse:  # planned without the constraints it cannot hold (shadow_state)
            message = f"would break the topology constraint(s) {'; '.join(worse)}" + (
                f"; {message}" if message else "")
        rows.append(comparison_row(o.strategy, "shadow", o.status, o.plan, wall, message,
                                   scored(o.plan)))
    rows += [comparison_row(name, "shadow", ShadowStatus.SKIPPED, None, 0.0, why)
             for name, why in data.left_out.items()]
    return rank_rows(rows, data.strategy)


def child_note(data: WhatIfInput, outcome: ShadowOutcome,
               params: Mapping[str, Any] | None = None) -> str:
    """The child run's description, one line: which shadow, beside which plan, and its plan
    in the in-force strategy's objective (before → after, evaluated on the period's state),
    load distance second, migrations."""
    from placement.objectives import plan_value
    from schemas.headline import fmt
    from schemas.strategies import LOAD_DISTANCE

    head = (f"What-if {outcome.strategy} for {data.job_id}, period ending {data.period_end}: a "
            f"dry run on the state {data.strategy} (in force) planned")
    if outcome.plan is None:
        return (f"{head}; {outcome.status}" + (f": {outcome.message}" if outcome.message
                                               else ""))[:NOTE_LINE]
    objective = objective_for(data.strategy)
    after = objective_values(data.state, outcome.plan, params).get(objective.name)
    line = (f"{head}; {objective.label} {fmt(plan_value(objective, data.plan, before=True))} → "
            f"{fmt(after)} ({objective.direction})")
    if objective.name != LOAD_DISTANCE.name:
        line += (f"; {LOAD_DISTANCE.label} {fmt(outcome.plan.before.load_distance)} → "
                 f"{fmt(outcome.plan.after.load_distance)}")
    return f"{line}; {outcome.plan.migrations} migration(s); {outcome.status}"[:NOTE_LINE]


def shadow_metrics(plan: Plan) -> dict[str, float]:
    """A shadow's metrics on its child run: the plan's scalar metrics; per-node ones (a `/` in
    the name) stay in the parent's `whatif/per_node.csv`."""
    from jobs.tracking.store import plan_metrics

    return {k: float(v) for k, v in plan_metrics(plan).items() if "/" not in k}


def _child_run(client: Any, experiment_id: str, parent: str, data: WhatIfInput,
               outcome: ShadowOutcome, params: Mapping[str, Any]) -> str:
    """Create or update the child run of one shadow (a rerun of the what-if updates it)."""
    from mlflow.entities import Metric, Param, RunTag

    from jobs.tracking.audit_trail import MOVE_COLUMNS, explain_moves, to_csv
    from placement.reasons import family_params

    found = client.search_runs([experiment_id], filter_string=(
        f"tags.`{Tag.PARENT_RUN}` = '{parent}' AND tags.`{_SHADOW}strategy` = "
        f"'{outcome.strategy}'"), max_results=1)
    tags = {Tag.PARENT_RUN: parent, f"{_SHADOW}job_id": data.job_id,
            f"{_SHADOW}period_end": data.period_end, f"{_SHADOW}strategy": outcome.strategy,
            f"{_SHADOW}status": outcome.status, f"{_SHADOW}message": outcome.message[:4900],
            f"{_SHADOW}in_force": data.strategy}
    tags[Tag.NOTE] = child_note(data, outcome, _objective_params(data))
    if outcome.plan is not None and outcome.plan.determinism:  # reproducible, or clock-cut
        tags[Tag.DETERMINISM] = outcome.plan.determinism[:4900]
    if outcome.budget_s is not None:  # its per-shadow budget and the limit it ran with
        tags[f"{_SHADOW}budget_s"] = f"{outcome.budget_s:.3g}"
        tags[f"{_SHADOW}time_limit_s"] = str(outcome.time_limit_s)
    run_id = (found[0].info.run_id if found else client.create_run(
        experiment_id, run_name=f"what-if {outcome.strategy}", tags=tags).info.run_id)
    existing = client.get_run(run_id).data.params if found else {}
    settings: dict[str, Any] = {"strategy": outcome.strategy, "max_migrations": data.budget.max_migrations,
                "max_migration_cost": data.budget.max_migration_cost,
                "solver_time_limit_s": data.time_limit_s,
                **{f"{outcome.strategy}.{k}": v for k, v in params.items()}}
    metrics = {"wall_time_s": outcome.wall_s,
               # scalars only: a shadow's per-node metrics (cg's `utilisation_pct/<node>`, ...)
               # are rows of the parent's `whatif/per_node.csv`, never metric keys of the
               # experiment (three per node per shadow flooded its runs table)
               **(shadow_metrics(outcome.plan) if outcome.plan is not None else {})}
    now = int(time.time() * 1000)
    # one batch: tags (a rerun updates them), the params not logged yet (write-once), metrics
    client.log_batch(
        run_id,
        metrics=[Metric(name, float(number), now, 0) for name, number in metrics.items()],
        params=[Param(key, "none" if value is None else str(value))
                for key, value in settings.items() if key not in existing],
        tags=[RunTag(key, str(value)) for key, value in tags.items()])
    if outcome.plan is not None:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / Artifact.MOVES_CSV).write_text(
                to_csv(explain_moves(data.state, outcome.plan, None,
                                     family_params(outcome.strategy, params)), MOVE_COLUMNS))
            (folder / Artifact.PLAN_JSON).write_text(
                json.dumps(outcome.plan.to_dict(), indent=2, sort_keys=True))
            client.log_artifacts(run_id, str(folder))
    planned = outcome.status == ShadowStatus.PLANNED
    client.set_terminated(run_id, "FINISHED" if planned else "FAILED")
    return str(run_id)


def _log_comparison(client: Any, run_id: str, data: WhatIfInput,
                    rows: list[dict[str, Any]], outcomes: list[ShadowOutcome]) -> None:
    from jobs.tracking.audit_trail import to_csv
    from jobs.tracking.store import tag_run_of

    columns = columns_of(rows)
    rows = [{c: row.get(c) for c in columns} for row in rows]  # a facet metric some rows lack
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "whatif"
        folder.mkdir()
        cells = [{c: "" if v is None else v for c, v in row.items()} for row in rows]
        (folder / Path(COMPARISON_ARTIFACT).name).write_text(to_csv(cells, columns))
        per_node = per_node_rows([(data.strategy, data.plan),
                                  *((o.strategy, o.plan) for o in outcomes)])
        if per_node:  # CG's utilisation and VWs per node: an artifact, never table columns
            (folder / Path(PER_NODE_ARTIFACT).name).write_text(
                to_csv(per_node, ("strategy", "metric", "node", "value")))
        plot_comparison(rows, f"{data.job_id}, period ending {data.period_end}: what-if "
                        f"(same state, budget {_budget_text(data.budget)})",
                        folder / Path(CHART_ARTIFACT).name, data.strategy)
        client.log_artifacts(run_id, str(folder), "whatif")
    try:  # the MLflow table view of the same rows, where this MLflow renders one
        client.log_table(run_id, {c: [r[c] for r in rows] for c in columns}, TABLE_ARTIFACT)
    except Exception as exc:  # the CSV and the chart are the record; the table is a view
        print(f"what-if: the MLflow table view was not logged ({type(exc).__name__}: {exc})")
    # "best" by the in-force strategy's objective (the ranking), and per objective
    best = best_by_objective(rows)
    in_force = objective_for(data.strategy).name
    tags = {STATUS_TAG: "done", Tag.WHATIF_SHADOWS: str(len(rows) - 1),
            **{f"{Tag.WHATIF_BEST}.{name}": who for name, who in best.items()}}
    if in_force in best:
        tags[Tag.WHATIF_BEST] = best[in_force]
    tag_run_of(client, run_id, tags)  # one batch, the description among them


def _budget_text(budget: Budget) -> str:
    parts = [f"{budget.max_migrations} migrations" if budget.max_migrations is not None else "",
             f"cost {budget.max_migration_cost:g}" if budget.max_migration_cost is not None
             else ""]
    return ", ".join(p for p in parts if p) or "unbounded"


def run_whatif(job: JobConfig, period_end: str, *, paths: Paths | None = None,
               force: bool = False, spark: SparkSession | None = None) -> WhatIfResult:
    """Shadow-plan one published period of `job` and log the comparison (MLflow only); with
    `spark`, the shadows run on its executors (jobs/whatif/shadow_spark.py), else here.

    Skipped (with the reason) when the period has no run, its plan is not published (unless
    `force`: e.g. to compare a historical plan), or its run holds no shadow input. A shadow's
    failure or time-out is its row's status; only an unreachable MLflow store raises.
    """
    from jobs.tracking.store import find_runs, open_experiment, open_store

    paths = paths or Paths.from_env()
    client = open_store(paths)
    experiment_id = open_experiment(client, paths, job.job_id)
    found = find_runs(client, experiment_id, job.job_id, period_end, max_results=1)
    if not found:
        return WhatIfResult(job.job_id, period_end, "skipped", "the period has no MLflow run")
    run = found[0]
    status = run.data.tags.get(Tag.PUBLISH_STATUS, "not published")
    if status != PlanStatus.PUBLISHED and not force:
        return WhatIfResult(job.job_id, period_end, "skipped",
                            f"the period's plan is {status}, not published", run_id=run.info.run_id)
    started = time.perf_counter()
    try:
        data = load_input(client, run.info.run_id, paths, dict(run.data.tags))
    except ValueError as exc:
        return WhatIfResult(job.job_id, period_end, "skipped",
                            "its shadow input is not one the pipeline wrote "
                            f"({exc}); plan the period again to store a new one",
                            run_id=run.info.run_id)
    if data is None:
        return WhatIfResult(job.job_id, period_end, "skipped",
                            "no shadow strategies were chosen at plan time (shadows off, or "
                            "none but the strategy in force applies)", run_id=run.info.run_id)
    tasks = [ShadowTask(name, params, shadow_state(data.state, name), data.budget,
                        data.time_limit_s) for name, params in data.shadows]
    # the budget counts from before the input was read (at 32,768 units, seconds), and keeps
    # a tenth for logging the children and the comparison
    budget = max(0.0, 0.9 * data.time_budget_s - (time.perf_counter() - started))
    if spark is None:
        outcomes = run_shadows(tasks, budget)
    else:
        from jobs.whatif.shadow_spark import run_shadows_on_spark

        outcomes = run_shadows_on_spark(spark, tasks, budget)
    params = dict(data.shadows)
    children = {o.strategy: _child_run(client, experiment_id, run.info.run_id, data, o,
                                       params[o.strategy])
                for o in outcomes if o.status != ShadowStatus.SKIPPED}
    rows = _rows(data, outcomes, run.data.tags.get(Tag.PUBLISH_STATUS, PlanStatus.PLANNED))
    for row in rows:  # each shadow's row links to its child run
        if row["role"] == "shadow" and row["strategy"] in children:
            row["run_id"] = children[row["strategy"]]
    failpoint("whatif.record")  # the shadows' child runs logged, the comparison not yet
    _log_comparison(client, run.info.run_id, data, rows, outcomes)
    client.log_metric(run.info.run_id, "whatif_wall_s", time.perf_counter() - started, step=0)
    return WhatIfResult(job.job_id, period_end, "done", rows=tuple(rows),
                        run_id=run.info.run_id)
