"""What a cycle's MLflow run shows so that an operator can audit a plan from the UI alone.

An operator asks "why did job X move key group 17 at 10:05?". The plan itself does not say why
(a MILP only returns an assignment), so the reasons are derived here, at plan time, from the
same `ClusterState` the strategy saw, and stored with the run: per move, in the words and the
number of the strategy's family (placement/reasons.py: traffic saved, WAN cost saved,
feasible-set ratio gained, utilisation band left, pair collocated, load relieved; node drained
and scale out whatever the family), with the source and target node loads and the share of
the key group's traffic that becomes local. `reconf audit` reads them back from MLflow and
never recomputes them.

Also here: the per-key-group and per-node tables, the Airflow provenance tags (from the
`AIRFLOW_CTX_*` variables Airflow exports to every task), and the run description
(`mlflow.note.content`, shown on the run page) rendered from the run's own tags and metrics.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from jobs.whatif.report import markdown_table
from placement.determinism import alarm
from placement.metrics import mean_load, node_loads
from placement.model import ClusterState, Plan
from placement.reasons import explain, partners_of
from schemas.attempts import PlanStatus
from schemas.headline import headline, objective_for
from schemas.tracking import Tag, delta_versions, strip_prefix

__all__ = [
    "KEYGROUP_COLUMNS",
    "MOVE_COLUMNS",
    "NODE_COLUMNS",
    "NodeLoads",
    "airflow_tags",
    "explain_moves",
    "keygroup_rows",
    "node_rows",
    "note_markdown",
    "summary_line",
    "to_csv",
]

# Who/where/why first: the MLflow UI's CSV preview shows the leftmost columns.
MOVE_COLUMNS = ("keygroup", "src_node", "dst_node", "reason_codes", "gain", "load_pct",
                "state_bytes", "cost", "reason", "operator", "src_load_before", "src_load_after",
                "dst_load_before", "dst_load_after", "mean_load", "local_traffic_before_pct",
                "local_traffic_after_pct")
KEYGROUP_COLUMNS = ("keygroup", "operator", "load_pct", "state_bytes", "node_before",
                    "node_after", "moved")
NODE_COLUMNS = ("node", "capacity", "marked_for_removal", "load_before", "load_after", "role")
AIRFLOW_TAG = Tag.AIRFLOW_PREFIX
NOTE_MOVES = 25  # moves listed in the run description; moves.csv has them all
#: MLflow keeps a tag value (the description is the tag `mlflow.note.content`) up to this many
#: characters (mlflow.utils.validation.MAX_TAG_VAL_LENGTH); a longer one is refused or cut
NOTE_LIMIT = 8000
_CUT = ("\n\n… the rest is cut to MLflow's description limit: every row is in "
        "`whatif/comparison.csv`, every move in `moves.csv`.")


def _partners(state: ClusterState, wanted: set[str]) -> dict[str, dict[str, float]]:
    """kg -> partner -> out(kg, p) + out(p, kg), for the moved key groups (`wanted`): picked on
    the columns, only the pairs touching them walked (placement/reasons.py `partners_of`)."""
    return partners_of(state, wanted)


def _local_pct(partners: Mapping[str, float], where: Mapping[str, str], node: str) -> float:
    total = sum(partners.values())
    local = sum(rate for p, rate in partners.items() if where.get(p) == node)
    return 100.0 * local / total if total > 0 else 0.0


@dataclass(frozen=True)
class NodeLoads:
    """Each node's load (% of the reference node) before and after a plan: computed once while a
    plan is recorded (`of`) and shared by moves.csv, nodes.csv and the load chart."""

    before: Mapping[str, float]
    after: Mapping[str, float]

    @classmethod
    def of(cls, state: ClusterState, plan: Plan) -> NodeLoads:
        return cls(node_loads(state, state.assignment), node_loads(state, plan.assignment))


def explain_moves(state: ClusterState, plan: Plan, loads: NodeLoads | None = None,
                  params: Any = None) -> list[dict[str, Any]]:
    """One row per move (MOVE_COLUMNS): the numbers the planner saw and why the move helps, in
    its family's words and number (placement/reasons.py: `gain` is what the move is worth in
    the in-force objective; `params` what the family evaluates with, e.g. SPRAWL's)."""
    loads = loads or NodeLoads.of(state, plan)
    before, after = loads.before, loads.after
    mean = mean_load(state)
    partners = _partners(state, {move.keygroup for move in plan.moves})
    keygroups = {k.id: k for k in state.keygroups}
    rows = []
    for move, reasons in zip(plan.moves, explain(state, plan, params, (before, after)),
                             strict=True):
        kg = keygroups[move.keygroup]
        src, dst = move.src, move.dst
        mine = partners.get(kg.id, {})
        gain = reasons[-1].value  # the family's own reason comes last
        rows.append({
            "keygroup": kg.id, "operator": kg.operator, "src_node": src, "dst_node": dst,
            "load_pct": kg.load, "state_bytes": kg.state_bytes, "cost": move.cost,
            "src_load_before": before[src], "src_load_after": after[src],
            "dst_load_before": before.get(dst, 0.0), "dst_load_after": after.get(dst, 0.0),
            "mean_load": mean,
            "local_traffic_before_pct": _local_pct(mine, state.assignment, src),
            "local_traffic_after_pct": _local_pct(mine, plan.assignment, dst),
            "reason_codes": ";".join(r.code for r in reasons),
            "gain": "" if gain is None else gain,
            "reason": "; ".join(r.text for r in reasons),
        })
    return rows


