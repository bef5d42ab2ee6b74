"""MLflow: one run per plan attempt (jobs/plan/attempts.py), where operators audit a plan.

Every plan of a period, a rerun included, is a new run tagged with its plan id and attempt number:
a run, once logged, is only ever completed (publish's tags, the what-if), never overwritten, so
the run of a published version shows what was published. Which run is a period's record:
jobs/tracking/runs.py (`find_runs`, re-exported here).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs.tracking.audit_trail import (
    KEYGROUP_COLUMNS,
    MOVE_COLUMNS,
    NODE_COLUMNS,
    NodeLoads,
    airflow_tags,
    explain_moves,
    keygroup_rows,
    node_rows,
    note_markdown,
    to_csv,
)
from jobs.tracking.bounded import logged_keygroups, logged_plan_json
from jobs.tracking.charts import comm_graph, load_chart
from jobs.tracking.runs import find_runs, run_attempt, run_filter
from jobs.tracking.ui_links import VIEW_TAG, key_metrics_view, view_needs_update
from placement.metrics import mean_load
from placement.model import ClusterState, Plan
from placement.reasons import family_params
from schemas.attempts import PlanStatus
from schemas.config import JobConfig, Paths
from schemas.tracking import MLFLOW_DB_LOGGER, Artifact, Tag, param_tag

__all__ = ["CycleRecord", "find_runs", "log_cycle", "logged_attempts", "open_experiment",
           "open_store", "plan_metrics", "prepare_client", "read_csv_artifact", "refresh_note",
           "run_name", "tag_run", "tag_run_of"]

_JOB_TAG, _PERIOD_TAG = Tag.JOB_ID, Tag.PERIOD_END
_KIND_TAG, _KIND = Tag.EXPERIMENT_KIND, "custom_model_development"
NOTE_TAG = Tag.NOTE  # the run description the MLflow UI shows on the run page


@dataclass(frozen=True)
class CycleRecord:
    """Everything the run of one cycle shows besides the plan itself."""

    job: JobConfig
    period_end: str
    strategy: str
    plan_json: Mapping[str, Any]
    validation: Mapping[str, Any] | None
    tags: Mapping[str, str]
    dry_run: bool = False
    #: more artifacts of the run, name -> text (e.g. a job with sources: placements.csv)
    artifacts: Mapping[str, str] = field(default_factory=dict)


def run_name(period_end: str) -> str:
    """The run's name: its period end, short (`2026-01-01 00:05`; seconds only when not 0).

    The experiment is the job's, so the name needs no job id and fits the runs table's column;
    lookups go by the tags reconf.job_id / reconf.period_end, never by the name."""
    day, _, clock = period_end.removesuffix("Z").partition("T")
    return f"{day} {clock.removesuffix(':00') if clock.count(':') == 2 else clock}".strip()


_CLIENTS: dict[str, Any] = {}
_CLIENTS_LOCK = threading.Lock()


def _client(paths: Paths) -> Any:
    """The process's client of the store at `paths`, created once (with MLflow's import and the
    store's opening and schema check, the first costs seconds; the stages log several times)."""
    paths.mlflow.mkdir(parents=True, exist_ok=True)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(paths.mlflow_uri)
        if client is None:
            from mlflow import MlflowClient

            os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # no bars in logs
            # a new store's "Creating initial MLflow database tables..." (INFO, on stderr) is
            # not the stage's output: a fresh clone's first `reconf plan` printed it
            logging.getLogger(MLFLOW_DB_LOGGER).setLevel(logging.WARNING)
            client = _CLIENTS[paths.mlflow_uri] = MlflowClient(tracking_uri=paths.mlflow_uri)
        return client


