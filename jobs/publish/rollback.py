"""rollback: publish a new version whose assignment is an earlier version's (versions only go up).

`reconf rollback --job J --to-version V --reason TEXT [--override-budget REASON]`. A rollback is
a version of its own, recorded like any plan but never as an attempt of the period whose
statistics it plans on (plan id `…#rollback-v<N+1>`, schemas/attempts.py; strategy
`rollback`) with its moves from the newest version to V's assignment, its MLflow run
(tagged with the version it returns to and the reason), and a new version N+1 whose manifest
carries a move schedule (placement/waves.py) under the job's execution limits. The moves must
keep the job's migration budget, or the operator overrides it with a reason that the run and
the plan row keep. Nothing is written when the job or the version is unknown, V is not older
than the newest version, V places units on nodes the job no longer has, or the budget is
broken without an override.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from jobs.context import StageContext, run_stage, stage_context
from jobs.errors import StageError
from jobs.lake import Lake, Start, open_lake
from jobs.plan.assemble import build_state
from jobs.plan.record import Computed, Provenance, job_budget, record_plan
from jobs.publish.version import publish_version
from placement.common import make_plan
from placement.model import ClusterState, Plan, SolverStatus
from placement.waves import plan_waves
from schemas.config import JobConfig, Paths
from schemas.landing import format_period_end
from schemas.manifest import ScalingSection, manifest_path
from schemas.reasons import check_reason
from schemas.tables import (
    ASSIGNMENT_VERSIONS,
    COMM_STATS,
    KEYGROUP_STATS,
    NODE_STATS,
    PLANS,
)
from schemas.tracking import Tag

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CLI", "Asked", "RollbackResult", "rollback", "trigger_spelling"]


@dataclass(frozen=True)
class Asked:
    """How the operator passes a rollback's options where it was asked for, so each refusal's
    fix names what to type there: the CLI's flags, or the rollback DAG's params (its trigger's
    --conf keys; `trigger_spelling`). `{job}` and `{version}` are filled in."""

    reason: str  # how to give a reason
    override: str  # the override's name, in "... needs a reason"
    override_example: str  # how to give one
    retry_with_override: str  # the same rollback again, with an override
    reason_name: str = "--reason"  # the reason's own name, in a refusal of its text
    given_in: str = "the command line"  # where the operator typed them


CLI = Asked(
    reason="say why with --reason",
    override="--override-budget",
    override_example="--override-budget 'incident 42'",
    retry_with_override="reconf rollback --job {job} --to-version {version} --reason '<why>' "
                        "--override-budget '<why the budget may break>'",
)


def trigger_spelling(dag_id: str) -> Asked:
    """The rollback DAG's params, as `airflow dags trigger <dag_id> --conf` takes them (the UI's
    trigger form shows the same params)."""
    conf = ('airflow dags trigger ' + dag_id + ' --conf \'{{"to_version": {version}, '
            '"reason": "<why>", "override_budget": "<why the budget may break>"}}\'')
    return Asked(
        reason='say why in the param "reason" (the trigger\'s --conf \'{{"to_version": '
               '{version}, "reason": "<why>"}}\', or the form\'s Reason)',
        override='the param "override_budget"',
        override_example='"override_budget": "incident 42" in the trigger\'s --conf',
        reason_name='the param "reason"',
        given_in=f"the run's params (DAG {dag_id})",
        retry_with_override=conf,
    )


@dataclass(frozen=True)
class RollbackResult:
    job_id: str
    to_version: int
    version: int
    plan_id: str
    moves: int
    waves: int
    mlflow_run_id: str | None
    manifest: str
    override: str | None = None

    def summary(self) -> str:
        extra = f"; budget overridden: {self.override}" if self.override else ""
        return (f"rollback {self.plan_id}: published v{self.version} = v{self.to_version}'s "
                f"assignment, {self.moves} move(s) in {self.waves} wave(s), MLflow run "
                f"{self.mlflow_run_id}{extra}")


def _refuse(what: str, job_id: str, fix: str) -> StageError:
    return StageError(what, where=f"job {job_id!r}", fix=fix)


def _earlier(newest: int) -> str:
    """The versions a rollback may go back to, as an operator reads them ("v1", "v1..v4")."""
    return "v1" if newest == 2 else f"v1..v{newest - 1}"


def _earlier_fix(job_id: str, newest: int) -> str:
    """What to do about a version that is not earlier than `newest`; with one version published
    there is none to go back to (never the empty range "v1..v0")."""
    if newest == 1:
        return (f"v1 is the job's only version, so there is nothing earlier to roll back to: to "
                f"change what {job_id} runs, plan and publish a new version (`reconf cycle`)")
    return "roll back to v1" if newest == 2 else f"roll back to one of {_earlier(newest)}"


def rollback(job: JobConfig, to_version: int, *, paths: Paths, reason: str,
             override_budget: str | None = None,
             spark: SparkSession | None = None, asked: Asked = CLI) -> RollbackResult:
    """Publish v(N+1) = v`to_version`'s assignment as an auditable plan (the module docstring).
    `asked`: how the caller's operator passes the options (the fixes name it)."""
    check_reason(reason, asked.reason_name, where=asked.given_in)
    if override_budget is not None:
        check_reason(override_budget, asked.override, where=asked.given_in)
    if not reason.strip():
        raise _refuse("a rollback needs a reason", job.job_id,
                      asked.reason.format(job=job.job_id, version=to_version)
                      + " (it is kept on the plan's MLflow run)")
    if override_budget is not None and not override_budget.strip():
        raise _refuse(f"{asked.override} needs a reason", job.job_id,
                      f"say why the budget may be broken, e.g. {asked.override_example}")
    lake = open_lake(paths, spark)
    lake.ensure_tables()
    newest = lake.newest_version(job.job_id)
    if newest is None:
        raise _refuse("nothing has been published for this job, so there is nothing to roll "
                      "back to", job.job_id, "publish a plan first (`reconf cycle`)")
    if not 1 <= to_version < newest:
        raise _refuse(f"v{to_version} is not an earlier version: the newest is v{newest}",
                      job.job_id, _earlier_fix(job.job_id, newest))
    row = lake.version_row(job.job_id, newest)
    if row is None:
        raise _refuse(f"v{newest} has no version row", job.job_id, "check the lake's "
                      f"{ASSIGNMENT_VERSIONS.name} table")
    end = row["period_end"]  # the lake's timestamps are UTC, read without a zone
    end = end if end.tzinfo else end.replace(tzinfo=UTC)
    done = _done_by_this_run(lake, paths, job.job_id, newest, row["plan_id"], end,
                             override_budget)
    if done is not None:
        return done
    ctx = stage_context(job, end, paths, spark)
    return run_stage(ctx, "rollback", lambda c: _rollback(c, newest, to_version, reason,
                                                          override_budget, asked))


