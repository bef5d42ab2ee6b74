"""The communication facet's top-k part: per unit, the total of the pairs it did not land.

A large job's runtime may land, per unit, only its heaviest outgoing pairs (edges/, aggregated
into comm_stats) plus ``comm_totals/``: the tuples of ALL its outgoing pairs in the period
(schemas/landing.py). So out() stops growing as units² while every metric of collocation stays
honest: the pairs a unit dropped are `tuples − Σ its comm_stats tuples`, carried into the
planner's state as `CommEdges.dropped` (placement/comm.py) and counted there as traffic that
crosses nodes (docs/algorithms.md, "Communication: heaviest pairs"). Three steps:

- **collect** copies the rows into Delta ``comm_totals`` as they are (jobs/facets/subscriptions.py
  `FACET_TABLES`, like the other facet tables);
- **validate** (`validate_comm_of`): GE suite comm_totals.json on the rows with ``kept_tuples``
  (Σ the unit's comm_stats tuples) and ``dropped_tuples`` (the declared total minus them) derived
  here: one row per running unit, totals >= 0, landed pairs at most the total; a failure names
  the rows and stops the cycle before planning;
- **plan** (`read_comm_totals`, `attach_comm`): the state's communication gains each unit's
  dropped rate, in comm_stats' unit (tuples × 1000 / the period's milliseconds, as collect
  computes ``tuples_per_s``).

A period without the dataset (every small job, and any job landing all its pairs) is planned on
comm_stats alone, as before.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from jobs.facets.base import Assembly, Checked
from jobs.validate.suites import ValidationReport
from placement.comm import CommEdges
from schemas.tables import COMM_STATS, COMM_TOTALS

if TYPE_CHECKING:
    import pandas as pd

    from jobs.context import StageContext

__all__ = ["attach_comm", "dropped_frame", "read_comm_totals", "validate_comm_of"]


def _wrote(ctx: StageContext) -> bool:
    return ctx.marker is not None and ctx.marker.wrote(COMM_TOTALS.name)


def dropped_frame(totals: pd.DataFrame, edges: pd.DataFrame) -> pd.DataFrame:
    """`totals` (src_keygroup, tuples, ...) with ``kept_tuples`` (Σ the unit's landed pairs'
    tuples, self-pairs excluded: they are not inter-unit traffic) and ``dropped_tuples``."""
    import pandas as pd

    inter = edges[edges["src_keygroup"] != edges["dst_keygroup"]] if len(edges) else edges
    kept = (inter.groupby("src_keygroup")["tuples"].sum() if len(inter)
            else pd.Series(dtype="int64"))
    out = totals.copy()
    out["kept_tuples"] = out["src_keygroup"].map(kept).fillna(0).astype("int64")
    out["dropped_tuples"] = out["tuples"] - out["kept_tuples"]
    return out


def validate_comm_of(ctx: StageContext, checked: Checked, report: ValidationReport
                     ) -> ValidationReport:
    """`report` with the pair totals' verdict added, for a period whose collect wrote them."""
    if not _wrote(ctx):
        return report
    from jobs.lake import concurrently
    from jobs.validate.suites import validate_comm_totals

    lake, job_id, end = ctx.lake, ctx.job_id, ctx.end
    totals, edges = concurrently(
        lambda: lake.period_frame(COMM_TOTALS, job_id, end),
        lambda: lake.period_frame(COMM_STATS, job_id, end,
                                  ["src_keygroup", "dst_keygroup", "tuples"]))
    verdict = validate_comm_totals(dropped_frame(totals, edges), running_units=checked.running)
    return ValidationReport(report.success and verdict.success,
                            report.failures + verdict.failures)


def read_comm_totals(ctx: StageContext) -> tuple[pd.DataFrame, pd.DataFrame, float] | None:
    """(comm_totals, comm_stats' src/dst/tuples, the period's milliseconds) for a period whose
    collect wrote the totals; None otherwise, without reading a table."""
    if not _wrote(ctx):
        return None
    from jobs.lake import concurrently

    lake, job_id, end = ctx.lake, ctx.job_id, ctx.end
    totals, edges = concurrently(
        lambda: lake.period_frame(COMM_TOTALS, job_id, end),
        lambda: lake.period_frame(COMM_STATS, job_id, end,
                                  ["src_keygroup", "dst_keygroup", "tuples"]))
    return totals, edges, ctx.job.spl.total_seconds() * 1000.0


def with_dropped(comm: CommEdges, frame: pd.DataFrame, period_ms: float) -> CommEdges:
    """`comm` with each unit's dropped rate (``dropped_tuples`` of `dropped_frame`) in
    tuples/s; a unit absent from the communication joins its vocabulary."""
    import numpy as np

    src, dst, rate = comm.columns()
    left = frame[frame["dropped_tuples"] > 0]
    return CommEdges.from_columns(
        src, dst, rate,
        dropped=(left["src_keygroup"].astype(str).to_numpy(),
                 left["dropped_tuples"].to_numpy(np.float64) * 1000.0 / period_ms))


def attach_comm(assembly: Assembly, rows: Any) -> Assembly:
    """The state's communication with the pairs each unit dropped (module doc)."""
    if rows is None:
        return assembly
    totals, edges, period_ms = rows
    state = assembly.state
    comm = with_dropped(state.comm, dropped_frame(totals, edges), period_ms)
    return replace(assembly, state=replace(state, edges=comm))
