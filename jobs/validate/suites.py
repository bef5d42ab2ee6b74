"""Validate one period of one job's statistics with Great Expectations before planning.

The rules live in ``schemas/expectations/*.json`` (GE 1.x ExpectationSuite JSON), so they can be
reviewed and changed without touching code; the run-time sets (the job's key groups and the known
nodes) are passed as GE suite parameters (``{"$PARAMETER": ...}``). The planner must never see a
period with missing key groups, unknown nodes or non-finite numbers: a bad plan is far more
expensive than a skipped cycle, so :func:`validate_stats` returns a report that names every broken
rule, table, column and offending row, and says how to fix it.

GE is imported lazily and its context, suites and validation definitions are built once per
process (jobs/validate/ge.py), so importing this module is cheap and repeated calls cost only the
validation itself. The set rules over run-time ids (the job's key groups, the running units) are
not GE's: jobs/validate/sets.py checks them over whole columns with the same records, since GE
copies a large parameter per expectation and metric.
"""

from __future__ import annotations

from collections.abc import Collection

import pandas as pd
import pyarrow as pa

from jobs.validate.ge import STATS_TABLES, SUITE_DIR, engine, load_suite, prepare, with_all_columns
from jobs.validate.report import MAX_ROWS, Failure, ValidationReport
from schemas.tables import (
    COMM_TOTALS,
    LOAD_MODEL,
    NETWORK_LINKS,
    SOURCE_STATS,
    STREAM_STATS,
    SUBSCRIPTIONS,
)

__all__ = [
    "MAX_ROWS",
    "SUITE_DIR",
    "Failure",
    "ValidationReport",
    "load_suite",
    "prepare",
    "validate_comm_totals",
    "validate_facets",
    "validate_links",
    "validate_stats",
    "validate_streams",
]


def validate_stats(
    keygroups: pd.DataFrame | pa.Table,
    edges: pd.DataFrame | pa.Table,
    nodes: pd.DataFrame | pa.Table,
    *,
    expected_keygroups: Collection[str],
    known_nodes: Collection[str],
    sets_by_ge: bool = False,
) -> ValidationReport:
    """Check one period of one job (three tables) against the suites in ``SUITE_DIR``.

    ``expected_keygroups`` is every key group of the job, ``known_nodes`` every node id of the
    cluster; both are GE suite parameters. An empty ``edges`` frame is valid (no traffic); an
    empty ``keygroups`` frame fails (every key group is missing), unless no key group is
    expected: a dynamic job's period after every unit has left.

    A table given as Arrow (what the validate stage reads of `comm_stats`, O(edges) rows) is
    judged by its witness rows first (jobs/validate/witness.py: they pass exactly when the whole
    table does); only when they fail does GE read the whole table, so the report names every
    offending row as a run over all rows does. The set rules over the job's ids are checked
    over whole columns (jobs/validate/sets.py); ``sets_by_ge`` gives them to GE instead, the
    reference the property tests compare against.
    """
    if isinstance(expected_keygroups, str) or isinstance(known_nodes, str):
        raise TypeError("expected_keygroups and known_nodes are collections of ids, not a str")
    if not known_nodes:
        raise ValueError("known_nodes must be non-empty")
    params = {
        "expected_keygroups": sorted({str(k) for k in expected_keygroups}),
        "known_nodes": sorted({str(n) for n in known_nodes}),
    }
    frames = dict(zip((t.name for t in STATS_TABLES), (keygroups, edges, nodes), strict=True))
    judge = engine(sets_by_ge=sets_by_ge)
    failures: list[Failure] = []
    for table in STATS_TABLES:
        data = frames[table.name]
        failures.extend(judge.run(table, with_all_columns(data, table), params)
                        if isinstance(data, pd.DataFrame) else judge.run_arrow(table, data, params))
    return ValidationReport(success=not failures, failures=tuple(failures))


