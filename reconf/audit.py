"""`reconf audit`: why did a job's plan move what it moved, read back from the MLflow run.

MLflow is the audit trail: everything printed here comes from the run of the period (its tags,
params, metrics and the artifacts moves.csv, keygroups.csv, nodes.csv, validation.json), never
from recomputing, so the answer is what the pipeline decided at the time, even if the stats,
the config or the planner changed since.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from jobs.tracking.ui_links import experiment_url, run_url
from placement.determinism import alarm
from reconf.audit_execution import execution_lines
from reconf.audit_versions import own_version_entries, own_version_lines, version_target
from schemas.attempts import REFUSED_AT_APPROVAL, PlanStatus
from schemas.config import Paths
from schemas.errors import ReconfError
from schemas.headline import bound_of, headline, objective_for, values_of
from schemas.landing import format_period_end, parse_period_end
from schemas.strategies import LOAD_DISTANCE
from schemas.tracking import Artifact, Tag, delta_versions, strip_prefix

__all__ = ["AuditError", "audit", "format_report", "job_experiment", "mlflow_ui_base", "open_store"]

NEAREST = 3
_TRAILING = re.compile(r"(\d+)$")


class AuditError(ReconfError, ValueError):
    """The audit cannot answer: what is wrong, where, and what to try instead."""


def mlflow_ui_base() -> str:
    """Where operators open the MLflow UI: `RECONF_MLFLOW_URL`, else the MLflow server `make up`
    runs, else `make mlflow-ui`'s port (reconf.ports.mlflow_ui_url)."""
    from reconf.ports import mlflow_ui_url

    return mlflow_ui_url(Paths.from_env().home)


def open_store(paths: Paths) -> Any:
    from mlflow import MlflowClient

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # clean stderr
    uri = paths.mlflow_uri
    db = Path(uri.removeprefix("sqlite:///"))
    if uri.startswith("sqlite:///") and not db.is_file():  # do not create an empty store
        raise AuditError(f"no MLflow store at {db}: nothing was planned under this RECONF_HOME "
                         "(set RECONF_HOME to the stores of the pipeline, or run a cycle first)")
    return MlflowClient(tracking_uri=uri)


def job_experiment(client: Any, job_id: str) -> str:
    experiment = client.get_experiment_by_name(job_id)
    if experiment is not None:
        return str(experiment.experiment_id)
    known = sorted(e.name for e in client.search_experiments() if e.name != "Default")
    try:
        from schemas.config import load_jobs

        configured = ", ".join(sorted(load_jobs())) or "none"
    except ValueError as exc:  # a broken config must not hide the audit trail
        configured = f"unknown ({exc})"
    raise AuditError(f"unknown job {job_id!r}: the MLflow store has no experiment for it; jobs "
                     f"with runs: {', '.join(known) or 'none'}; configured jobs: {configured}")


def _period(text: str) -> tuple[datetime, str]:
    try:
        when = parse_period_end(text)
    except ValueError as exc:
        raise AuditError(f"--period-end: {exc}") from exc
    return when, format_period_end(when)


def _run_of(client: Any, experiment_id: str, job_id: str, when: datetime, stamp: str,
            dry_run: bool, plan_id: str | None = None) -> tuple[Any, list[Any]]:
    """The run to report (the period's record, or the attempt `plan_id`), and every attempt's."""
    from jobs.tracking.store import find_runs

    # with a plan id, any plan of the period: an attempt or a version of its own
    runs = find_runs(client, experiment_id, job_id, stamp, dry_run=dry_run, attempts=True,
                     own=plan_id is not None)
    if runs and plan_id is not None:
        chosen = next((r for r in runs if r.data.tags.get(Tag.PLAN_ID, f"{job_id}@{stamp}")
                       == plan_id), None)
        if chosen is None:
            ids = ", ".join(r.data.tags.get(Tag.PLAN_ID, f"{job_id}@{stamp}") for r in runs)
            raise AuditError(f"--plan-id {plan_id!r} is not a plan of job {job_id!r} for the "
                             f"period ending {stamp}; its plans: {ids}")
        return chosen, runs
    if runs:  # best first: the record (jobs/tracking/store.py `find_runs`)
        return runs[0], runs
    periods = sorted({r.data.tags[Tag.PERIOD_END]
                      for r in find_runs(client, experiment_id, job_id, dry_run=dry_run)})
    kind = "dry run" if dry_run else "run"
    if not periods:
        raise AuditError(f"job {job_id!r} has no {kind} in MLflow yet; nothing to audit")
    nearest = sorted(periods, key=lambda p: (abs((parse_period_end(p) - when).total_seconds()), p))
    shown = ", ".join(sorted(nearest[:NEAREST]))
    raise AuditError(f"no {kind} of job {job_id!r} for the period ending {stamp}; nearest periods "
                     f"with a {kind}: {shown} ({len(periods)} in all, {periods[0]} .. "
                     f"{periods[-1]}); period ends are the ends of SPL windows")


