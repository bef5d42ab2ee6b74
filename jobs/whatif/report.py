"""The what-if comparison of one period: one row per strategy, as CSV, markdown and a chart.

The first row is the plan in force (the published one); the others are the shadow plans made on
the same state with the same budget (jobs/whatif/shadow.py). The same rows are the period run's
`whatif/comparison.csv`, the table in its description, `reconf audit --compare`, and the input
of `reconf compare` across periods, so every view shows the same numbers.

Columns: the core metrics every plan has, the rank by the in-force strategy's objective, then
one `<name>_after` column per scalar facet metric any row carries (e.g. stream_traffic,
feasible_set_ratio: Plan.facet_metrics) and per objective the period's facets allow, evaluated
for every row's plan (placement/objectives.py: SPRAWL's cost and Herding's traffic of the MILP's
plan too), then wall time, status and message. A per-node metric (`<name>/<node>`, e.g. CG's
`utilisation_pct/<node>`) never becomes a column: it goes to `whatif/per_node.csv`
(`per_node_rows`), so the table keeps its width at any cluster size. A row whose strategy did
not plan has empty metrics. The description's table shows the objectives, not every facet
metric (`markdown_table`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jobs.tracking.ui_links import CLASSIC
from placement.model import ClusterState, Plan
from schemas.headline import objective_for
from schemas.strategies import OBJECTIVES

__all__ = ["CORE_COLUMNS", "TAIL_COLUMNS", "best_by_objective", "columns_of", "comparison_row",
           "markdown_table", "num", "per_node_rows", "rank_rows",
           "text_table"]

CORE_COLUMNS = ("strategy", "role", "status", "rank", "load_distance_before",
                "load_distance_after", "lower_bound", "migrations", "migration_cost",
                "collocation_factor_after")
#: the objectives' columns, in the order an operator reads them
OBJECTIVE_COLUMNS = tuple(f"{o.name}_after" for o in OBJECTIVES)
#: `run_id`: a shadow's child run, linked from its row of the run description
TAIL_COLUMNS = ("wall_s", "run_id", "message")
_HEADS = {"strategy": "strategy", "role": "role", "status": "status",
          "load_distance_before": "LD before", "load_distance_after": "LD after",
          # each strategy's bound on its own objective (the MILP's on LD, SPRAWL's on its cost)
          "lower_bound": "own bound", "migrations": "migrations",
          "migration_cost": "migr. cost", "collocation_factor_after": "colloc. %",
          "wall_s": "wall s", "message": "message"}


def objective_values(state: ClusterState, plan: Plan,
                     params: Mapping[str, Any] | None = None) -> dict[str, float]:
    """Every objective the state's facets allow, for `plan` (placement/objectives.py); one
    that cannot be evaluated (a SPRAWL query naming no unit) is left out, never raised: the
    what-if must not fail the cycle."""
    from placement.objectives import EVALUATORS, objectives_for

    out: dict[str, float] = {}
    for objective in objectives_for(state):
        try:
            value = EVALUATORS[objective.name](state, plan.assignment,
                                               (params or {}).get(objective.name))
        except Exception:  # a shadow's extra column, never the cycle's failure
            continue
        if value is not None:
            out[objective.name] = float(value)
    return out


def comparison_row(strategy: str, role: str, status: str, plan: Plan | None, wall_s: float,
                   message: str = "", objectives: Mapping[str, float] | None = None
                   ) -> dict[str, Any]:
    """One row: the plan's metrics (empty when the strategy did not plan), every objective's
    value for its plan (`objectives`, evaluated on the period's state), and its outcome; the
    plan's own facet metrics win over the evaluated ones (they are equal: the family's
    function computes both) and per-node metrics are left to `per_node_rows`."""
    row: dict[str, Any] = {c: None for c in CORE_COLUMNS}
    row.update(strategy=strategy, role=role, status=status)
    if plan is not None:
        row.update({f"{name}_after": value for name, value in sorted((objectives or {}).items())})
        row.update(load_distance_before=plan.before.load_distance,
                   load_distance_after=plan.after.load_distance, lower_bound=plan.lower_bound,
                   migrations=plan.migrations, migration_cost=plan.migration_cost,
                   collocation_factor_after=plan.after.collocation_factor)
        row.update({f"{name}_after": value for name, value in sorted(plan.facet_metrics.items())
                    if "/" not in name})
    row.update(wall_s=wall_s, message=message)
    return row


def per_node_rows(outcomes: Sequence[tuple[str, Plan | None]]) -> list[dict[str, Any]]:
    """The per-node facet metrics (`<metric>/<node>`) of every plan, one row per value: the
    `whatif/per_node.csv` artifact, instead of three columns per node in the table."""
    out = []
    for strategy, plan in outcomes:
        if plan is None:
            continue
        for name, value in sorted(plan.facet_metrics.items()):
            metric, sep, node = name.partition("/")
            if sep:
                out.append({"strategy": strategy, "metric": metric, "node": node,
                            "value": value})
    return out


def rank_rows(rows: list[dict[str, Any]], in_force: str) -> list[dict[str, Any]]:
    """The rows ranked by the in-force strategy's objective (its direction; fewer migrations
    break ties): `rank` set on every planned row, the plan in force first, the shadows in rank
    order, those without a value for the objective last."""
    objective = objective_for(in_force)
    column = f"{objective.name}_after"
    sign = 1.0 if objective.direction == "min" else -1.0

    def key(row: Mapping[str, Any]) -> tuple[float, float]:
        return sign * float(row[column]), float(row.get("migrations") or 0)

    valued = sorted((r for r in rows if num(r.get(column)) is not None), key=key)
    for place, row in enumerate(valued, start=1):
        row["rank"] = place
    head = [r for r in rows if r.get("role") == "in force"]
    rest = [r for r in valued if r.get("role") != "in force"]
    rest += [r for r in rows if r.get("role") != "in force" and r not in valued]
    return head + rest


def best_by_objective(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Per objective any row carries, the strategy whose plan is best in it (its direction;
    fewer migrations, then the name, break ties)."""
    best: dict[str, str] = {}
    for objective in OBJECTIVES:
        column = f"{objective.name}_after"
        sign = 1.0 if objective.direction == "min" else -1.0
        valued = [r for r in rows if num(r.get(column)) is not None]
        if valued:
            top = min(valued, key=lambda r: (sign * float(r[column]),
                                             float(r.get("migrations") or 0), str(r["strategy"])))
            best[objective.name] = str(top["strategy"])
    return best


