"""MLflow's vocabulary: every tag name and artifact path a plan's run carries, in one place.

A plan attempt's run (jobs/tracking/store.py) is written by plan, completed by publish and the
what-if, and read by `reconf audit` (reconf/audit.py) and `reconf compare` (reconf/compare.py):
they agree on these names by importing them from here, never by repeating a literal. The names
are part of the tracking store's contract: runs logged by older releases carry the same ones.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MLFLOW_DB_LOGGER", "Artifact", "Tag", "airflow_tag", "delta_version_tag", "delta_versions", "param_tag",
           "shadow_tag", "strip_prefix"]

#: the logger of MLflow's SQL store, whose INFO lines ("Creating initial MLflow database
#: tables...") a new store prints on stderr: not a stage's output
MLFLOW_DB_LOGGER: Final = "mlflow.store.db.utils"


class Tag:
    """Tag names (`reconf.*` ours; `mlflow.*` the ones MLflow's UI reads)."""

    JOB_ID: Final = "reconf.job_id"
    PERIOD_END: Final = "reconf.period_end"
    PLAN_ID: Final = "reconf.plan_id"
    ATTEMPT: Final = "reconf.attempt"
    CHECKSUM: Final = "reconf.checksum"
    DRY_RUN: Final = "reconf.dry_run"
    BASE_VERSION: Final = "reconf.base_version"
    SOLVER_STATUS: Final = "reconf.solver_status"
    #: what made the plan reproducible, or the step a clock cut (placement/determinism.py)
    DETERMINISM: Final = "reconf.determinism"
    TRIGGER: Final = "reconf.trigger"
    PUBLISH_STATUS: Final = "reconf.publish_status"
    PUBLISHED_VERSION: Final = "reconf.published_version"
    PUBLISHED_PLAN_ID: Final = "reconf.published_plan_id"
    ASSIGNMENT_VERSION: Final = "reconf.assignment_version"
    MANIFEST: Final = "reconf.manifest"
    SCALING_DECISION: Final = "reconf.scaling.decision"
    SCALING_REASON: Final = "reconf.scaling.reason"
    VALIDATION_SUCCESS: Final = "reconf.validation.success"
    VALIDATION_FAILURES: Final = "reconf.validation.failures"
    VALIDATION_EXPECTED_FROM: Final = "reconf.validation.expected_from"
    WHATIF_STATUS: Final = "reconf.whatif.status"
    WHATIF_BEST: Final = "reconf.whatif.best"
    WHATIF_SHADOWS: Final = "reconf.whatif.shadows"
    #: where the shadows' input is (a file under RECONF_HOME keyed by the plan id, not an
    #: artifact: O(units + edges)) and its SHA-256, so the what-if reads exactly what was kept
    WHATIF_INPUT: Final = "reconf.whatif.input"
    WHATIF_INPUT_SHA256: Final = "reconf.whatif.input_sha256"
    PLANNED_BY: Final = "reconf.planned_by"
    FLEET_EXECUTOR: Final = "reconf.fleet.executor"
    #: a rollback's plan (jobs/publish/rollback.py): the version it returns to, why, a budget override
    ROLLBACK_TO: Final = "reconf.rollback.to_version"
    ROLLBACK_REASON: Final = "reconf.rollback.reason"
    #: healing between periods (jobs/heal/): the finding healed, its nodes, and the outcome
    HEALING_ID: Final = "reconf.healing.id"
    #: a version of its own (a rollback's or a healing's plan): the version it was published as;
    #: such a run is never an attempt of the period whose statistics it was planned on
    OWN_VERSION: Final = "reconf.own_version"
    HEALING_REPORT: Final = "reconf.healing.report_id"
    HEALING_NODES: Final = "reconf.healing.nodes"
    HEALING_STATUS: Final = "reconf.healing.status"
    BUDGET_OVERRIDE: Final = "reconf.budget.override"
    #: a job with approval (jobs/approval.py): approved / rejected / timed_out, why, who, when
    APPROVAL: Final = "reconf.approval"
    APPROVAL_REASON: Final = "reconf.approval.reason"
    APPROVAL_BY: Final = "reconf.approval.by"
    APPROVAL_AT: Final = "reconf.approval.at"
    #: the plan's move schedule (placement/waves.py): waves, and waves over the ceiling
    SCHEDULE_WAVES: Final = "reconf.schedule.waves"
    SCHEDULE_OVER_CEILING: Final = "reconf.schedule.over_ceiling"
    #: on a version's own run, once the runtime applied it (jobs/plan/applied.py): its status
    #: (done, stopped, failed, running) and "<status>:<waves run>", which makes the record idempotent
    EXECUTION_STATUS: Final = "reconf.execution.status"
    EXECUTION_RECORDED: Final = "reconf.execution.recorded"
    #: prefixes of families of tags
    PARAM_PREFIX: Final = "reconf.param."
    AIRFLOW_PREFIX: Final = "reconf.airflow."
    DELTA_PREFIX: Final = "reconf.delta."
    #: a shadow's child run (never reconf.job_id: `find_runs` must skip it)
    SHADOW_PREFIX: Final = "reconf.shadow."
    #: MLflow's own
    NOTE: Final = "mlflow.note.content"
    PARENT_RUN: Final = "mlflow.parentRunId"
    EXPERIMENT_KIND: Final = "mlflow.experimentKind"
    RUN_NAME: Final = "mlflow.runName"
    #: an experiment's saved runs-table view: `SHARED_VIEW_PREFIX` + its key
    SHARED_VIEW_PREFIX: Final = "mlflow.sharedViewState."


class Artifact:
    """Artifact paths of a plan's run."""

    PLAN_JSON: Final = "plan.json"
    MOVES_CSV: Final = "moves.csv"
    KEYGROUPS_CSV: Final = "keygroups.csv"
    NODES_CSV: Final = "nodes.csv"
    NODE_LOADS_PNG: Final = "node_loads.png"
    COMM_GRAPH_PNG: Final = "comm_graph.png"
    VALIDATION_JSON: Final = "validation.json"
    PLACEMENTS_CSV: Final = "placements.csv"
    WHATIF_INPUT: Final = "whatif/input.json"
    WHATIF_COMPARISON: Final = "whatif/comparison.csv"
    WHATIF_CHART: Final = "whatif/comparison.png"
    #: per-node facet metrics of every what-if plan, one row per value (never table columns)
    WHATIF_PER_NODE: Final = "whatif/per_node.csv"
    WHATIF_TABLE: Final = "whatif/comparison_table.json"
    SCHEDULE_JSON: Final = "schedule.json"
    #: the runtime's measured execution of the last schedule (runtime/execution.py)
    EXECUTION_JSON: Final = "execution.json"
    #: on a version's own run: how the runtime applied that version (jobs/plan/applied.py)
    APPLIED_JSON: Final = "execution_applied.json"
    #: a Kafka Streams job under load: the period's latency and lag per second
    #: (runtime/kafka_streams/period_plot.py)
    KSTREAMS_LOAD_PNG: Final = "kstreams_latency_lag.png"


def delta_version_tag(table: str) -> str:
    """The tag holding the Delta version of `table` a plan read or wrote."""
    return f"{Tag.DELTA_PREFIX}{table}.version"


def delta_versions(tags: dict[str, str]) -> dict[str, str]:
    """table -> Delta version, from a run's tags."""
    return {k[len(Tag.DELTA_PREFIX):-len(".version")]: v for k, v in tags.items()
            if k.startswith(Tag.DELTA_PREFIX) and k.endswith(".version")}


def param_tag(name: str) -> str:
    return f"{Tag.PARAM_PREFIX}{name}"


def airflow_tag(name: str) -> str:
    return f"{Tag.AIRFLOW_PREFIX}{name}"


def shadow_tag(name: str) -> str:
    return f"{Tag.SHADOW_PREFIX}{name}"


def strip_prefix(tags: dict[str, str], prefix: str) -> dict[str, str]:
    """The tags under `prefix`, by the rest of their names."""
    return {k[len(prefix):]: v for k, v in tags.items() if k.startswith(prefix)}