def keygroup_rows(state: ClusterState, plan: Plan) -> list[dict[str, Any]]:
    """Every key group: its load, state, node before and after (also the ones that stayed)."""
    return [{"keygroup": k.id, "operator": k.operator, "load_pct": k.load,
             "state_bytes": k.state_bytes, "node_before": state.assignment[k.id],
             "node_after": plan.assignment[k.id],
             "moved": state.assignment[k.id] != plan.assignment[k.id]}
            for k in state.keygroups]


def node_rows(state: ClusterState, plan: Plan, loads: NodeLoads | None = None
              ) -> list[dict[str, Any]]:
    loads = loads or NodeLoads.of(state, plan)
    before, after = loads.before, loads.after
    roles = {**{n: "marked" for n in plan.scaling.nodes_to_mark},
             **{n: "added" for n in plan.scaling.nodes_to_add},
             **{n: "terminated" for n in plan.scaling.nodes_to_terminate}}
    return [{"node": n.id, "capacity": n.capacity, "marked_for_removal": n.marked_for_removal,
             "load_before": before[n.id], "load_after": after[n.id],
             "role": roles.get(n.id, "")} for n in state.nodes]


def to_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row[c]) for c in columns])
    return out.getvalue()


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def airflow_url(base: str, dag_id: str, run_id: str) -> str:
    """The Airflow 3 UI page of one DAG run (as airflow.utils.helpers builds it)."""
    return f"{base.rstrip('/')}/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"