def prepare_client(paths: Paths | None = None) -> None:
    """Import MLflow and matplotlib and open the store now, e.g. in a thread while the stage's
    Spark reads run: in a fresh process that is most of the logging's cost."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot

    _client(paths or Paths.from_env())


def _experiment_id(client: Any, paths: Paths, job_id: str, strategy: str | None = None) -> str:
    """The job's experiment (created on first use), classic-view and, given the job's strategy,
    with its key-metrics saved view (jobs/tracking/ui_links.py)."""
    experiment = client.get_experiment_by_name(job_id)
    if experiment is None:
        experiment = client.get_experiment(client.create_experiment(
            job_id, artifact_location=(paths.mlflow / "artifacts" / job_id).as_uri()))
    if experiment.tags.get(_KIND_TAG) != _KIND:  # the UI's run table, not its GenAI views
        client.set_experiment_tag(experiment.experiment_id, _KIND_TAG, _KIND)
    if strategy is not None and view_needs_update(experiment.tags, strategy):
        client.set_experiment_tag(experiment.experiment_id, VIEW_TAG,
                                  key_metrics_view(strategy, int(time.time() * 1000)))
    return str(experiment.experiment_id)


def logged_attempts(paths: Paths, job_id: str, period_end: str, dry_run: bool) -> int:
    """The highest attempt number among the period's runs (0: none), of plans or dry runs."""
    client = _client(paths)
    experiment_id = _experiment_id(client, paths, job_id)
    runs = client.search_runs([experiment_id],
                              filter_string=run_filter(job_id, period_end, dry_run),
                              max_results=5000)
    return max((run_attempt(r) for r in runs), default=0)


def _create_run(client: Any, experiment_id: str, record: CycleRecord) -> tuple[str, str]:
    """A new run for the attempt (a run is never reused: see the module's docstring): its id
    and name."""
    attempt = int(record.tags.get(Tag.ATTEMPT, "1"))
    suffix = "" if attempt == 1 else f" #{attempt}"
    if Tag.OWN_VERSION in record.tags:  # a rollback's or a healing's: named by its version
        suffix = f" {record.strategy} v{record.tags[Tag.OWN_VERSION]}"
    if record.dry_run:
        suffix = f" (dry run{suffix})"
    elif record.tags.get(Tag.PUBLISH_STATUS) == PlanStatus.NOT_PUBLISHED:
        suffix += " (not published)"
    run = client.create_run(experiment_id, run_name=run_name(record.period_end) + suffix,
                            tags=_creation_tags(record))
    return str(run.info.run_id), str(run.info.run_name)


def _creation_tags(record: CycleRecord) -> dict[str, str]:
    return {_JOB_TAG: record.job.job_id, _PERIOD_TAG: record.period_end,
            Tag.DRY_RUN: str(record.dry_run).lower()}


def _load_index(client: Any, experiment_id: str, period_end: str, system_load: float) -> float:
    """100 × this period's system load / the system load of the job's first (warm-up) period.

    The warm-up period is the earliest period_end among the job's non-dry-run cycles that logged
    `system_load` (this one included), so the first cycle of a job has load index 100.
    """
    # the earliest such run only: one row from the store, however long the job's history
    runs = client.search_runs(
        [experiment_id],
        filter_string=f"tags.`{Tag.DRY_RUN}` = 'false' AND metrics.system_load > 0",
        order_by=[f"tags.`{_PERIOD_TAG}` ASC"], max_results=1)
    first = (period_end, system_load)
    for run in runs:
        value = run.data.metrics.get("system_load")
        when = run.data.tags.get(_PERIOD_TAG)
        if value is not None and value > 0 and when is not None and when < first[0]:
            first = (when, float(value))
    return 100.0 * system_load / first[1] if first[1] > 0 else 100.0


def read_csv_artifact(client: Any, run_id: str, name: str) -> list[dict[str, str]]:
    """The rows of a CSV artifact of a run; [] when the run has none (e.g. an older run)."""
    folder = name.rpartition("/")[0] or None
    if name not in {a.path for a in client.list_artifacts(run_id, folder)}:
        return []
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(client.download_artifacts(run_id, name, tmp))
        with local.open(newline="") as handle:
            return list(csv.DictReader(handle))


def refresh_note(client: Any, run_id: str, moves: list[dict[str, str]] | None = None) -> None:
    """(Re)write the run description from what the run holds now (tags, metrics, moves, and the
    what-if comparison once it ran)."""
    run = client.get_run(run_id)
    client.set_tag(run_id, NOTE_TAG, _note_of(client, run, dict(run.data.tags), moves))


#: the moves.csv rows of the runs this process logged (run id -> rows), newest last: a later
#: `tag_run` of the same plan (the plan stage's versions) rewrites the note without reading
#: the artifact back; a run logged by another process reads it
_MOVES: dict[str, list[dict[str, str]]] = {}
_MOVES_KEPT = 16