def _rollback(ctx: StageContext, newest: int, to_version: int, reason: str,
              override: str | None, asked: Asked) -> RollbackResult:
    job, lake = ctx.job, ctx.lake
    if lake.newest_version(job.job_id) != newest:
        raise _refuse("another version was published meanwhile", job.job_id,
                      "run the rollback again")
    target = lake.published_assignment(job.job_id, to_version)
    if not target:
        raise _refuse(f"v{to_version} was never published for this job", job.job_id,
                      f"roll back to a published version ({_earlier(newest)}; see "
                      f"`reconf audit --job {job.job_id}`)")
    current = lake.published_assignment(job.job_id, newest)
    state = _state(ctx, current)
    gone = sorted(set(target.values()) - set(state.node_ids))
    if gone:
        raise _refuse(f"v{to_version} places units on node(s) the job no longer has: "
                      f"{', '.join(gone[:5])}", job.job_id,
                      "roll back to a later version, or plan again")
    if set(target) != set(current):
        raise _refuse(f"v{to_version} places other units than v{newest} "
                      f"({len(set(target) ^ set(current))} differ)", job.job_id,
                      "roll back to a version of the job's current units, or plan again")
    plan = replace(make_plan(state, target, status=SolverStatus.HEURISTIC, lower_bound=None,
                             message=f"rollback to v{to_version}: {reason}"),
                   strategy="rollback")
    _check_budget(job, plan, to_version, override, asked)
    schedule = plan_waves(state, plan.moves, job.execution.limits, target)
    tags = {Tag.ROLLBACK_TO: str(to_version), Tag.ROLLBACK_REASON: reason,
            Tag.SCHEDULE_WAVES: str(len(schedule.waves))}
    if override is not None:
        tags[Tag.BUDGET_OVERRIDE] = override
    version = newest + 1  # a version of its own, never an attempt of the period it plans on
    result = record_plan(ctx, Computed("rollback", state, plan,
                                       Start(newest, current, newest, f"rollback to "
                                                                      f"v{to_version}")),
                         Provenance(tags=tags, own_version=version))
    path = publish_version(ctx, version, result.plan_id, target,
                           ScalingSection(reason=f"rollback to v{to_version}"), schedule,
                           result.mlflow_run_id, "rollback.version")
    return RollbackResult(job.job_id, to_version, version, result.plan_id, len(plan.moves),
                          len(schedule.waves), result.mlflow_run_id, str(path), override)


