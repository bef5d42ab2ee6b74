"""`reconf audit` and the versions of their own: rollbacks and healings.

A rollback or a healing is planned on the statistics of the newest published period, but it is
a version of its own, not an attempt of that period (jobs/plan/attempts.py): the period's audit
keeps reporting the period's own plan and lists these only as versions planned on its
statistics, and `reconf audit --version N` audits the plan published as version N, whatever it
was (a period's plan, a rollback, a healing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from schemas.attempts import PlanStatus
from schemas.errors import ReconfError
from schemas.tracking import Tag

__all__ = ["own_version_entries", "own_version_lines", "version_target"]


def version_target(client: Any, experiment_id: str, job_id: str, version: int,
                   error: type[ReconfError]) -> tuple[str, str]:
    """(period end, plan id) of the run published as `version`; `error` when there is none."""
    from jobs.tracking.runs import version_run

    if version < 1:
        raise error(f"--version {version}: versions are whole numbers from 1")
    run = version_run(client, experiment_id, job_id, version)
    if run is None:
        raise error(f"job {job_id!r} has no MLflow run of a plan published as v{version}; "
                    f"`reconf audit --job {job_id} --period-end T` lists a period's versions")
    tags = run.data.tags
    return str(tags[Tag.PERIOD_END]), str(tags.get(Tag.PLAN_ID, ""))


def own_version_entries(client: Any, experiment_id: str, job_id: str, stamp: str
                        ) -> list[dict[str, Any]]:
    """The versions of their own planned on the period's statistics, oldest first."""
    from jobs.tracking.runs import own_versions

    out = []
    for run in own_versions(client, experiment_id, job_id, stamp):
        tags = run.data.tags
        kind = run.data.params.get("strategy") or (
            "rollback" if Tag.ROLLBACK_TO in tags else "healing")
        what = (f"rollback to v{tags[Tag.ROLLBACK_TO]}: {tags.get(Tag.ROLLBACK_REASON, '')}"
                if Tag.ROLLBACK_TO in tags else
                f"healing of report {tags.get(Tag.HEALING_REPORT, '?')}"
                if Tag.HEALING_REPORT in tags else kind)
        version = tags.get(Tag.ASSIGNMENT_VERSION) or tags.get(Tag.OWN_VERSION)
        out.append({"version": int(version) if version and version.isdigit() else None,
                    "kind": kind, "what": what, "plan_id": tags.get(Tag.PLAN_ID),
                    "run_id": run.info.run_id,
                    "status": tags.get(Tag.PUBLISH_STATUS, PlanStatus.PLANNED)})
    return out


def own_version_lines(r: Mapping[str, Any]) -> list[str]:
    """One line per version of its own planned on the period's statistics."""
    lines = []
    for v in r.get("own_versions") or ():
        number = v["version"]
        head = f"v{number}" if number is not None else "unpublished"
        how = f" (`--version {number}` audits it)" if number is not None else ""
        lines.append(f"  version of its own: {head} ({v['what']}), plan {v['plan_id']}, MLflow "
                     f"run {v['run_id']}, planned on this period's statistics{how}")
    return lines
