"""The what-if comparison of one period: one row per strategy, as CSV, markdown and a chart.

The first row is the plan in force (the published one); the others are the shadow plans made on
the same state with the same budget (jobs/whatif/shadow.py). The same rows are the period run's
`whatif/comparison.csv`, the table in its description, `reconf audit --compare`, and the input
of `reconf compare` across periods, so every view shows the same numbers.

Columns: the core metrics every plan has, then one `<name>_after` column per facet metric any
row carries (e.g. stream_traffic, replication_factor, feasible_set_ratio: Plan.facet_metrics),
then wall time, status and message. A row whose strategy did not plan has empty metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from placement.model import Plan

__all__ = ["CORE_COLUMNS", "TAIL_COLUMNS", "columns_of", "comparison_row", "markdown_table",
           "num", "plot_comparison", "text_table"]

CORE_COLUMNS = ("strategy", "role", "status", "load_distance_before", "load_distance_after",
                "lower_bound", "migrations", "migration_cost", "collocation_factor_after")
TAIL_COLUMNS = ("wall_s", "message")
_HEADS = {"strategy": "strategy", "role": "role", "status": "status",
          "load_distance_before": "LD before", "load_distance_after": "LD after",
          "lower_bound": "lower bound", "migrations": "migrations",
          "migration_cost": "migr. cost", "collocation_factor_after": "colloc. %",
          "wall_s": "wall s", "message": "message"}


def comparison_row(strategy: str, role: str, status: str, plan: Plan | None, wall_s: float,
                   message: str = "") -> dict[str, Any]:
    """One row: the plan's metrics (empty when the strategy did not plan) and its outcome."""
    row: dict[str, Any] = {c: None for c in CORE_COLUMNS}
    row.update(strategy=strategy, role=role, status=status)
    if plan is not None:
        row.update(load_distance_before=plan.before.load_distance,
                   load_distance_after=plan.after.load_distance, lower_bound=plan.lower_bound,
                   migrations=plan.migrations, migration_cost=plan.migration_cost,
                   collocation_factor_after=plan.after.collocation_factor)
        row.update({f"{name}_after": value for name, value in sorted(plan.facet_metrics.items())})
    row.update(wall_s=wall_s, message=message)
    return row


def columns_of(rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The core columns, the facet columns any row has (sorted), then wall time and message."""
    known = set(CORE_COLUMNS) | set(TAIL_COLUMNS)
    facets = sorted({k for row in rows for k in row if k not in known})
    return (*CORE_COLUMNS, *facets, *TAIL_COLUMNS)


def num(value: Any) -> float | None:
    """A cell as a number: None for an empty or missing one (CSV cells are strings)."""
    if value is None or value == "" or value == "None":
        return None
    return float(value)


def _cell(column: str, value: Any) -> str:
    number = None if column in ("strategy", "role", "status", "message") else num(value)
    if number is None:
        text = "" if value in (None, "", "None") else str(value)
        return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS - 1] + "…"
    if column == "migrations":
        return f"{number:.0f}"
    if column in ("collocation_factor_after", "wall_s"):
        return f"{number:.1f}" if column != "wall_s" else f"{number:.2f}"
    return f"{number:.4g}" if column == "migration_cost" else f"{number:.3f}"


MESSAGE_CHARS = 100  # a message is cut in the tables (the CSV and the child run keep it all)


def _head(column: str) -> str:
    return _HEADS.get(column, column.removesuffix("_after").replace("_", " "))


def markdown_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The rows as a markdown table (the run description); LD before is said once, above."""
    cols = [c for c in columns_of(rows) if c not in ("load_distance_before", "role")]
    lines = ["| " + " | ".join(_head(c) for c in cols) + " |",
             "|" + "---|" * len(cols)]
    for row in rows:
        cells = [_cell(c, row.get(c)).replace("|", "/") for c in cols]
        if row.get("role") == "in force":
            cells[0] = f"**{cells[0]}** (in force)"
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def text_table(rows: Sequence[Mapping[str, Any]], indent: str = "  ") -> list[str]:
    """The rows as aligned text columns (the terminal); the message last, unpadded."""
    cols = [c for c in columns_of(rows) if c != "load_distance_before"]
    table = [[_head(c) for c in cols]]
    table += [[_cell(c, row.get(c)) for c in cols] for row in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(cols) - 1)]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(r[:-1], widths, strict=True))
            + ("  " + r[-1] if r[-1] else "") for r in table]


def plot_comparison(rows: Sequence[Mapping[str, Any]], title: str, path: Path) -> None:
    """One chart: each strategy's load distance after (bars; the plan in force darker), its
    migrations above the bar, the lower bound dashed; a strategy that did not plan is named
    with its status instead of a bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [str(r["strategy"]) for r in rows]
    lds = [num(r.get("load_distance_after")) for r in rows]
    before = next((b for r in rows if (b := num(r.get("load_distance_before"))) is not None), None)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.8 * len(rows) + 2), 3.8), dpi=110)
    colors = ["tab:blue" if r.get("role") == "in force" else "tab:gray" for r in rows]
    planned = [v for v in lds if v is not None]
    # an outlier (e.g. random moves) must not flatten the rest: clip at 2.5x the LD before
    top = max([*planned, before or 0.0, 1e-9])
    if before and top > 2.5 * before:
        top = 2.5 * before
    ax.bar(range(len(rows)), [min(v or 0.0, top) for v in lds], color=colors)
    for i, (row, ld) in enumerate(zip(rows, lds, strict=True)):
        label = (f"{_cell('migrations', row.get('migrations'))} mig." if ld is not None
                 else str(row.get("status", "")).replace("_", " "))
        if ld is not None and ld > top:
            label = f"{ld:.3g} (clipped)\n{label}"
        ax.text(i, min(ld or 0.0, top) + 0.02 * top, label, ha="center", va="bottom", fontsize=8)
    bounds = [b for r in rows if (b := num(r.get("lower_bound"))) is not None]
    if bounds:
        ax.axhline(max(bounds), color="tab:green", linestyle="--", linewidth=1,
                   label=f"lower bound {max(bounds):.3f}")
    if before is not None:
        ax.axhline(before, color="tab:red", linestyle=":", linewidth=1,
                   label=f"before {before:.3f}")
    ax.set_ylim(0, 1.15 * top)
    if bounds or before is not None:
        ax.legend(fontsize=8, loc="upper left")
    ax.set_xticks(range(len(rows)), names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("load distance after")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
