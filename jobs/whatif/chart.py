"""The what-if chart: every strategy's plan in every objective the period allows, one panel each.

The what-if scores each plan in every objective the period's facets allow (jobs/whatif/report.py),
ranked by the in-force strategy's objective. The chart shows the same: its first panel is that
objective (the ranking's), then one panel per other objective any row has a value of, in the
order of `schemas.strategies.OBJECTIVES`, so an operator sees at a glance what each alternative
trades (e.g. the MILP shadow's lower load distance against its SPRAWL cost).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jobs.whatif.report import num
from schemas.headline import objective_for
from schemas.strategies import OBJECTIVES, Objective

__all__ = ["chart_objectives", "plot_comparison"]

#: an outlier (e.g. random moves) must not flatten the rest: bars clip at this times the LD before
_CLIP = 2.5


def chart_objectives(rows: Sequence[Mapping[str, Any]], in_force: str | None
                     ) -> tuple[Objective, ...]:
    """The chart's panels: the in-force strategy's objective, then every other objective some
    row has a value of (`<name>_after`)."""
    first = objective_for(in_force)
    others = tuple(o for o in OBJECTIVES if o.name != first.name
                   and any(num(r.get(f"{o.name}_after")) is not None for r in rows))
    return (first, *others)


def _panel(ax: Any, rows: Sequence[Mapping[str, Any]], objective: Objective,
           ranked: bool) -> None:
    """One objective's bars (the plan in force blue), migrations above each, a bar-less strategy
    named by its status; in the ranking's panel the in-force plan's lower bound (green dashed,
    where it certifies the objective); in the LD panel the LD before (red dotted)."""
    values = [num(r.get(f"{objective.name}_after")) for r in rows]
    finite = [v if v is not None and math.isfinite(v) else None for v in values]
    before = (next((b for r in rows if (b := num(r.get("load_distance_before"))) is not None),
                   None) if objective.name == "load_distance" else None)
    top = max([*(v for v in finite if v is not None), before or 0.0, 1e-9])
    if before and top > _CLIP * before:
        top = _CLIP * before
    colors = ["tab:blue" if r.get("role") == "in force" else "tab:gray" for r in rows]
    ax.bar(range(len(rows)), [min(v or 0.0, top) for v in finite], color=colors)
    for i, (row, value, raw) in enumerate(zip(rows, finite, values, strict=True)):
        migrations = num(row.get("migrations"))
        label = (f"{migrations:.0f} mig." if value is not None and migrations is not None
                 else "inf" if raw is not None and math.isinf(raw)
                 else str(row.get("status", "")).replace("_", " "))
        if value is not None and value > top:
            label = f"{value:.3g} (clipped)\n{label}"
        ax.text(i, min(value or 0.0, top) + 0.02 * top, label, ha="center", va="bottom",
                fontsize=7)
    bounds = [b for r in rows if r.get("role") == "in force"
              and (b := num(r.get("lower_bound"))) is not None
              and math.isfinite(b)] if ranked and objective.bound == "lower_bound" else []
    if bounds:
        ax.axhline(max(bounds), color="tab:green", linestyle="--", linewidth=1,
                   label=f"lower bound {max(bounds):.4g}")
    if before is not None:
        ax.axhline(before, color="tab:red", linestyle=":", linewidth=1,
                   label=f"before {before:.3f}")
    clipped = any(v is not None and v > top for v in finite)  # room for the two-line label
    ax.set_ylim(0, (1.35 if clipped else 1.15) * top)
    if bounds or before is not None:
        ax.legend(fontsize=7, loc="best")
    ax.set_ylabel(f"{objective.label}\n({objective.direction})", fontsize=8)
    if ranked:
        ax.set_title(f"ranked by {objective.label} ({objective.direction}), the plan in force's "
                     "objective", fontsize=8)


def plot_comparison(rows: Sequence[Mapping[str, Any]], title: str, path: Path,
                    in_force: str | None = None) -> tuple[Objective, ...]:
    """The chart at `path`: one panel per objective (`chart_objectives`), the strategies in the
    rows' order on a shared axis; the objectives it shows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    objectives = chart_objectives(rows, in_force)
    fig, axes = plt.subplots(len(objectives), 1, sharex=True, squeeze=False, dpi=110,
                             figsize=(max(6.0, 0.8 * len(rows) + 2), 1.2 + 2.4 * len(objectives)))
    for i, objective in enumerate(objectives):
        _panel(axes[i][0], rows, objective, ranked=i == 0)
    names = [str(r["strategy"]) for r in rows]
    axes[-1][0].set_xticks(range(len(rows)), names, rotation=30, ha="right", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return objectives
