"""heal: an out-of-schedule cycle for a node the runtime reported dead or far over capacity.

`heal(job, report)` (the DAG dags/healing.py runs it per health report, `reconf heal` by hand):

1. The finding's key is `heal_id` = hash(job, report id, the nodes it names, the report's
   content): never the time it runs. A finding already in the lake's `healings` table returns
   its recorded outcome, so a retried task, a re-triggered run or a report delivered twice heals
   once. One report id is one finding: a report whose id was handled before with other content
   (the file rewritten) is refused, never healed a second time.
2. A report that names only nodes the job does not run (none in the healing period's node
   statistics nor in the newest version) is refused: there is nothing of the job to heal, and
   healing a typo or another job's report would publish a version for nothing. Unknown nodes
   beside known ones are left out of the healing.
3. The nodes to heal are the report's dead nodes and the live ones above the job's
   `over_capacity_pct`; none: recorded as `nothing`. More than `max_nodes_at_once`: nothing is
   done, an alert is recorded (lake row, MLflow run tagged `reconf.healing.status=alert`), as
   Cruise Control does past its fixable-failure thresholds.
4. A healing published less than `min_gap` ago: refused with the time it may run (the DAG waits
   for it in the triggerer before calling; nothing is recorded, so the finding heals later).
5. The plan (placement/healing.py) starts from the newest published version on the newest
   collected period's loads; it is recorded like any plan, as a version of its own (plan id
   `…#healing-v<N>`, never an attempt of that period; strategy
   `healing`, its MLflow run) and published at once as version N+1 (jobs/publish/version.py),
   terminating the dead nodes. The next scheduled period plans from it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from jobs.context import StageContext, run_stage, stage_context
from jobs.errors import StageError
from jobs.heal.record import last_healed, record_outcome, recorded, records_of_report
from jobs.lake import Lake, Start, open_lake
from jobs.plan.assemble import build_state
from jobs.plan.record import Computed, Provenance, record_plan
from jobs.publish.version import finish_version, publish_version
from jobs.spark.session import lazy_spark
from jobs.tracking.store import run_name, tag_run
from placement.healing import HealingRefused, HealingRequest
from placement.healing import heal as heal_plan
from placement.waves import plan_waves
from schemas.attempts import PlanStatus
from schemas.config import JobConfig, Paths
from schemas.health import HealthReport
from schemas.manifest import Manifest, ManifestError, ScalingSection, read_manifest
from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS, PLANS
from schemas.tracking import Tag

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["HealResult", "heal", "heal_id", "healing_nodes", "next_allowed"]

_FAR = datetime(2200, 1, 1, tzinfo=UTC)  # after any period; within nanosecond timestamps


@dataclass(frozen=True)
class HealResult:
    """One finding's outcome: `published` (with its version), `alert` or `nothing`; `again`
    when the finding had been handled before (its recorded outcome, unchanged)."""

    job_id: str
    heal_id: str
    report_id: str
    status: str
    nodes: tuple[str, ...]
    message: str
    version: int | None = None
    plan_id: str | None = None
    moves: int = 0
    mlflow_run_id: str | None = None
    again: bool = False

    def summary(self) -> str:
        head = f"heal {self.job_id} report {self.report_id} ({_shown(self.nodes) or '-'})"
        if self.status == PlanStatus.PUBLISHED:
            body = (f"published v{self.version}: plan {self.plan_id}, {self.moves} move(s), "
                    f"MLflow run {self.mlflow_run_id}")
        elif self.status == "alert":
            body = f"ALERT, nothing done: {self.message}"
        else:
            body = f"nothing to heal: {self.message}"
        return f"{head}: {body}" + ("; handled before, unchanged" if self.again else "")


def _shown(nodes: tuple[str, ...] | list[str], most: int = 5) -> str:
    """Nodes as a message lists them: the first few, the rest counted."""
    more = len(nodes) - most
    return ", ".join(nodes[:most]) + (f" (+{more} more)" if more > 0 else "")


def healing_nodes(job: JobConfig, report: HealthReport) -> tuple[frozenset[str], frozenset[str]]:
    """(dead, far over capacity) nodes of the report under the job's threshold."""
    over = report.over(job.healing.over_capacity_pct / 100.0)
    return frozenset(report.dead), frozenset(over)