def _keep_moves(run_id: str, moves: list[dict[str, str]]) -> None:
    _MOVES[run_id] = moves
    while len(_MOVES) > _MOVES_KEPT:
        del _MOVES[next(iter(_MOVES))]


def _note_of(client: Any, run: Any, tags: Mapping[str, str],
             moves: list[dict[str, str]] | None = None) -> str:
    """The description of `run` with `tags` (its own, with any about to be logged)."""
    run_id = run.info.run_id
    if moves is None:
        moves = _MOVES.get(run_id)
    if moves is None:
        moves = read_csv_artifact(client, run_id, Artifact.MOVES_CSV)
    whatif = (read_csv_artifact(client, run_id, Artifact.WHATIF_COMPARISON)
              if Tag.WHATIF_STATUS in tags else [])
    return note_markdown(run.info.run_name, tags, run.data.metrics, moves, whatif)


def _validation_tags(validation: Mapping[str, Any] | None) -> dict[str, str]:
    if validation is None:
        return {}
    return {Tag.VALIDATION_SUCCESS: str(bool(validation.get("success"))).lower(),
            Tag.VALIDATION_FAILURES: str(validation.get("failure_count", 0)),
            Tag.VALIDATION_EXPECTED_FROM: str(validation.get("expected_keygroups_from", ""))}


def plan_metrics(plan: Plan) -> dict[str, float]:
    """The metrics of a plan, as a cycle's run and a shadow plan's child run log them."""
    metrics = {
        "load_distance_before": plan.before.load_distance,
        "load_distance_after": plan.after.load_distance,
        "max_node_load_before": plan.before.max_node_load,
        "max_node_load_after": plan.after.max_node_load,
        "collocation_factor_before": plan.before.collocation_factor,
        "collocation_factor_after": plan.after.collocation_factor,
        "migrations": float(plan.migrations),
        "migration_cost": plan.migration_cost,
        "solve_time_s": plan.wall_s,
    }
    if plan.lower_bound is not None:
        metrics["lower_bound"] = plan.lower_bound
    # metrics only some facets define (placement.model.Plan.facet_metrics)
    metrics.update({f"{name}_after": value for name, value in plan.facet_metrics.items()})
    metrics.update({f"{name}_before": value for name, value in plan.facet_before.items()})
    return metrics


def open_store(paths: Paths) -> Any:
    """The MLflow client of the pipeline's tracking store."""
    return _client(paths)


def open_experiment(client: Any, paths: Paths, job_id: str) -> str:
    """The id of the job's experiment (created on first use)."""
    return _experiment_id(client, paths, job_id)


