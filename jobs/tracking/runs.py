"""Which MLflow run is a period's record (the runs themselves: jobs/tracking/store.py).

Every plan of a period, a rerun included, is a new run tagged with its plan id and attempt
number. `find_runs` answers with one run per period, the period's *record*: the published
attempt, else the newest attempt that may still be published; `attempts=True` lists them all.
A rollback's or a healing's run is a version of its own (`is_own_version_run`), planned on a
period's statistics but never one of its attempts: `find_runs` leaves it out (`own_versions`
lists a period's, `version_run` finds one by its version), so a period's record stays its own
plan whatever was published on its statistics later.
"""

from __future__ import annotations

from typing import Any

from schemas.attempts import PlanStatus, attempt_of
from schemas.tracking import Tag

__all__ = ["find_runs", "is_own_version_run", "own_versions", "run_attempt", "run_filter",
           "version_run"]

_JOB_TAG, _PERIOD_TAG = Tag.JOB_ID, Tag.PERIOD_END


def run_filter(job_id: str, period_end: str | None, dry_run: bool) -> str:
    """MLflow's filter for a job's runs, of plans or of dry runs, of one period if given."""
    where = f"tags.`{_JOB_TAG}` = '{job_id}' AND tags.`{Tag.DRY_RUN}` = '{str(dry_run).lower()}'"
    return where + (f" AND tags.`{_PERIOD_TAG}` = '{period_end}'" if period_end else "")


def run_attempt(run: Any) -> int:
    """The attempt number of a run: its tag, else read from its plan id (older runs)."""
    tags = run.data.tags
    return int(tags[Tag.ATTEMPT]) if tags.get(Tag.ATTEMPT, "").isdigit() else (
        attempt_of(tags.get(Tag.PLAN_ID, "")))


def _record_rank(run: Any) -> tuple[bool, bool, int, int]:
    """The period's record is its published attempt; else the newest that may be published."""
    status = run.data.tags.get(Tag.PUBLISH_STATUS)
    return (status == PlanStatus.PUBLISHED, status != PlanStatus.NOT_PUBLISHED, run_attempt(run),
            int(run.info.start_time or 0))


def is_own_version_run(run: Any) -> bool:
    """A rollback's or a healing's run (tagged so, or, logged by older releases, carrying a
    rollback's or a healing's tags)."""
    tags = run.data.tags
    return Tag.OWN_VERSION in tags or Tag.ROLLBACK_TO in tags or Tag.HEALING_ID in tags


def own_versions(client: Any, experiment_id: str, job_id: str, period_end: str) -> list[Any]:
    """The runs of the versions of their own planned on the period's statistics, oldest first."""
    runs = client.search_runs([experiment_id], filter_string=run_filter(job_id, period_end, False),
                              max_results=5000)
    return sorted((r for r in runs if is_own_version_run(r)),
                  key=lambda r: int(r.data.tags.get(Tag.ASSIGNMENT_VERSION, "0") or 0))


def version_run(client: Any, experiment_id: str, job_id: str, version: int) -> Any | None:
    """The run of the plan published as `version` (its `reconf.assignment_version` tag)."""
    runs = client.search_runs(
        [experiment_id], filter_string=run_filter(job_id, None, False)
        + f" AND tags.`{Tag.ASSIGNMENT_VERSION}` = '{int(version)}'", max_results=5)
    return runs[0] if runs else None


def find_runs(client: Any, experiment_id: str, job_id: str, period_end: str | None = None,
              *, dry_run: bool = False, max_results: int = 5000, attempts: bool = False,
              own: bool = False) -> list[Any]:
    """The record run of each period of a job (of one period if given), newest period first;
    with `attempts`, every attempt's run (newest period first, each period's record first).
    A version of its own's run is left out, unless `own`."""
    runs = client.search_runs([experiment_id], filter_string=run_filter(job_id, period_end, dry_run),
                              max_results=5000)
    if not own:
        runs = [r for r in runs if not is_own_version_run(r)]
    ordered = sorted(runs, key=lambda r: (r.data.tags.get(_PERIOD_TAG, ""), _record_rank(r)),
                     reverse=True)
    if attempts:
        return ordered[:max_results]
    records: dict[str, Any] = {}
    for run in ordered:  # per period, the best-ranked comes first
        records.setdefault(run.data.tags.get(_PERIOD_TAG, ""), run)
    return list(records.values())[:max_results]