def _done_by_this_run(lake: Lake, paths: Paths, job_id: str, newest: int, plan_id: str,
                      end: datetime, override: str | None) -> RollbackResult | None:
    """The rollback the current Airflow run already published, if the newest version is it.

    The rollback DAG's task is idempotent per run: a cleared run whose rollback reached the lake
    returns that version rather than publishing another one. Outside Airflow (no run id) every
    call is a new rollback, as the CLI means it."""
    airflow_run = os.environ.get("AIRFLOW_CTX_DAG_RUN_ID")
    if not airflow_run:
        return None
    plans = [r for r in lake.period_rows(PLANS, job_id, end)
             if r["plan_id"] == plan_id and r["strategy"] == "rollback"]
    if not plans or json.loads(plans[0]["plan_json"]).get("airflow_run_id") != airflow_run:
        return None
    plan_json = json.loads(plans[0]["plan_json"])
    back_to = re.match(r"rollback to v(\d+)", str(plan_json.get("message", "")))
    return RollbackResult(job_id, int(back_to.group(1)) if back_to else 0, newest,
                          plan_id, int(plans[0]["migrations"]),
                          len((plan_json.get("schedule") or {}).get("waves", ())),
                          plans[0]["mlflow_run_id"] or None,
                          str(manifest_path(paths.published, job_id, newest)), override)


def _state(ctx: StageContext, current: dict[str, str]) -> ClusterState:
    """The newest period's measured state with the newest version's placement."""
    rows = [ctx.lake.period_rows(t, ctx.job_id, ctx.end)
            for t in (KEYGROUP_STATS, NODE_STATS, COMM_STATS)]
    if not rows[0]:
        raise _refuse(f"no statistics of the period {format_period_end(ctx.end)} to plan the "
                      "rollback's moves on", ctx.job_id, "collect that period again, then roll "
                      "back")
    return build_state(ctx.job, rows[0], rows[1], rows[2], current)


def _check_budget(job: JobConfig, plan: Plan, to_version: int, override: str | None,
                  asked: Asked) -> None:
    budget = job_budget(job)
    over = ((budget.max_migrations is not None and plan.migrations > budget.max_migrations)
            or (budget.max_migration_cost is not None
                and plan.migration_cost > budget.max_migration_cost * (1 + 1e-9)))
    if over and override is None:
        raise _refuse(
            f"the rollback to v{to_version} moves {plan.migrations} unit(s) of cost "
            f"{plan.migration_cost:.6g}, over the job's budget ({budget.max_migrations} moves, "
            f"cost {budget.max_migration_cost})", job.job_id,
            f"publish it anyway with a reason for breaking the budget (kept on its MLflow "
            f"run): {asked.retry_with_override.format(job=job.job_id, version=to_version)}; "
            f"or roll back to a nearer version")