def log_cycle(paths: Paths, record: CycleRecord, state: ClusterState, plan: Plan) -> str:
    """Create or update the cycle's run with params, metrics, tags and artifacts; its run id."""
    from mlflow.entities import Metric, Param, RunTag

    client = _client(paths)
    job = record.job
    experiment_id = _experiment_id(client, paths, job.job_id, job.strategy)
    run_id, name = _create_run(client, experiment_id, record)
    params = {
        "strategy": record.strategy,
        "max_migrations": job.max_migrations,
        "max_migration_cost": job.max_migration_cost,
        "solver_time_limit_s": job.solver_time_limit_s,
        "alpha": job.alpha,
        "spl_s": int(job.spl.total_seconds()),
        "nodes": len(state.nodes),
        "keygroups": len(state.keygroups),
        # the strategy's own parameters (`strategy_params`), e.g. albic.max_pl
        **{f"{record.strategy}.{k}": v
           for k, v in job.strategy_params.get(record.strategy, {}).items()},
    }
    new_params = [Param(key, "none" if value is None else str(value))
                  for key, value in params.items()]
    # the settings also as tags (runs of older releases were updated by reruns, and params are
    # write-once: there the tags held the newest values; reconf/audit.py reads both)
    current = {param_tag(k): "none" if v is None else str(v) for k, v in params.items()}
    metrics = plan_metrics(plan)
    system_load = mean_load(state)  # collocation: the load index (paper §5), where computable
    if system_load > 0:
        metrics["system_load"] = system_load
        metrics["load_index"] = _load_index(client, experiment_id, record.period_end, system_load)
    scaling = record.plan_json.get("scaling") or {}
    if "decision" in scaling:  # Algorithm 1 ran: the decision, its reason, node counts
        for key in ("nodes_to_add", "nodes_to_mark", "nodes_to_terminate"):
            metrics[f"scaling_{key}"] = float(len(scaling.get(key) or ()))
        metrics["nodes_active"] = float(scaling.get("nodes_active", 0))
    now = int(time.time() * 1000)
    provenance = airflow_tags()
    tags = {Tag.SOLVER_STATUS: plan.status.value, **current,
            **({Tag.DETERMINISM: plan.determinism[:4900]} if plan.determinism else {}),
            Tag.TRIGGER: "airflow" if provenance else "manual",
            **_validation_tags(record.validation), **provenance, **record.tags}
    if "decision" in scaling:
        tags[Tag.SCALING_DECISION] = str(scaling["decision"])
        tags[Tag.SCALING_REASON] = str(scaling.get("reason", ""))[:4900]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # per unit only what stays bounded (jobs/tracking/bounded.py): the lake has the rest
        (folder / Artifact.PLAN_JSON).write_text(
            json.dumps(logged_plan_json(record.plan_json), indent=2, sort_keys=True))
        loads = NodeLoads.of(state, plan)  # once: the moves, the nodes and the chart share them
        family = family_params(plan.strategy, job.strategy_params.get(plan.strategy))
        moves_csv = to_csv(explain_moves(state, plan, loads, family), MOVE_COLUMNS)
        (folder / Artifact.MOVES_CSV).write_text(moves_csv)
        (folder / Artifact.KEYGROUPS_CSV).write_text(
            to_csv(logged_keygroups(keygroup_rows(state, plan)), KEYGROUP_COLUMNS))
        (folder / Artifact.NODES_CSV).write_text(to_csv(node_rows(state, plan, loads), NODE_COLUMNS))
        load_chart(state, plan, folder / Artifact.NODE_LOADS_PNG, (loads.before, loads.after))
        if state.edges:
            comm_graph(state, plan, folder / Artifact.COMM_GRAPH_PNG)
        for name, text in record.artifacts.items():
            (folder / name).write_text(text)
        if record.validation is not None:
            (folder / Artifact.VALIDATION_JSON).write_text(
                json.dumps(record.validation, indent=2, sort_keys=True, default=str)
            )
        client.log_artifacts(run_id, str(folder))  # one upload: every artifact of the run
    moves = list(csv.DictReader(io.StringIO(moves_csv)))
    _keep_moves(run_id, moves)
    logged = {**_creation_tags(record), **{k: str(v) for k, v in tags.items()}}
    # the description from what is logged here, not read back (refresh_note gives the same)
    tags[NOTE_TAG] = note_markdown(name, logged, {k: float(v) for k, v in metrics.items()},
                                   moves)
    # one batch (a few store transactions) instead of one call per value
    client.log_batch(
        run_id,
        metrics=[Metric(key, float(value), now, 0) for key, value in metrics.items()],
        params=new_params,
        tags=[RunTag(key, str(value)) for key, value in tags.items()],
    )
    client.set_terminated(run_id, "FINISHED")
    return run_id


def tag_run(paths: Paths, run_id: str, tags: Mapping[str, str]) -> None:
    """Add tags a later step knows (plans table version, assignment version) and redo the note."""
    tag_run_of(_client(paths), run_id, tags)


def tag_run_of(client: Any, run_id: str, tags: Mapping[str, str]) -> None:
    """`tag_run` with a client: one read of the run, one batch of the tags and its new
    description."""
    from mlflow.entities import RunTag

    run = client.get_run(run_id)
    new = {key: str(value) for key, value in tags.items()}
    new[NOTE_TAG] = _note_of(client, run, {**run.data.tags, **new})
    client.log_batch(run_id, tags=[RunTag(key, value) for key, value in new.items()])


def run_tags(paths: Paths, run_id: str) -> dict[str, str]:
    """The tags of a run ({} when the store has no such run)."""
    client = _client(paths)
    try:
        return dict(client.get_run(run_id).data.tags)
    except Exception as exc:  # MlflowException: RESOURCE_DOES_NOT_EXIST
        if "RESOURCE_DOES_NOT_EXIST" in str(getattr(exc, "error_code", "")) or (
                "not found" in str(exc).lower()):
            return {}
        raise
