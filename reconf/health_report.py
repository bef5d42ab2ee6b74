"""`reconf health report`: a health report written by hand, as the runtime would write it.

An operator who sees a node die (or the live runtime's `--kill-node` is not the way it happened)
must be able to start a healing without writing Python. The report is built from the flags,
checked against the nodes the job runs (a typo would otherwise heal nothing, or alert), read
back by the contract's own reader (schemas/health.py `read_report`) before it is written, and
written atomically; the healing DAG's watcher then fires on it like on any runtime's report.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from jobs.errors import StageError
from runtime.source import load_state, state_path
from schemas.config import JobConfig, Paths
from schemas.health import HealthReport, read_report, write_report
from schemas.landing import SUCCESS_MARKER, read_runtime_report

__all__ = ["known_nodes", "write_by_hand"]


def _newest_landed(landing: Path, job_id: str) -> Path | None:
    folder = landing / job_id
    found = sorted(p for p in folder.glob("period_end=*") if (p / SUCCESS_MARKER).is_file()) \
        if folder.is_dir() else []
    return found[-1] if found else None


def known_nodes(job: JobConfig, paths: Paths) -> tuple[tuple[str, ...], str]:
    """The nodes the job runs (its runtime's state, and its newest landed period's report) and
    where they were read; refused when the job has neither (it has not run yet)."""
    nodes: set[str] = set()
    where: list[str] = []
    state = load_state(paths.runtime, job.job_id)
    if state is not None:
        nodes |= set(state.nodes)
        where.append(str(state_path(paths.runtime, job.job_id)))
    newest = _newest_landed(paths.landing, job.job_id)
    report = read_runtime_report(newest) if newest is not None else None
    if report is not None and newest is not None:
        nodes |= set(report.nodes)
        where.append(str(newest))
    if not nodes:
        raise StageError(
            f"job {job.job_id!r} has not run yet: no runtime state and no landed period name "
            "its nodes, so no node can be reported",
            where=f"{state_path(paths.runtime, job.job_id)}, {paths.landing / job.job_id}",
            fix=f"start its runtime (`reconf runtime run --job {job.job_id}`, or `make up`) or "
                f"land a period (`reconf land --job {job.job_id} --period-end T`), then report")
    return tuple(sorted(nodes)), " and ".join(where)


def _report_id(dead: Sequence[str], over: Sequence[str], at: datetime) -> str:
    nodes, kind = (dead, "dead") if dead else (over, "over")
    more = f"-and-{len(nodes) - 1}-more" if len(nodes) > 1 else ""
    return f"{nodes[0][:80]}{more}-{kind}-{at.astimezone(UTC).strftime('%Y%m%dT%H%M%SZ')}"


def _checked(report: HealthReport) -> HealthReport:
    """The report as the contract's reader reads it back (refused there: never written)."""
    with tempfile.TemporaryDirectory(prefix="health-") as tmp:
        path = Path(tmp) / f"{report.report_id}.json"
        path.write_text(report.to_json(), encoding="utf-8")
        back = read_report(path)
    if back != report:
        raise StageError(f"health report {report.report_id} does not read back as written",
                         where="schemas/health.py", fix="report this as a bug")
    return back


def write_by_hand(job: JobConfig, paths: Paths, *, dead: Sequence[str],
                  over: Sequence[tuple[str, float]], reason: str, at: datetime) -> str:
    """Write the report; what to print: its id, its file and what happens next."""
    where = f"reconf health report --job {job.job_id}"
    if not dead and not over:
        raise StageError("nothing to report: name a dead node or a node over capacity",
                         where=where, fix="add --dead NODE and/or --over-capacity NODE=UTIL")
    both = sorted(set(dead) & {n for n, _ in over})
    if both:
        raise StageError(f"node(s) {', '.join(both)} reported both dead and over capacity",
                         where=where, fix="a dead node has no load: give it with --dead only")
    at = at.astimezone(UTC).replace(microsecond=0)  # the report's `at` has whole seconds
    nodes, read_from = known_nodes(job, paths)
    unknown = sorted({*dead, *(n for n, _ in over)} - set(nodes))
    if unknown:
        raise StageError(f"job {job.job_id!r} runs no node {', '.join(map(repr, unknown))}",
                         where=read_from,
                         fix=f"name nodes the job runs: {', '.join(nodes)}")
    report = _checked(HealthReport(job.job_id, _report_id(dead, [n for n, _ in over], at), at,
                                   tuple(dead), dict(over), reason))
    path = write_report(paths.landing, report)
    lines = [f"health report {report.report_id} written: {path}"]
    healing = job.healing
    if healing is None or not healing.enabled:
        lines.append(f"healing is off for job {job.job_id} (no [jobs.{job.job_id}.healing] "
                     "enabled = true): no DAG picks the report up. Turn it on in the job config "
                     f"(docs/operations.md, \"Healing between periods\"), or heal by hand: "
                     f"reconf heal --job {job.job_id} --report-id {report.report_id}")
        return "\n".join(lines)
    threshold = healing.over_capacity_pct / 100.0
    ignored = sorted(n for n, load in over if load <= threshold)
    lines.append(f"next: the DAG heal_{job.job_id} (when unpaused: airflow dags unpause "
                 f"heal_{job.job_id}) picks it up within seconds, waits out min_gap "
                 f"{healing.min_gap} after the last healing, re-places the reported nodes' units "
                 f"within the healing budget ({healing.budget}) and publishes the next version; "
                 f"by hand instead: reconf heal --job {job.job_id} --report-id "
                 f"{report.report_id}")
    if ignored:
        lines.append(f"note: {', '.join(ignored)} at or below the job's over_capacity_pct "
                     f"{healing.over_capacity_pct:g} %: the healing leaves it where it is")
    return "\n".join(lines)
