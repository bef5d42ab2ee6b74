"""The load model of a job that declares its input streams (ROD, Xing et al. 2006 §2.2).

Three steps, each called with a line from its stage:

- **collect** (`fit_stage`): after the period's ``stream_stats`` and ``keygroup_stats`` are
  written, read the last K periods of both (K = ``[jobs.<id>.load_model] periods``) with Spark
  and fit, per unit, l_j ≥ 0 minimising ‖R·l_j − y_j‖ (NNLS, placement/rod/fit.py): R is the
  K' × d matrix of the declared streams' rates, y_j the unit's measured ``load_pct``. Only the
  periods where every running unit and every declared stream has a finite row (rates ≥ 0) are
  used (K' ≤ K), and only those within validate's bounds (schemas/limits.py: a period refused for
  a rate of 1e300 must not switch the fit off for the periods after it). Written to ``load_model`` (one row per unit and stream: the coefficient, the
  unit's relative residual, K'), replacing the period. Until the rates of K' periods span the d
  streams (rank d) nothing is fitted: the period's ``load_model`` is empty and the collect result
  says why.
- **validate** (`validate_streams_of`): GE suites stream_stats.json (one finite rate ≥ 0 per
  declared stream, no undeclared stream) and, when fitted, load_model.json (every running unit,
  coefficients finite and ≥ 0, declared streams only), offending rows named.
- **plan** (`read_stream_rows`, `attach_streams`): the state gains ``streams`` (the period's rates, the configured
  lower bounds) and ``load_model``, so `rod` runs and every strategy's plan gets its resilience.
  Before the model is fitted (the first periods), a strategy needing it keeps the current
  placement with a message saying why (`keep_until_fitted`, called by jobs/plan/scaling.py `solve`),
  so the cycle completes and the next one is not blocked.

Why NNLS rather than costs and selectivities propagated along the dataflow (§3, §6.2): the
pipeline sees key groups' loads and the streams' rates every period, not per-edge selectivities
of collocated key groups; NNLS needs only what every job lands, and non-negativity is the model's
own constraint (a load never falls when a rate grows).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from jobs.errors import StageError
from jobs.facets.base import Assembly, Checked
from jobs.validate.suites import ValidationReport
from placement.common import make_plan
from placement.facets import Stream
from placement.model import ClusterState, Plan, SolverStatus
from placement.rod.fit import fit_load_model
from placement.rod.model import LoadModelError
from schemas.config import JobConfig
from schemas.limits import LOAD_PCT_MAX, RATE_MAX
from schemas.strategies import STRATEGIES
from schemas.tables import KEYGROUP_STATS, LOAD_MODEL, STREAM_STATS, Table

if TYPE_CHECKING:
    import pandas as pd

    from jobs.context import StageContext

log = logging.getLogger(__name__)

__all__ = ["Fitted", "attach_streams", "fit_rows", "fit_stage", "keep_until_fitted",
           "read_stream_rows", "validate_streams_of", "with_streams"]


@dataclass(frozen=True)
class Fitted:
    """The ``load_model`` rows of one period (empty when nothing could be fitted) and why."""

    rows: tuple[dict[str, Any], ...]
    note: str


def fit_rows(job: JobConfig, period_end: datetime, loads: pd.DataFrame, rates: pd.DataFrame
             ) -> Fitted:
    """The period's load model from the last K periods: `loads` (period_end, keygroup, load_pct)
    and `rates` (period_end, stream, tuples_per_s); the units are those of `period_end`."""
    config = job.load_model
    if config is None:
        return Fitted((), "the job declares no input streams")
    streams = list(config.streams)
    ends = sorted(set(loads["period_end"]))
    units = sorted(set(loads.loc[loads["period_end"] == ends[-1], "keygroup"])) if ends else []
    y = loads.pivot_table(index="period_end", columns="keygroup", values="load_pct",
                          aggfunc="first").reindex(columns=units)
    r = rates.pivot_table(index="period_end", columns="stream", values="tuples_per_s",
                          aggfunc="first").reindex(columns=streams)
    both = y.join(r, how="inner", lsuffix="_load")
    finite = np.isfinite(both.to_numpy(dtype=float)).all(axis=1)
    rate_values = r.reindex(both.index).to_numpy(dtype=float)
    load_values = y.reindex(both.index).to_numpy(dtype=float)
    # a period whose rates or loads pass the bounds validate enforces (schemas/limits.py) never
    # enters the fit: one rate of 1e300 would make the system singular in floating point and
    # switch the fit off for every period whose window holds it
    in_bounds = ((rate_values >= 0) & (rate_values <= RATE_MAX)).all(axis=1) & (
        (load_values >= 0) & (load_values <= LOAD_PCT_MAX)).all(axis=1)
    usable = both[finite & in_bounds]
    outside = [end.isoformat() for end in both.index[finite & ~in_bounds]]
    left_out = (f"; left out period(s) {', '.join(outside)}: a rate above {RATE_MAX:g} "
                f"tuples/s or a load above {LOAD_PCT_MAX:g} % (schemas/limits.py)"
                if outside else "")
    if not units or usable.empty:
        return Fitted((), f"no period among the last {config.periods} has a rate for every "
                          f"declared stream ({', '.join(streams)}) and a load for every unit"
                          f"{left_out}")
    try:
        fit = fit_load_model(units, streams, usable[y.columns].to_numpy(dtype=float),
                             usable[r.columns].to_numpy(dtype=float))
    except LoadModelError as exc:
        return Fitted((), f"not fitted yet: {exc}{left_out}")
    stamp = {"job_id": job.job_id, "period_end": period_end, "periods": len(usable)}
    rows = tuple({**stamp, "keygroup": u, "stream": s, "coefficient": c,
                  "residual": fit.residual[u]}
                 for u in units for s, c in fit.coefficients[u].items())
    return Fitted(rows, f"fitted over {len(usable)} period(s){left_out}")


def fit_stage(ctx: StageContext) -> list[tuple[Table, int, int]]:
    """collect's fit (module doc): [(load_model, rows, Delta version)], [] for a job declaring no
    streams. Call it with the job's collect lock held, after keygroup_stats is written."""
    from jobs.lake import Scope, concurrently

    lake, job, period_end = ctx.lake, ctx.job, ctx.end
    if job.load_model is None:
        return []
    since = period_end - job.load_model.periods * job.spl
    loads, rates = concurrently(
        lambda: lake.periods_frame(KEYGROUP_STATS, job.job_id, since, period_end,
                                   ("period_end", "keygroup", "load_pct")),
        lambda: lake.periods_frame(STREAM_STATS, job.job_id, since, period_end,
                                   ("period_end", "stream", "tuples_per_s")))
    fitted = fit_rows(job, period_end, loads, rates)
    log.info("job %s, period %s: load model %s", job.job_id, period_end, fitted.note)
    lake.write_records(LOAD_MODEL, [dict(row) for row in fitted.rows],
                       Scope(job.job_id, period_end))
    return [(LOAD_MODEL, len(fitted.rows), lake.table_version(LOAD_MODEL.name))]