def _json_artifact(client: Any, run_id: str, name: str) -> dict[str, Any] | None:
    if name not in {a.path for a in client.list_artifacts(run_id)}:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        loaded: dict[str, Any] = json.loads(Path(client.download_artifacts(run_id, name, tmp))
                                            .read_text())
        return loaded


def _num(value: str | float | None) -> float | None:
    if value in (None, "", "none", "None"):
        return None
    return float(value)


def _ids(text: str) -> list[str]:
    return [part for part in text.split(";") if part]


def _placement(row: dict[str, str]) -> dict[str, Any]:
    """A placements.csv row (jobs/tracking/placements.py) as the report shows it."""
    return {"how": row["how"], "sources": _ids(row["sources"]),
            "already_on_node": _ids(row["already_on_node"]),
            "traffic_added": _num(row["traffic_added"]), "rule": row["rule"]}


def _keygroup(query: str, keygroups: list[dict[str, str]], moves: list[dict[str, str]],
              nodes: list[dict[str, str]], report: dict[str, Any],
              placements: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """The key group `query` (exact id, or its trailing number when that is unambiguous)."""
    ids = [k["keygroup"] for k in keygroups]
    if query not in ids:
        number = int(query) if query.isdigit() else None
        matches = [i for i in ids if (m := _TRAILING.search(i)) and int(m.group(1)) == number]
        if len(matches) != 1:
            what = (f"matches several key groups ({', '.join(matches)}); give the full id"
                    if matches else
                    f"is not a key group of this run ({len(ids)} key groups, e.g. "
                    f"{', '.join(ids[:4])})" + (
                        "; a run of a job of more than 1,000 key groups lists the moved and the "
                        "1,000 heaviest (jobs/tracking/bounded.py): the lake's assignments "
                        "table has every one" if len(ids) >= 1000 else ""))
            raise AuditError(f"--key-group {query!r} {what}")
        query = matches[0]
    row = next(k for k in keygroups if k["keygroup"] == query)
    move = next((m for m in moves if m["keygroup"] == query), None)
    load = {n["node"]: n for n in nodes}
    out: dict[str, Any] = {"keygroup": query, "operator": row["operator"],
                           "load_pct": _num(row["load_pct"]),
                           "state_bytes": _num(row["state_bytes"]),
                           "moved": move is not None, "from": row["node_before"],
                           "to": row["node_after"]}
    placed = next((p for p in placements or () if p["keygroup"] == query), None)
    if placed is not None:  # a job with sources: which of its sources were there, the traffic
        out["placement"] = _placement(placed)
    if placed is not None and placed["how"] == "arrival":
        p = out["placement"]
        out.update(arrived=True, reason=(
            f"arrived this period (the runtime ran it on {row['node_before']} until a plan placed "
            f"it); placed on {row['node_after']}, {p['rule']}: it reads "
            f"{', '.join(p['sources']) or 'no source'}; already shipped there: "
            f"{', '.join(p['already_on_node']) or 'none'}; traffic added "
            f"{_fmt(p['traffic_added'])} tuples/s"))
        return out
    if move is not None:
        out.update(reason=move["reason"], reason_codes=move["reason_codes"].split(";"),
                   cost=_num(move["cost"]))
        if placed is not None:
            p = out["placement"]
            out["reason"] += (f"; reads {', '.join(p['sources'])}, of which already on "
                              f"{row['node_after']}: {', '.join(p['already_on_node']) or 'none'}"
                              f" (traffic added {_fmt(p['traffic_added'])} tuples/s)")
        return out
    node = load.get(row["node_before"], {})
    budget = report["budget"]["max_migrations"]
    used = report["migrations"]
    why = (f"the migration budget was used up ({used} of {int(budget)} migrations)"
           if budget is not None and used >= budget else
           f"the plan needed only {used} migration(s) to reach its load distance")
    if node:
        why += (f"; its node {row['node_before']} went {float(node['load_before']):.1f}% -> "
                f"{float(node['load_after']):.1f}%")
    out["reason"] = f"not moved: {why}"
    return out


def _attempt(run: Any, job_id: str, stamp: str) -> dict[str, Any]:
    """One line's worth of a plan attempt: what it would have done, and its status."""
    tags, metrics = run.data.tags, run.data.metrics
    return {"plan_id": tags.get(Tag.PLAN_ID, f"{job_id}@{stamp}"), "run_id": run.info.run_id,
            "status": tags.get(Tag.PUBLISH_STATUS, PlanStatus.PLANNED),
            "migrations": None if "migrations" not in metrics else int(metrics["migrations"]),
            "load_distance_after": metrics.get("load_distance_after")}


def audit(job_id: str, period_end: str | None, keygroup: str | None = None, *,
          paths: Paths | None = None, dry_run: bool = False, compare: bool = False,
          plan_id: str | None = None, version: int | None = None) -> dict[str, Any]:
    """The audit report of one cycle, as plain JSON-able data, from its MLflow run only; with
    `compare`, also its what-if comparison (the rows of `whatif/comparison.csv`).

    The run is the period's record (its published plan, else the newest attempt that may still
    be published: jobs/tracking/store.py `find_runs`), or the attempt `plan_id`; the period's other
    attempts are listed as attempts (plan id, run, status, migrations), never mixed in, and the
    rollbacks and healings planned on its statistics as versions of their own. `version`: the
    plan published as that version, whatever the period (`period_end` is then not needed)."""
    from jobs.tracking.runs import is_own_version_run
    from jobs.tracking.store import read_csv_artifact

    paths = paths or Paths.from_env()
    client = open_store(paths)
    experiment_id = job_experiment(client, job_id)
    if version is not None:
        period_end, plan_id = version_target(client, experiment_id, job_id, version,
                                             AuditError)
    if period_end is None:
        raise AuditError("say which plan to audit: --period-end T (a period's plan) or "
                         "--version N (the plan published as version N)")
    when, stamp = _period(period_end)
    run, runs = _run_of(client, experiment_id, job_id, when, stamp, dry_run, plan_id)
    rid, tags, metrics = run.info.run_id, run.data.tags, run.data.metrics
    param = strip_prefix(tags, Tag.PARAM_PREFIX)
    param = {**run.data.params, **param}  # tags hold the newest rerun's settings
    moves = read_csv_artifact(client, rid, Artifact.MOVES_CSV)
    validation = _json_artifact(client, rid, Artifact.VALIDATION_JSON)
    airflow = strip_prefix(tags, Tag.AIRFLOW_PREFIX)
    report: dict[str, Any] = {
        "job_id": job_id, "period_end": stamp,
        "run": {"id": rid, "name": run.info.run_name, "experiment_id": experiment_id,
                "status": run.info.status,
                "url": run_url(mlflow_ui_base(), experiment_id, rid),
                "runs_table": experiment_url(mlflow_ui_base(), experiment_id)},
        "strategy": param.get("strategy"), "solver_status": tags.get(Tag.SOLVER_STATUS),
        "objective": _objective(param.get("strategy"), metrics),
        "solve_time_s": metrics.get("solve_time_s"),
        "determinism": tags.get(Tag.DETERMINISM),
        "budget": {"max_migrations": _num(param.get("max_migrations")),
                   "max_migration_cost": _num(param.get("max_migration_cost"))},
        "load_distance": {"before": metrics.get("load_distance_before"),
                          "after": metrics.get("load_distance_after"),
                          # the MILP's bound is on d; another strategy's bounds its objective
                          "lower_bound": metrics.get("lower_bound")
                          if objective_for(param.get("strategy")).name == LOAD_DISTANCE.name
                          else None},
        "collocation_factor": {"before": metrics.get("collocation_factor_before"),
                               "after": metrics.get("collocation_factor_after")},
        "migrations": len(moves), "migration_cost": metrics.get("migration_cost"),
        # a job with sources (Herding): stream traffic, replication factor, balance, bound
        "herding": ({name: {"before": metrics.get(f"{name}_before"),
                            "after": metrics.get(f"{name}_after")}
                     for name in ("stream_traffic", "replication_factor", "balance",
                                  "traffic_lower_bound")}
                    if "stream_traffic_after" in metrics else None),
        "moves": [{"keygroup": m["keygroup"], "from": m["src_node"], "to": m["dst_node"],
                   "load_pct": _num(m["load_pct"]), "state_bytes": _num(m["state_bytes"]),
                   "reason": m["reason"]} for m in moves],
        "scaling": ({"decision": tags[Tag.SCALING_DECISION],
                     "reason": tags.get(Tag.SCALING_REASON, "")}
                    if Tag.SCALING_DECISION in tags else None),
        "validation": None if validation is None else {
            "success": validation.get("success"), "failures": validation.get("failure_count"),
            "expected_keygroups_from": validation.get("expected_keygroups_from"),
            "failed": [f"{f.get('table')}.{f.get('column') or ''}: {f.get('rule')}"
                       for f in validation.get("failures", [])]},
        "delta_versions": {k: int(v) for k, v in sorted(delta_versions(tags).items())},
        "airflow": airflow or None,
        "published": ({"assignment_version": int(tags[Tag.ASSIGNMENT_VERSION]),
                       "manifest": tags.get(Tag.MANIFEST)}
                      if Tag.ASSIGNMENT_VERSION in tags else None),
        "publish_status": tags.get(Tag.PUBLISH_STATUS),
        # a job with approval (jobs/approval.py): the human's answer, or its timeout
        "approval": ({"outcome": tags[Tag.APPROVAL], "reason": tags.get(Tag.APPROVAL_REASON, ""),
                      "by": tags.get(Tag.APPROVAL_BY) or None, "at": tags.get(Tag.APPROVAL_AT, "")}
                     if Tag.APPROVAL in tags else None),
        "plan_id": tags.get(Tag.PLAN_ID, f"{job_id}@{stamp}"),
        "published_as": ({"assignment_version": int(tags[Tag.PUBLISHED_VERSION]),
                          "plan_id": tags.get(Tag.PUBLISHED_PLAN_ID)}
                         if tags.get(Tag.PUBLISHED_VERSION, "").isdigit() else None),
        "other_attempts": [_attempt(r, job_id, stamp) for r in sorted(
            runs, key=lambda r: r.info.start_time or 0)
            if r.info.run_id != rid and not is_own_version_run(r)],
        # rollbacks and healings planned on this period's statistics: versions of their own
        "own_versions": [] if dry_run else [
            v for v in own_version_entries(client, experiment_id, job_id, stamp)
            if v["run_id"] != rid],
        "base_version": tags.get(Tag.BASE_VERSION),
        "artifacts": sorted(a.path for a in client.list_artifacts(rid)),
        "dry_run": dry_run,
        "resilience": _resilience(metrics),
        # units moved back onto a node they left, over the job's window of published periods
        # (jobs/plan/steady.py); None for a job without a [stability] table
        "oscillations": ({"before": metrics.get("oscillations_before"),
                          "after": metrics["oscillations_after"]}
                         if "oscillations_after" in metrics else None),
        # a rollback's plan (jobs/publish/rollback.py) and the move schedule (placement/waves.py)
        "rollback": ({"to_version": int(tags[Tag.ROLLBACK_TO]),
                      "reason": tags.get(Tag.ROLLBACK_REASON, ""),
                      "budget_override": tags.get(Tag.BUDGET_OVERRIDE)}
                     if tags.get(Tag.ROLLBACK_TO, "").isdigit() else None),
        "schedule": _json_artifact(client, rid, Artifact.SCHEDULE_JSON),
        # what the runtime measured applying the schedule it ran last (its period report)
        "execution": _json_artifact(client, rid, Artifact.EXECUTION_JSON),
        # how the runtime applied this run's own version, once reported (jobs/plan/applied.py)
        "applied": _json_artifact(client, rid, Artifact.APPLIED_JSON),
        # what a Kafka Streams job measured: the period's latency and lag under load, the
        # migration of this run's version (runtime/kafka_streams/source.py)
        "kafka_streams": {k: v for k, v in metrics.items() if k.startswith("kstreams_")} or None,
    }
    if compare:
        from jobs.whatif.stage import read_comparison

        report["whatif"] = {"status": tags.get(Tag.WHATIF_STATUS, "not run"),
                            "rows": read_comparison(client, rid)}
    if keygroup is not None:
        report["keygroup"] = _keygroup(keygroup, read_csv_artifact(client, rid, Artifact.KEYGROUPS_CSV),
                                       moves, read_csv_artifact(client, rid, Artifact.NODES_CSV), report,
                                       read_csv_artifact(client, rid, Artifact.PLACEMENTS_CSV))
    return report


#: the plan metrics of placement/rod/resilience.py, logged as `<name>_after` / `<name>_before`
_RESILIENCE = ("feasible_set_ratio", "plane_distance_ratio", "mmad_bound", "headroom")


def _resilience(metrics: dict[str, float]) -> dict[str, dict[str, float | None]] | None:
    """Each resilience metric of the run, before and after (None: the job has no load model)."""
    names = sorted(k[: -len("_after")] for k in metrics
                   if k.endswith("_after") and k.startswith(_RESILIENCE)
                   and not k.endswith("_ci_after"))
    return {n: {"before": metrics.get(f"{n}_before"), "after": metrics[f"{n}_after"]}
            for n in names} or None


def _objective(strategy: str | None, metrics: Mapping[str, float]) -> dict[str, Any]:
    """The strategy's declared objective on this run: before, after, bound, and the line."""
    objective = objective_for(strategy)
    before, after = values_of(objective, metrics)
    return {"name": objective.name, "label": objective.label, "unit": objective.unit,
            "direction": objective.direction, "before": before, "after": after,
            "bound": bound_of(objective, metrics), "headline": headline(strategy, metrics)}


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else format(value, ".4g")


def _f(value: float | None, fmt: str = ".3f") -> str:
    return "n/a" if value is None else format(value, fmt)


def format_report(r: dict[str, Any]) -> str:
    """The report as the lines an operator reads in a terminal."""
    run, ld, budget = r["run"], r["load_distance"], r["budget"]
    lines = [
        f"{run['name']}: plan {r['plan_id']}, MLflow run {run['id']} ({run['status'].lower()})",
        f"  open: {run['url']}",
        f"  runs table (key metrics): {run['runs_table']}",
        f"  objective: {r['objective']['headline']} [{r['objective']['unit']}]",
        f"  strategy {r['strategy']} (solver {r['solver_status']}, "
        f"{_f(r['solve_time_s'], '.2f')} s); budget max_migrations="
        f"{_f(budget['max_migrations'], '.0f')}, max_migration_cost="
        f"{_f(budget['max_migration_cost'], '.4g')}",
        f"  load distance {_f(ld['before'])} -> {_f(ld['after'])} (lower bound "
        f"{_f(ld['lower_bound'])}); collocation factor "
        f"{_f(r['collocation_factor']['before'], '.1f')}% -> "
        f"{_f(r['collocation_factor']['after'], '.1f')}%",
        f"  {r['migrations']} migration(s), cost {_f(r['migration_cost'], '.4g')}, from "
        + ("the initial allocation" if r["base_version"] in (None, "None")
           else f"assignment v{r['base_version']}"),
    ]
    if r.get("determinism"):  # placement/determinism.py: a clock-cut plan warns in capitals
        lines.append(f"  {alarm(r['determinism']) or 'reproducible: ' + r['determinism']}")
    h = r.get("herding")
    if h:
        lines.append(
            f"  stream traffic {_f(h['stream_traffic']['before'], '.4g')} -> "
            f"{_f(h['stream_traffic']['after'], '.4g')} (lower bound "
            f"{_f(h['traffic_lower_bound']['after'], '.4g')}); replication factor "
            f"{_f(h['replication_factor']['before'])} -> {_f(h['replication_factor']['after'])};"
            f" balance {_f(h['balance']['before'])} -> {_f(h['balance']['after'])}")
    lines += [f"    {m['keygroup']}: {m['from']} -> {m['to']} (load {_f(m['load_pct'], '.2f')}%, "
              f"state {_f(m['state_bytes'], '.0f')} B) because {m['reason']}" for m in r["moves"]]
    if r["scaling"]:
        lines.append(f"  scaling: {r['scaling']['decision']}: {r['scaling']['reason']}")
    if r.get("resilience"):
        lines.append("  resilience (before -> after): " + ", ".join(
            f"{name} {_f(v['before'])} -> {_f(v['after'])}"
            for name, v in r["resilience"].items()))
    if r.get("oscillations"):
        o = r["oscillations"]
        lines.append(f"  oscillations (units moved back onto a node they left, in the window): "
                     f"{_f(o['before'], '.0f')} -> {_f(o['after'], '.0f')} with this plan")
    lines += execution_lines(r)
    v = r["validation"]
    if v is None:
        lines.append("  validation: no report logged with this run")
    else:
        lines.append(f"  validation: {'passed' if v['success'] else 'FAILED'}, {v['failures']} "
                     f"failed expectation(s), key groups checked against "
                     f"{v['expected_keygroups_from']}")
        lines += [f"    failed: {f}" for f in v["failed"]]
    versions = ", ".join(f"{t} v{n}" for t, n in r["delta_versions"].items())
    lines.append(f"  Delta versions: {versions or 'none recorded'}")
    a = r["airflow"]
    lines.append("  Airflow: " + (
        f"dag {a.get('dag_id')}, run {a.get('run_id')}, try {a.get('try_number', '?')}"
        + (f", {a['url']}" if a.get("url") else "") if a else "not run by Airflow (manual cycle)"))
    ap = r.get("approval")
    if ap:
        from schemas.approval import Decision

        lines.append(f"  approval: {Decision(ap['outcome'], ap['reason'], ap['by'], ap['at']).shown()}")
    p = r["published"]
    if p:
        lines.append(f"  published: assignment v{p['assignment_version']} ({p['manifest']})")
    elif r["publish_status"] == PlanStatus.HISTORICAL:
        lines.append("  published: no, historical (a later period was already published; "
                     "LATEST was not moved back)")
    elif r["publish_status"] in REFUSED_AT_APPROVAL:
        lines.append(f"  published: no, {r['publish_status'].replace('_', ' ')} at approval "
                     "(never published; planning the period again asks again)")
    elif r["publish_status"] == PlanStatus.NOT_PUBLISHED and r.get("published_as"):
        s = r["published_as"]
        lines.append(f"  published: no, an attempt made beside the period's published plan "
                     f"{s['plan_id']} (v{s['assignment_version']}); it is never published")
    else:
        lines.append("  published: not (yet) published")
    lines += [f"  other attempt of this period: plan {a['plan_id']}, MLflow run {a['run_id']}, "
              f"{a['status'].replace('_', ' ')}, {a['migrations']} migration(s), load distance "
              f"after {_f(a['load_distance_after'])} (`--plan-id {a['plan_id']}` audits it)"
              for a in r.get("other_attempts", ())]
    lines += own_version_lines(r)
    w = r.get("whatif")
    if w is not None:
        lines += _whatif_lines(w)
    k = r.get("keygroup")
    if k:
        head = (f"  key group {k['keygroup']} ({k['operator']}, load {_f(k['load_pct'], '.2f')}%,"
                f" state {_f(k['state_bytes'], '.0f')} B): ")
        lines.append(head + (f"ARRIVED, placed on {k['to']}: {k['reason']}" if k.get("arrived")
                             else f"MOVED {k['from']} -> {k['to']} because {k['reason']}"
                             if k["moved"] else f"stayed on {k['from']}; {k['reason']}"))
    return "\n".join(lines)


def _whatif_lines(whatif: dict[str, Any]) -> list[str]:
    """The what-if comparison as in the run's description (jobs/whatif/report.py)."""
    from jobs.whatif.report import text_table

    rows = whatif["rows"]
    if not rows:
        return [f"  what-if: {whatif['status']} (no comparison logged with this run: shadows "
                "run after publish; `reconf whatif` runs them by hand)"]
    before = rows[0].get("load_distance_before") or "n/a"
    return [f"  what-if: other strategies on the same state, same budget (load distance before "
            f"{_f(float(before)) if before != 'n/a' else before}):", *text_table(rows, "    ")]
