"""The measured execution of a version, logged on that version's own MLflow run once applied.

The runtime reports, in each landed period (`_RUNTIME.json`, kept by collect), how it applied
the newest version's move schedule (runtime/execution.py: per wave the units moved, state bytes,
seconds, the measured byte rate, failures). The next plan's run keeps that report as
`execution.json` ("the runtime's last schedule"); this module also puts it where an auditor of
the version itself looks: on the run of the plan that became that version, as

- step metrics, one step per wave: `execution_wave_seconds`, `execution_wave_bytes`,
  `execution_wave_moved`, `execution_wave_failed` and, when the wave took time,
  `execution_wave_bytes_per_s` (MLflow charts them against the wave number);
- tags `reconf.execution.status` and `reconf.execution.recorded` ("<status>:<waves run>");
- the artifact `execution_applied.json` (the report's execution, as the runtime wrote it).

Idempotent: a plan stage rerun for the same period, or a later period whose report says the same
(`recorded` unchanged), logs nothing again; a report that moved on (a resumed schedule ending
`done`) replaces the tags and the artifact and logs the new waves' steps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from jobs.context import StageContext
from jobs.tracking.store import open_store, run_tags
from schemas.tables import PLANS
from schemas.tracking import Artifact, Tag

__all__ = ["record_applied"]


def record_applied(ctx: StageContext, execution: Mapping[str, Any]) -> str | None:
    """Log `execution` (a runtime report's) on its version's run; that run's id, or None when
    the version has no run here (published before runs were kept, or the lake has no plan)."""
    try:
        version = int(execution["version"])
        runs = list(execution.get("runs") or ())
        status = str(execution.get("status", ""))
    except (KeyError, TypeError, ValueError):
        return None  # an unreadable report is advisory: the next one may be whole
    run_id = _version_run(ctx, version)
    if run_id is None:
        return None
    key = f"{status}:{len(runs)}"
    tags = run_tags(ctx.paths, run_id)
    if not tags:
        return None  # the run is gone from the store (a deleted run): nothing to add it to
    if tags.get(Tag.EXECUTION_RECORDED) == key:
        return run_id
    client = open_store(ctx.paths)
    done = int(tags.get(Tag.EXECUTION_RECORDED, ":0").rpartition(":")[2] or 0)
    from mlflow.entities import Metric, RunTag

    metrics = [Metric(f"execution_wave_{name}", float(value), 0, int(w["wave"]))
               for w in runs[done:] for name, value in _wave_metrics(w).items()]
    client.log_batch(run_id, metrics=metrics, tags=[
        RunTag(Tag.EXECUTION_STATUS, status), RunTag(Tag.EXECUTION_RECORDED, key)])
    client.log_text(run_id, json.dumps(dict(execution), indent=1), Artifact.APPLIED_JSON)
    return run_id


def _wave_metrics(wave: Mapping[str, Any]) -> dict[str, float]:
    out = {"seconds": float(wave["seconds"]), "bytes": float(wave["state_bytes"]),
           "moved": float(len(wave["moved"])), "failed": float(len(wave["failed"]))}
    if wave.get("bytes_per_s") is not None:
        out["bytes_per_s"] = float(wave["bytes_per_s"])
    return out


def _version_run(ctx: StageContext, version: int) -> str | None:
    """The MLflow run of the plan published as `version` (its plans row names it)."""
    row = ctx.lake.version_row(ctx.job_id, version)
    if row is None:
        return None
    end = row["period_end"]
    from datetime import UTC

    end = end if end.tzinfo else end.replace(tzinfo=UTC)
    plans = [r for r in ctx.lake.period_rows(PLANS, ctx.job_id, end, ("plan_id", "mlflow_run_id"))
             if r["plan_id"] == row["plan_id"]]
    return str(plans[0]["mlflow_run_id"]) if plans and plans[0]["mlflow_run_id"] else None