def validate_streams_of(ctx: StageContext, checked: Checked, report: ValidationReport
                        ) -> ValidationReport:
    """`report` with the stream rates' and load model's verdict added (jobs/validate/suites.py
    `validate_streams`), for a period whose collect wrote stream_stats."""
    from jobs.validate.suites import validate_streams

    marker, job = ctx.marker, ctx.job
    if marker is None or not marker.wrote(STREAM_STATS.name):
        return report
    lake, job_id, end = ctx.lake, ctx.job_id, ctx.end
    streams: pd.DataFrame = lake.period_frame(STREAM_STATS, job_id, end)
    model: pd.DataFrame | None = (lake.period_frame(LOAD_MODEL, job_id, end)
                                  if marker.rows_of(LOAD_MODEL.name) else None)
    declared = (job.load_model.streams if job.load_model is not None
                else sorted(set(streams["stream"].dropna())))
    verdict = validate_streams(streams, model, declared_streams=declared,
                               running_units=set(checked.running))
    return ValidationReport(report.success and verdict.success,
                            report.failures + verdict.failures)


def with_streams(state: ClusterState, job: JobConfig, strategy: str,
                 rates: Sequence[Mapping[str, Any]], model: Sequence[Mapping[str, Any]]
                 ) -> ClusterState:
    """`state` with the job's streams (the period's observed rates, the configured lower bounds)
    and load model (none before it is fitted); a lower bound above the observed rate is a
    StageError."""
    config = job.load_model
    if config is None:
        return state
    observed = {str(r["stream"]): float(r["tuples_per_s"]) for r in rates}
    streams = []
    for sid in config.streams:
        rate = observed.get(sid, math.nan)
        bound = config.min_rate.get(sid, 0.0)
        if not (math.isfinite(rate) and rate >= 0):
            raise StageError(
                f"stream {sid!r} has no finite rate >= 0 this period (got {rate!r})",
                where=f"lake/{STREAM_STATS.name} (job {job.job_id})",
                fix="validate the period first: its stream_stats suite names the bad rows")
        if bound > rate:
            raise StageError(
                f"stream {sid!r}: the configured lower bound min_rate = {bound:g} is above its "
                f"observed rate {rate:g} tuples/s this period; a lower bound must not exceed what "
                "was observed (ROD §6.1)", where=f"jobs.{job.job_id}.load_model.min_rate.{sid}",
                fix="lower min_rate to at most the rates the job sees (stream_stats), or remove it")
        streams.append(Stream(sid, rate, bound))
    coefficients: dict[str, dict[str, float]] = {}
    for r in model:
        coefficients.setdefault(str(r["keygroup"]), {})[str(r["stream"])] = float(r["coefficient"])
    if not coefficients:  # not fitted yet: `keep_until_fitted` keeps the placement
        return replace(state, streams=tuple(streams))
    return replace(state, streams=tuple(streams), load_model=coefficients)


def keep_until_fitted(state: ClusterState, strategy: str) -> Plan | None:
    """For a job whose streams are declared but whose load model is not fitted yet (its first
    periods), a strategy needing the model keeps the current placement, saying why, so the cycle
    completes and the next one is not blocked; None otherwise (then the strategy runs)."""
    if not state.streams or state.load_model or "load_model" not in STRATEGIES[strategy].facets:
        return None
    kept = make_plan(state, state.assignment, status=SolverStatus.HEURISTIC, lower_bound=None,
                     message=f"{strategy}: the job's load model is not fitted yet (the stream "
                             "rates collected so far do not span the declared streams; see "
                             "docs/operations.md); the current placement is kept")
    return replace(kept, strategy=strategy)


def read_stream_rows(ctx: StageContext
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """The plan's read: the period's stream_stats and load_model rows (None, without reading,
    for a job declaring no streams)."""
    from jobs.lake import concurrently

    if ctx.job.load_model is None:
        return None
    lake, job_id, end = ctx.lake, ctx.job_id, ctx.end
    rates, model = concurrently(lambda: lake.period_rows(STREAM_STATS, job_id, end),
                                lambda: lake.period_rows(LOAD_MODEL, job_id, end))
    return rates, model


def attach_streams(assembly: Assembly,
                   rows: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None) -> Assembly:
    """The plan's attach: the period's rates and load model into the state (`with_streams`)."""
    if rows is None:
        return assembly
    return replace(assembly, state=with_streams(assembly.state, assembly.job, assembly.strategy,
                                                *rows))