def columns_of(rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The core columns, the facet columns any row has (sorted), then wall time and message."""
    known = set(CORE_COLUMNS) | set(TAIL_COLUMNS)
    facets = sorted({k for row in rows for k in row if k not in known})
    objectives = [c for c in OBJECTIVE_COLUMNS if c in facets and c not in CORE_COLUMNS]
    others = [c for c in facets if c not in objectives]
    return (*CORE_COLUMNS, *objectives, *others, *TAIL_COLUMNS)


def num(value: Any) -> float | None:
    """A cell as a number: None for an empty or missing one (CSV cells are strings)."""
    if value is None or value == "" or value == "None":
        return None
    return float(value)


def _cell(column: str, value: Any) -> str:
    text_columns = ("strategy", "role", "status", "message", "run_id")
    number = None if column in text_columns else num(value)
    if number is None:
        text = "" if value in (None, "", "None") else str(value)
        return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS - 1] + "…"
    if column in ("migrations", "rank"):
        return f"{number:.0f}"
    if column in ("collocation_factor_after", "wall_s"):
        return f"{number:.1f}" if column != "wall_s" else f"{number:.2f}"
    return f"{number:.4g}" if column == "migration_cost" else f"{number:.3f}"


#: the columns the description's and the terminal's tables show (the CSV has every column)
_SHOWN = frozenset({"strategy", "role", "status", "rank", "load_distance_after", "lower_bound",
                    "migrations", *OBJECTIVE_COLUMNS, "wall_s", "message"})
MESSAGE_CHARS = 100  # a message is cut in the tables (the CSV and the child run keep it all)


def _head(column: str) -> str:
    return _HEADS.get(column, column.removesuffix("_after").replace("_", " "))


def markdown_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The rows as a markdown table (the run description); LD before is said once, above.
    Only the objectives' columns of the facet metrics (the CSV has them all), so the table
    fits the run page at any cluster size; a shadow's name links to its child run."""
    cols = [c for c in columns_of(rows) if c in _SHOWN and c != "role"]
    lines = ["| " + " | ".join(_head(c) for c in cols) + " |",
             "|" + "---|" * len(cols)]
    for row in rows:
        cells = [_cell(c, row.get(c)).replace("|", "/") for c in cols]
        if row.get("role") == "in force":
            cells[0] = f"**{cells[0]}** (in force)"
        elif row.get("run_id"):  # the child run's page (MLflow's /runs/<id> route), classic
            cells[0] = f"[{cells[0]}](#/runs/{row['run_id']}?{CLASSIC})"
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def text_table(rows: Sequence[Mapping[str, Any]], indent: str = "  ") -> list[str]:
    """The rows as aligned text columns (the terminal), the same columns as the description's
    table (the objectives, not every facet metric); the message last, unpadded."""
    cols = [c for c in columns_of(rows) if c in _SHOWN]
    table = [[_head(c) for c in cols]]
    table += [[_cell(c, row.get(c)) for c in cols] for row in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(cols) - 1)]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(r[:-1], widths, strict=True))
            + ("  " + r[-1] if r[-1] else "") for r in table]