def validate_facets(
    sources: pd.DataFrame,
    subscriptions: pd.DataFrame,
    *,
    running_units: Collection[str],
    known_nodes: Collection[str],
) -> ValidationReport:
    """Check a dynamic job's period of source rates and subscriptions (DESIGN.md, "Units may come
    and go"): rates finite and >= 0, one per source; each running unit (``running_units``, the
    period's keygroup_stats) listed exactly once per source it reads, on one node, reading at
    least one source, and only sources of the period's ``sources``."""
    subs = with_all_columns(subscriptions, SUBSCRIPTIONS)
    # derived, so GE can name the rows of a unit reported on two nodes
    subs = subs.assign(nodes_of_keygroup=subs.groupby("keygroup", dropna=False)["node"]
                       .transform("nunique") if len(subs) else pd.Series(dtype="int64"))
    params = {
        "known_sources": sorted({str(s) for s in sources.get("source", pd.Series()).dropna()}),
        "running_units": sorted({str(u) for u in running_units}),
        "known_nodes": sorted({str(n) for n in known_nodes}),
    }
    judge = engine()
    failures = judge.run(SOURCE_STATS, with_all_columns(sources, SOURCE_STATS), params)
    failures += judge.run(SUBSCRIPTIONS, subs, params)
    return ValidationReport(success=not failures, failures=tuple(failures))


def validate_streams(
    streams: pd.DataFrame,
    load_model: pd.DataFrame | None,
    *,
    declared_streams: Collection[str],
    running_units: Collection[str],
) -> ValidationReport:
    """Check a period's input stream rates (``stream_stats``: one finite rate >= 0 per declared
    stream, no other stream) and, when collect fitted one, its load model (``load_model``: every
    running unit, every coefficient finite and >= 0, only declared streams)."""
    params = {
        "declared_streams": sorted({str(s) for s in declared_streams}),
        "running_units": sorted({str(u) for u in running_units}),
    }
    judge = engine()
    failures = judge.run(STREAM_STATS, with_all_columns(streams, STREAM_STATS), params)
    if load_model is not None:
        failures += judge.run(LOAD_MODEL, with_all_columns(load_model, LOAD_MODEL), params)
    return ValidationReport(success=not failures, failures=tuple(failures))


def validate_comm_totals(totals: pd.DataFrame, *, running_units: Collection[str]
                         ) -> ValidationReport:
    """Check a top-k communication landing's per-unit totals (jobs/facets/comm.py): one row per
    running unit, a total >= 0, and the unit's landed pairs (``kept_tuples``, derived from
    comm_stats) at most its declared total (``dropped_tuples`` >= 0)."""
    params = {"running_units": sorted({str(u) for u in running_units})}
    failures = engine().run(COMM_TOTALS, with_all_columns(totals, COMM_TOTALS), params)
    return ValidationReport(success=not failures, failures=tuple(failures))


def validate_links(
    links: pd.DataFrame,
    *,
    sites: Collection[str],
    configured: Collection[tuple[str, str]],
) -> ValidationReport:
    """Check a wide-area job's measured links (``network_links``): both ends sites of its
    topology file (``sites``), the link one of the file's (``configured``, in either direction),
    measured at most once, latency > 0 and finite, bandwidth >= 0."""
    frame = with_all_columns(links, NETWORK_LINKS)
    # derived, so GE can name a link measured twice (in either direction) or not configured
    ends = frame[["a", "b"]].astype(object).where(frame[["a", "b"]].notna(), "")
    frame = frame.assign(link=["|".join(sorted((str(a), str(b))))
                               for a, b in zip(ends["a"], ends["b"], strict=True)])
    params = {
        "topology_sites": sorted({str(s) for s in sites}),
        "topology_links": sorted({"|".join(sorted((str(a), str(b)))) for a, b in configured}),
    }
    failures = engine().run(NETWORK_LINKS, frame, params)
    return ValidationReport(success=not failures, failures=tuple(failures))