def airflow_tags(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """`reconf.airflow.*` tags from the context Airflow exports to a running task; {} outside.

    The UI link needs the Airflow UI's address: `RECONF_AIRFLOW_URL`, else Airflow's own
    `AIRFLOW__API__BASE_URL`; without either, no link tag is written.
    """
    env = os.environ if environ is None else environ
    dag_id, run_id = env.get("AIRFLOW_CTX_DAG_ID"), env.get("AIRFLOW_CTX_DAG_RUN_ID")
    if not dag_id or not run_id:
        return {}
    tags = {f"{AIRFLOW_TAG}dag_id": dag_id, f"{AIRFLOW_TAG}run_id": run_id}
    for key, var in (("try_number", "AIRFLOW_CTX_TRY_NUMBER"), ("task_id", "AIRFLOW_CTX_TASK_ID"),
                     ("logical_date", "AIRFLOW_CTX_LOGICAL_DATE")):
        if env.get(var):
            tags[f"{AIRFLOW_TAG}{key}"] = env[var]
    base = env.get("RECONF_AIRFLOW_URL") or env.get("AIRFLOW__API__BASE_URL")
    if base:
        tags[f"{AIRFLOW_TAG}url"] = airflow_url(base, dag_id, run_id)
    return tags


def _bytes(value: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def _num(metrics: Mapping[str, float], key: str, fmt: str = ".3f") -> str:
    value = metrics.get(key)
    return "n/a" if value is None else format(value, fmt)


def _delta_versions(tags: Mapping[str, str]) -> dict[str, str]:
    return dict(sorted(delta_versions(dict(tags)).items()))


def summary_line(tags: Mapping[str, str], metrics: Mapping[str, float], migrations: int) -> str:
    """What an operator reads first, on one line: the strategy's own objective before -> after
    (with its bound; LD second: schemas/headline.py), migrations, status."""
    published = tags.get(Tag.PUBLISH_STATUS)
    version = tags.get(Tag.ASSIGNMENT_VERSION)
    status = ("dry run" if tags.get(Tag.DRY_RUN) == "true"
              else f"published v{version}" if published == PlanStatus.PUBLISHED and version
              else f"not published (an attempt beside v{tags[Tag.PUBLISHED_VERSION]})"
              if published == PlanStatus.NOT_PUBLISHED and tags.get(Tag.PUBLISHED_VERSION)
              else published or "planned, not published yet")
    strategy = strip_prefix(dict(tags), Tag.PARAM_PREFIX).get("strategy")
    loud = alarm(tags.get(Tag.DETERMINISM))  # a plan the clock cut: said on the first line
    return (f"**{headline(strategy, metrics, arrow='→')}** · **{migrations} migration(s)** · "
            f"**{status}** · solver {tags.get(Tag.SOLVER_STATUS, '?')}"
            + (f" · **{loud}**" if loud else ""))


def note_markdown(run_name: str, tags: Mapping[str, str], metrics: Mapping[str, float],
                  moves: Sequence[Mapping[str, str]],
                  whatif: Sequence[Mapping[str, str]] = ()) -> str:
    """The run description, always within MLflow's `NOTE_LIMIT`: with `NOTE_MOVES` moves
    listed, else five, else cut on a line with a pointer to the CSVs (the first line, the
    summary, always stays)."""
    for listed in (NOTE_MOVES, 5):
        text = _note(run_name, tags, metrics, moves, whatif, listed)
        if len(text) <= NOTE_LIMIT:
            return text
    keep = text[:NOTE_LIMIT - len(_CUT)]
    return keep[:keep.rfind("\n")] + _CUT


def _note(run_name: str, tags: Mapping[str, str], metrics: Mapping[str, float],
          moves: Sequence[Mapping[str, str]], whatif: Sequence[Mapping[str, str]],
          listed: int) -> str:
    """The run description: the plan in prose, from the run's own tags, metrics and moves; its
    first line the summary (the UI folds the rest), the what-if comparison last once it ran."""
    p = strip_prefix(dict(tags), Tag.PARAM_PREFIX)
    strategy = p.get("strategy", "?")
    job, period = tags.get(Tag.JOB_ID, "?"), tags.get(Tag.PERIOD_END, run_name)
    lines = [
        summary_line(tags, metrics, len(moves)),
        "",
        f"## Plan of {job} for the period ending {period}",
        f"Strategy **{p.get('strategy', '?')}** (solver {tags.get(Tag.SOLVER_STATUS, '?')}, "
        f"{_num(metrics, 'solve_time_s', '.2f')} s); budget: max migrations "
        f"{p.get('max_migrations', '?')}, max migration cost {p.get('max_migration_cost', '?')}.",
        f"Load distance **{_num(metrics, 'load_distance_before')} -> "
        f"{_num(metrics, 'load_distance_after')}** (lower bound "
        f"{_num(metrics, 'lower_bound')}); max node load "
        f"{_num(metrics, 'max_node_load_before', '.1f')}% -> "
        f"{_num(metrics, 'max_node_load_after', '.1f')}%; collocation factor "
        f"{_num(metrics, 'collocation_factor_before', '.1f')}% -> "
        f"{_num(metrics, 'collocation_factor_after', '.1f')}%.",
        f"**{len(moves)} migration(s)** (cost {_num(metrics, 'migration_cost', '.4g')}) from "
        f"{'assignment v' + tags[Tag.BASE_VERSION] if tags.get(Tag.BASE_VERSION, 'None') != 'None' else 'the initial allocation'}"
        "; every move with its numbers is in `moves.csv`, every key group in `keygroups.csv`.",
    ]
    if moves:
        lines += ["", "| key group | from | to | load % | state | why |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {m['keygroup']} | {m['src_node']} | {m['dst_node']} | "
                  f"{float(m['load_pct']):.2f} | {_bytes(float(m['state_bytes']))} | "
                  f"{m['reason']} |" for m in moves[:listed]]
        if len(moves) > listed:
            lines.append(f"\n... and {len(moves) - listed} more in moves.csv")
    lines.append("")
    if Tag.SCALING_DECISION in tags:
        lines.append(f"**Scaling**: {tags[Tag.SCALING_DECISION]}: "
                     f"{tags.get(Tag.SCALING_REASON, '')}")
    if Tag.VALIDATION_SUCCESS in tags:
        ok = tags[Tag.VALIDATION_SUCCESS] == "true"
        lines.append(f"**Validation**: {'passed' if ok else 'FAILED'} "
                     f"({tags.get(Tag.VALIDATION_FAILURES, '?')} failed expectation(s); "
                     f"key groups checked against {tags.get(Tag.VALIDATION_EXPECTED_FROM, '?')}); "
                     "report in `validation.json`.")
    versions = _delta_versions(tags)
    if versions:
        lines.append("**Delta versions**: " + ", ".join(f"{t} v{v}" for t, v in versions.items())
                     + " (time travel: `versionAsOf`).")
    if f"{AIRFLOW_TAG}dag_id" in tags:
        run = (f"DAG `{tags[AIRFLOW_TAG + 'dag_id']}`, run `{tags.get(AIRFLOW_TAG + 'run_id')}`, "
               f"try {tags.get(AIRFLOW_TAG + 'try_number', '?')}")
        url = tags.get(f"{AIRFLOW_TAG}url")
        lines.append(f"**Airflow**: {run}" + (f" ([open]({url}))" if url else "") + ".")
    else:
        lines.append("**Airflow**: not run by Airflow (a manual or CLI cycle).")
    if Tag.ASSIGNMENT_VERSION in tags:
        lines.append(f"**Published** as assignment version {tags[Tag.ASSIGNMENT_VERSION]} "
                     f"({tags.get(Tag.MANIFEST, '')}).")
    elif tags.get(Tag.PUBLISH_STATUS) == PlanStatus.NOT_PUBLISHED:
        lines.append(f"**Not published**: plan {tags.get(Tag.PLAN_ID, '?')} is an attempt "
                     f"beside the period's published plan {tags.get(Tag.PUBLISHED_PLAN_ID, '?')}"
                     f" (v{tags.get(Tag.PUBLISHED_VERSION, '?')}), whose record never changes.")
    if whatif:
        lines += ["", "## What-if: other strategies on the same state",
                  f"Same state, budget and time limit, after publish (dry runs; each a child "
                  f"run); ranked by {strategy}'s objective, {objective_for(strategy).label} "
                  f"({objective_for(strategy).direction}), each plan scored in every objective "
                  f"the period's facets allow; `own bound` is the bound a strategy reports on "
                  f"its own objective (the MILP's on load distance, SPRAWL's on its cost). "
                  f"Load distance before: "
                  f"{_num(metrics, 'load_distance_before')}. "
                  "Chart: `whatif/comparison.png`; rows: `whatif/comparison.csv`.", ""]
        lines += markdown_table(whatif)
    return "\n".join(lines)