def heal_id(job: JobConfig, report: HealthReport, *, legacy: bool = False) -> str:
    """The finding's key: the job, the report's id, the nodes it asks to heal and the digest of
    the report's content. `legacy`: the key of releases that left the content out (their rows
    are the same findings)."""
    dead, over = healing_nodes(job, report)
    text = f"{job.job_id}|{report.report_id}|{','.join(sorted(dead))}|{','.join(sorted(over))}"
    if not legacy:
        text += "|" + hashlib.sha256(report.to_json().encode()).hexdigest()
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def next_allowed(job: JobConfig, paths: Paths, spark: SparkSession | None = None
                 ) -> datetime | None:
    """When the job may publish its next healing (the last one + `min_gap`); None: at once."""
    lake = open_lake(paths, spark if spark is not None else lazy_spark(paths))
    lake.ensure_tables()
    last = last_healed(lake, job.job_id)
    return None if last is None else last + job.healing.min_gap


def heal(job: JobConfig, report: HealthReport, *, paths: Paths,
         spark: SparkSession | None = None, now: datetime | None = None) -> HealResult:
    """Heal one reported finding (the module docstring)."""
    where = f"job {job.job_id!r}, health report {report.report_id!r}"
    if report.job_id != job.job_id:
        raise StageError(f"the report is of job {report.job_id!r}", where=where,
                         fix="heal it with its own job")
    if not job.healing.enabled:
        raise StageError("healing is off for this job", where=where,
                         fix=f"set `enabled = true` in [jobs.{job.job_id}.healing]")
    ctx = stage_context(job, report.at, paths, spark)  # its period: chosen under the lock
    return run_stage(ctx, "heal", lambda c: _heal(c, report, now or datetime.now(UTC)))


def _period(lake: Lake, job_id: str) -> tuple[int | None, datetime | None]:
    """(the newest version, the period the healing plans on): the newest version's period (a
    healing is an attempt of it, as a rollback is; a period being planned is left alone), or,
    before any publish, the newest collected period (None: none yet)."""
    newest = lake.newest_version(job_id)
    row = lake.version_row(job_id, newest) if newest else None
    end = row["period_end"] if row else lake.latest_period(KEYGROUP_STATS, job_id, _FAR)
    return newest, (end if end is None or end.tzinfo else end.replace(tzinfo=UTC))


def _heal(ctx: StageContext, report: HealthReport, now: datetime) -> HealResult:
    job, lake = ctx.job, ctx.lake
    newest, end = _period(lake, job.job_id)
    collected = end is not None
    ctx = replace(ctx, end=end) if end is not None else ctx
    key = heal_id(job, report)
    dead, over = healing_nodes(job, report)
    before = (recorded(lake, job.job_id, key)
              or recorded(lake, job.job_id, heal_id(job, report, legacy=True)))
    if before is not None:
        return _result(job.job_id, report, before, again=True)
    _check_new_finding(lake, job.job_id, report)
    if end is not None:
        dead, over = _known(lake, job.job_id, report, dead, over, end, newest)
    nodes = tuple(sorted(dead | over))

    def outcome(status: str, message: str, **extra: Any) -> HealResult:
        row = record_outcome(ctx, report, key, nodes, status, message, **extra)
        return _result(job.job_id, report, row)

    unfinished = _unfinished(ctx, report, newest)
    if unfinished is not None:  # a killed run published part of this finding's version
        manifest, row = unfinished
        run_id = row.get("mlflow_run_id") or None
        finish_version(ctx, manifest, run_id, "heal.version")
        if run_id:
            tag_run(ctx.paths, run_id, {Tag.RUN_NAME: f"{run_name(ctx.stamp)} healing "
                                                      f"v{manifest.version} {report.report_id}"})
        return outcome(PlanStatus.PUBLISHED, str(row.get("message") or ""),
                       version=manifest.version, plan_id=manifest.plan_id,
                       moves=int(row.get("migrations") or 0),
                       mlflow_run_id=run_id)

    if not nodes:
        return outcome("nothing", f"no dead node and none above {job.healing.over_capacity_pct:g}"
                                  " % of its capacity")
    if len(nodes) > job.healing.max_nodes_at_once:
        return outcome("alert", f"{len(nodes)} node(s) to heal at once, more than "
                                f"max_nodes_at_once = {job.healing.max_nodes_at_once}: beyond what "
                                "healing fixes alone; fix: look at the cluster, then re-place by "
                                "hand (`reconf plan`/`publish`) or raise the cap")
    if not collected:
        return outcome("alert", "no period of this job has been collected yet, so there are no "
                                "loads to heal with; fix: collect a period first")
    last = last_healed(lake, job.job_id)
    if last is not None and now < last + job.healing.min_gap:
        raise StageError(
            f"the last healing published at {last.isoformat()}, less than min_gap = "
            f"{job.healing.min_gap} ago", where=f"job {job.job_id!r}, report {report.report_id}",
            fix=f"heal it from {(last + job.healing.min_gap).isoformat()} on (the healing DAG "
                "waits for it by itself)")
    current = lake.published_assignment(job.job_id, newest) if newest else {}
    rows = [lake.period_rows(t, job.job_id, ctx.end) for t in (KEYGROUP_STATS, NODE_STATS,
                                                                 COMM_STATS)]
    state = build_state(job, rows[0], rows[1], rows[2], current)
    # nodes the period's stats still list but a version of this period terminated since (an
    # earlier healing's dead node): never a target, and terminated again for a runtime that
    # skipped that version
    gone = sorted((dead | _terminated(ctx, newest)) & set(state.node_ids))
    try:
        plan = heal_plan(state, HealingRequest(frozenset(gone) | dead, over,
                                               job.healing.budget))
    except HealingRefused as exc:
        return outcome("alert", f"{exc.what}; fix: {exc.fix}")
    if not plan.moves and not dead & set(state.node_ids):
        return outcome("nothing", "the reported nodes hold no unit to move now")
    tags = {Tag.HEALING_ID: key, Tag.HEALING_REPORT: report.report_id,
            Tag.HEALING_NODES: ",".join(nodes), Tag.HEALING_STATUS: PlanStatus.PUBLISHED}
    version = (newest or 0) + 1  # a version of its own, never an attempt of the period
    result = record_plan(ctx, Computed("healing", state, plan,
                                       Start(newest, current, newest,
                                             f"healing of report {report.report_id}")),
                         Provenance(tags=tags, own_version=version))
    schedule = plan_waves(state, plan.moves, job.execution.limits, dict(plan.assignment))
    reason = (f"healing of report {report.report_id}: dead {', '.join(gone) or '-'}; over "
              f"capacity {', '.join(sorted(over)) or '-'}")
    publish_version(ctx, version, result.plan_id, dict(plan.assignment),
                    ScalingSection(nodes_to_terminate=tuple(gone), reason=reason), schedule,
                    result.mlflow_run_id, "heal.version")
    if result.mlflow_run_id:  # named by its version and the report it heals
        tag_run(ctx.paths, result.mlflow_run_id, {
            Tag.RUN_NAME: f"{run_name(ctx.stamp)} healing v{version} {report.report_id}"})
    return outcome(PlanStatus.PUBLISHED, plan.message, version=version, plan_id=result.plan_id,
                   moves=len(plan.moves), mlflow_run_id=result.mlflow_run_id)


def _unfinished(ctx: StageContext, report: HealthReport, newest: int | None
                ) -> tuple[Manifest, dict[str, Any]] | None:
    """The version a killed run of this finding's healing published part of, with its plan row:
    the newest version (its row written, LATEST or the plan's status perhaps not), or the one
    after it (its manifest written, no row yet). Its manifest's reason names the report; no
    other finding can, as one report id is one finding and this one has no `healings` row."""
    for version in (newest or 0, (newest or 0) + 1):
        try:
            manifest = read_manifest(ctx.paths.published, ctx.job_id, version) if version else None
        except ManifestError:
            continue
        if manifest is None or manifest.period_end != ctx.stamp or not \
                manifest.scaling.reason.startswith(f"healing of report {report.report_id}: "):
            continue
        plans = [r for r in ctx.lake.period_rows(PLANS, ctx.job_id, ctx.end)
                 if r["plan_id"] == manifest.plan_id]
        if plans:
            return manifest, plans[0]
    return None


def _check_new_finding(lake: Lake, job_id: str, report: HealthReport) -> None:
    """Refuse a report whose id was handled before with other content: one id, one finding."""
    rows = records_of_report(lake, job_id, report.report_id)
    if rows:
        row = rows[0]
        outcome = str(row["status"]) + (f" as v{row['version']}" if row.get("version") else "")
        raise StageError(
            f"health report {report.report_id!r} was handled before with other content "
            f"({outcome}, nodes {_shown(str(row['nodes'] or '-').split(','))}); one report id is "
            "one finding, so a rewritten report is never healed again",
            where=f"job {job_id!r}, health report {report.report_id!r} (lake table healings, "
                  f"heal_id {row['heal_id']})",
            fix="write the new finding as a report of its own report id (`reconf health "
                "report` names each by its node and instant), and leave reports unchanged once "
                "written")


def _known(lake: Lake, job_id: str, report: HealthReport, dead: frozenset[str],
           over: frozenset[str], end: datetime, newest: int | None
           ) -> tuple[frozenset[str], frozenset[str]]:
    """The report's nodes the job runs (the period's node statistics, the newest version's
    nodes); a report naming none of them is refused."""
    rows = lake.period_rows(NODE_STATS, job_id, end)
    known = {str(r["node"]) for r in rows}
    if newest:
        known |= set(lake.published_assignment(job_id, newest).values())
    named = sorted(set(report.dead) | set(report.utilisation))
    if named and not known & set(named):
        raise StageError(
            f"health report {report.report_id!r} names no node job {job_id!r} runs "
            f"({len(named)} unknown: {_shown(named)})",
            where=f"job {job_id!r}, health report {report.report_id!r}",
            fix=f"report nodes of the job: {_shown(sorted(known), 10)} (its newest period's "
                "node statistics and published version); check the reporter's job id")
    return dead & known, over & known


def _terminated(ctx: StageContext, newest: int | None) -> frozenset[str]:
    """The nodes terminated by the published versions of the healing's period (newest first,
    down to the first version of another period)."""
    out: set[str] = set()
    for version in range(newest or 0, 0, -1):
        try:
            manifest = read_manifest(ctx.paths.published, ctx.job_id, version)
        except ManifestError:
            break
        if manifest.period_end != ctx.stamp:
            break
        out |= set(manifest.scaling.nodes_to_terminate)
    return frozenset(out)


def _result(job_id: str, report: HealthReport, row: dict[str, Any], *, again: bool = False
            ) -> HealResult:
    nodes = tuple(n for n in str(row.get("nodes") or "").split(",") if n)
    version = row.get("version")
    return HealResult(job_id, str(row["heal_id"]), report.report_id, str(row["status"]), nodes,
                      str(row.get("message") or ""), None if version is None else int(version),
                      row.get("plan_id"), int(row.get("moves") or 0), row.get("mlflow_run_id"),
                      again)
