"""Validate one period of one job's statistics with Great Expectations before planning.

The rules live in ``schemas/expectations/*.json`` (GE 1.x ExpectationSuite JSON), so they can be
reviewed and changed without touching code; the run-time sets (the job's key groups and the known
nodes) are passed as GE suite parameters (``{"$PARAMETER": ...}``). The planner must never see a
period with missing key groups, unknown nodes or non-finite numbers: a bad plan is far more
expensive than a skipped cycle, so :func:`validate_stats` returns a report that names every broken
rule, table, column and offending row, and says how to fix it.

GE is imported lazily and its context, suites and validation definitions are built once per
process, so importing this module is cheap and repeated calls cost only the validation itself.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from schemas.tables import (
    COMM_STATS,
    COMM_TOTALS,
    KEYGROUP_STATS,
    LOAD_MODEL,
    NETWORK_LINKS,
    NODE_STATS,
    SOURCE_STATS,
    STREAM_STATS,
    SUBSCRIPTIONS,
    Table,
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

SUITE_DIR = Path(__file__).resolve().parents[2] / "schemas" / "expectations"
MAX_ROWS = 10  # offending rows kept per failure: enough to act on, small enough to print

# The three tables in report order; their row key minus the partition columns names a bad row.
_TABLES: tuple[Table, ...] = (KEYGROUP_STATS, COMM_STATS, NODE_STATS)
# A dynamic job's facet tables (jobs/facets/subscriptions.py), validated by `validate_facets`.
_FACET_TABLES: tuple[Table, ...] = (SOURCE_STATS, SUBSCRIPTIONS, STREAM_STATS, LOAD_MODEL,
                                    NETWORK_LINKS, COMM_TOTALS)
_PARTITION = ("job_id", "period_end")


@dataclass(frozen=True)
class Failure:
    """One broken expectation: where it broke, why, and which rows broke it."""

    table: str
    expectation: str  # GE expectation type, e.g. "expect_column_values_to_be_between"
    column: str | None  # column(s) checked; None for table-level rules
    rule: str  # the rule in words (the expectation's meta.rule in the suite JSON)
    unexpected_count: int  # offending rows (or distinct values, for set rules)
    rows: tuple[dict[str, Any], ...] = ()  # up to MAX_ROWS: row key + bad value
    missing: tuple[str, ...] = ()  # expected values absent (key groups, columns)
    fix: str = ""
    error: str | None = None  # GE could not evaluate the rule (e.g. column absent)


@dataclass(frozen=True)
class ValidationReport:
    """The verdict on one period; ``to_dict`` is logged as an MLflow artifact."""

    success: bool
    failures: tuple[Failure, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """Plain, strict-JSON data (non-finite floats are rendered as strings)."""
        return {
            "success": self.success,
            "failure_count": len(self.failures),
            "failures": [_jsonable(asdict(f)) for f in self.failures],
        }

    def summary(self) -> str:
        """A message for whoever is on call: what failed, where, which rows, how to fix it."""
        if self.success:
            return "validate: the period's stats passed every expectation."
        tables = dict.fromkeys(f.table for f in self.failures)
        lines = [
            f"validate: the period's stats FAILED {len(self.failures)} expectation(s) "
            f"in {', '.join(tables)}; planning is stopped for this cycle."
        ]
        for f in self.failures:
            where = f"{f.table}.{f.column}" if f.column else f.table
            lines.append(f"- {where}: {f.rule} [{f.expectation}]")
            if f.error:
                lines.append(f"    could not evaluate: {f.error}")
            if f.missing:
                shown = ", ".join(f.missing[:MAX_ROWS])
                more = f" (+{len(f.missing) - MAX_ROWS} more)" if len(f.missing) > MAX_ROWS else ""
                lines.append(f"    missing ({len(f.missing)}): {shown}{more}")
            if f.unexpected_count:
                lines.append(f"    {f.unexpected_count} offending value(s)/row(s), e.g.:")
                lines.extend(f"      {_row_text(r)}" for r in f.rows)
        fixes = dict.fromkeys(f.fix for f in self.failures if f.fix)
        lines.append("How to fix: " + "; ".join(fixes) + "." if fixes else "")
        return "\n".join(line for line in lines if line)


def load_suite(table: str) -> dict[str, Any]:
    """The suite JSON of ``table`` (kept as data so reviewers can read the rules directly)."""
    with (SUITE_DIR / f"{table}.json").open(encoding="utf-8") as fh:
        suite: dict[str, Any] = json.load(fh)
    return suite


def validate_stats(
    keygroups: pd.DataFrame | pa.Table,
    edges: pd.DataFrame | pa.Table,
    nodes: pd.DataFrame | pa.Table,
    *,
    expected_keygroups: Collection[str],
    known_nodes: Collection[str],
) -> ValidationReport:
    """Check one period of one job (three tables) against the suites in ``SUITE_DIR``.

    ``expected_keygroups`` is every key group of the job, ``known_nodes`` every node id of the
    cluster; both are GE suite parameters. An empty ``edges`` frame is valid (no traffic); an
    empty ``keygroups`` frame fails (every key group is missing), unless no key group is
    expected: a dynamic job's period after every unit has left.

    A table given as Arrow (what the validate stage reads of `comm_stats`, O(edges) rows) is
    judged by its witness rows first (jobs/validate/witness.py: they pass exactly when the whole
    table does); only when they fail does GE read the whole table, so the report names every
    offending row as a run over all rows does.
    """
    if isinstance(expected_keygroups, str) or isinstance(known_nodes, str):
        raise TypeError("expected_keygroups and known_nodes are collections of ids, not a str")
    if not known_nodes:
        raise ValueError("known_nodes must be non-empty")
    params = {
        "expected_keygroups": sorted({str(k) for k in expected_keygroups}),
        "known_nodes": sorted({str(n) for n in known_nodes}),
    }
    frames = dict(zip((t.name for t in _TABLES), (keygroups, edges, nodes), strict=True))
    engine = _engine()
    failures: list[Failure] = []
    for table in _TABLES:
        failures.extend(_run_witnessed(engine, table, frames[table.name], params))
    return ValidationReport(success=not failures, failures=tuple(failures))


def _run_witnessed(engine: _Engine, table: Table, data: pd.DataFrame | pa.Table,
                   params: Mapping[str, Any]) -> list[Failure]:
    """GE over the witness rows of an Arrow table, then over all its rows if they fail; a
    pandas frame is judged whole."""
    if isinstance(data, pd.DataFrame):
        return engine.run(table, _with_all_columns(data, table), params)
    from jobs.validate.witness import witnesses

    rows = witnesses(data, load_suite(table.name)) if data.num_rows else None
    if rows is not None:
        few = _pandas(data.take(rows))
        few.index = pd.Index(rows.to_numpy(zero_copy_only=False))  # the rows' numbers in all
        if not engine.run(table, _with_all_columns(few, table), params):
            return []
    return engine.run(table, _with_all_columns(_pandas(data), table), params)


def _pandas(data: pa.Table) -> pd.DataFrame:
    """An Arrow table as the lake's frames give it (jobs/lake/delta_rs.py `frame`)."""
    return data.to_pandas(coerce_temporal_nanoseconds=True)


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
    subs = _with_all_columns(subscriptions, SUBSCRIPTIONS)
    # derived, so GE can name the rows of a unit reported on two nodes
    subs = subs.assign(nodes_of_keygroup=subs.groupby("keygroup", dropna=False)["node"]
                       .transform("nunique") if len(subs) else pd.Series(dtype="int64"))
    params = {
        "known_sources": sorted({str(s) for s in sources.get("source", pd.Series()).dropna()}),
        "running_units": sorted({str(u) for u in running_units}),
        "known_nodes": sorted({str(n) for n in known_nodes}),
    }
    engine = _engine()
    failures = engine.run(SOURCE_STATS, _with_all_columns(sources, SOURCE_STATS), params)
    failures += engine.run(SUBSCRIPTIONS, subs, params)
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
    engine = _engine()
    failures = engine.run(STREAM_STATS, _with_all_columns(streams, STREAM_STATS), params)
    if load_model is not None:
        failures += engine.run(LOAD_MODEL, _with_all_columns(load_model, LOAD_MODEL), params)
    return ValidationReport(success=not failures, failures=tuple(failures))


def validate_comm_totals(totals: pd.DataFrame, *, running_units: Collection[str]
                         ) -> ValidationReport:
    """Check a top-k communication landing's per-unit totals (jobs/facets/comm.py): one row per
    running unit, a total >= 0, and the unit's landed pairs (``kept_tuples``, derived from
    comm_stats) at most its declared total (``dropped_tuples`` >= 0)."""
    params = {"running_units": sorted({str(u) for u in running_units})}
    failures = _engine().run(COMM_TOTALS, _with_all_columns(totals, COMM_TOTALS), params)
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
    frame = _with_all_columns(links, NETWORK_LINKS)
    # derived, so GE can name a link measured twice (in either direction) or not configured
    ends = frame[["a", "b"]].astype(object).where(frame[["a", "b"]].notna(), "")
    frame = frame.assign(link=["|".join(sorted((str(a), str(b))))
                               for a, b in zip(ends["a"], ends["b"], strict=True)])
    params = {
        "topology_sites": sorted({str(s) for s in sites}),
        "topology_links": sorted({"|".join(sorted((str(a), str(b)))) for a, b in configured}),
    }
    failures = _engine().run(NETWORK_LINKS, frame, params)
    return ValidationReport(success=not failures, failures=tuple(failures))


# --- GE plumbing ---------------------------------------------------------------------------


class _Engine:
    """An ephemeral GE context with one pandas asset, suite and validation definition per table."""

    def __init__(self) -> None:
        try:
            import great_expectations as gx
            from great_expectations.data_context.types.base import ProgressBarsConfig
        except SystemExit as exc:
            # pyspark lacking its connect extras sys.exit(0)s on import if __main__ has no file,
            # e.g. under `python -c`: fail closed instead of ending the stage "successfully".
            raise RuntimeError(
                "importing great_expectations tried to exit the process (pyspark's connect check "
                "under `python -c`); run the validate stage from a file or module"
            ) from exc

        ge_log = logging.getLogger("great_expectations")
        if ge_log.level == logging.NOTSET:  # respect an explicit logging config
            ge_log.setLevel(logging.WARNING)
        self._lock = threading.Lock()  # a GE context is not thread-safe
        self._context = gx.get_context(mode="ephemeral")
        self._context.variables.progress_bars = ProgressBarsConfig(globally=False)
        source = self._context.data_sources.add_pandas("reconf_stats")
        self._definitions: dict[str, Any] = {}
        self._order: dict[str, dict[str, int]] = {}
        self._fix: dict[str, str] = {}
        for table in (*_TABLES, *_FACET_TABLES):
            spec = load_suite(table.name)
            suite = gx.ExpectationSuite(**spec)
            # GE only logs (does not raise on) an invalid expectation: refuse a partial suite.
            if len(suite.expectations) != len(spec["expectations"]):
                raise ValueError(f"{table.name}.json has expectations GE {gx.__version__} rejects")
            suite = self._context.suites.add(suite)
            self._order[table.name] = {str(e.id): i for i, e in enumerate(suite.expectations)}
            self._fix[table.name] = str((spec.get("meta") or {}).get("fix", ""))
            batch = source.add_dataframe_asset(table.name).add_batch_definition_whole_dataframe(
                "period"
            )
            self._definitions[table.name] = self._context.validation_definitions.add(
                gx.ValidationDefinition(name=table.name, data=batch, suite=suite)
            )

    def run(self, table: Table, frame: pd.DataFrame, params: Mapping[str, Any]) -> list[Failure]:
        """Validate ``frame`` and turn GE's failed results into ``Failure`` records."""
        keys = [c for c in table.key if c not in _PARTITION and c in frame.columns]
        result_format = {
            "result_format": "SUMMARY",
            "unexpected_index_column_names": keys,
            "partial_unexpected_count": MAX_ROWS,
            "return_unexpected_index_query": False,
        }
        with self._lock:
            result = self._definitions[table.name].run(
                batch_parameters={"dataframe": frame},
                expectation_parameters=dict(params),
                result_format=result_format,
            )
            store = self._context.validation_results_store  # in memory: drop to stay flat
            for key in store.list_keys():
                store.remove_key(key)
        fix = self._fix[table.name]
        order = self._order[table.name]
        failed = [r for r in result.results if not r.success]
        failed.sort(key=lambda r: order.get(str(r.expectation_config.id), len(order)))
        return [_failure(table.name, r, frame, params, fix) for r in failed]


_ENGINE: _Engine | None = None
_ENGINE_LOCK = threading.Lock()


def _engine() -> _Engine:
    """The per-process engine (building it takes ~0.1 s plus the GE import)."""
    global _ENGINE
    with _ENGINE_LOCK:
        if _ENGINE is None:
            _ENGINE = _Engine()
        return _ENGINE


def prepare() -> None:
    """Import GE and build the engine now, e.g. in a thread while the stage's Spark reads run:
    in a fresh process that import is most of the validation's cost."""
    _engine()


def _with_all_columns(frame: pd.DataFrame, table: Table) -> pd.DataFrame:
    """Give an empty frame the table's columns: an empty period is judged by rows, not schema."""
    if len(frame) or all(c in frame.columns for c in table.columns):
        return frame
    return frame.reindex(columns=[*frame.columns, *(c for c in table.columns if c not in frame)])


def _failure(
    table: str, r: Any, frame: pd.DataFrame, params: Mapping[str, Any], fix: str
) -> Failure:
    """Translate one failed ``ExpectationValidationResult``."""
    cfg = r.expectation_config
    kwargs = cfg.kwargs
    column = kwargs.get("column") or ",".join(kwargs.get("column_list") or ()) or None
    meta = cfg.meta or {}
    res = r.result or {}
    rows: list[dict[str, Any]] = []
    if res.get("partial_unexpected_index_list"):
        keys = [k for k in res.get("unexpected_index_column_names") or () if k != column]
        rows = [  # the row key first, then the bad value(s)
            {**{k: row[k] for k in keys if k in row}, **row}
            for row in res["partial_unexpected_index_list"]
        ]
    elif res.get("partial_unexpected_list") and column:
        rows = [{column: v} for v in res["partial_unexpected_list"]]
    missing: list[Any] = []
    if cfg.type in ("expect_column_distinct_values_to_equal_set",
                    "expect_column_distinct_values_to_contain_set"):
        # GE lists at most 20 missing values; the report keeps them all for the artifact.
        present = set(frame[column].dropna().astype(str)) if column in frame else set()
        wanted = kwargs.get("value_set")
        if isinstance(wanted, Mapping):  # the suite's {"$PARAMETER": name}, not yet resolved
            wanted = params.get(str(wanted.get("$PARAMETER")), ())
        missing = [str(v) for v in sorted(wanted or (), key=str) if str(v) not in present]
    elif cfg.type == "expect_table_columns_to_match_set":
        missing = list(((res.get("details") or {}).get("mismatched") or {}).get("missing") or [])
    return Failure(
        table=table,
        expectation=cfg.type,
        column=column,
        rule=str(meta.get("rule", cfg.type)),
        unexpected_count=int(res.get("unexpected_count") or 0),
        rows=tuple(_jsonable(row) for row in rows[:MAX_ROWS]),
        missing=tuple(str(m) for m in missing),
        fix=str(meta.get("fix", fix)),
        error=_error_text(r.exception_info),
    )


def _error_text(info: Any) -> str | None:
    """GE reports errors either flat or keyed by metric; keep the distinct messages."""
    if not info:
        return None
    parts = [info] if "raised_exception" in info else list(info.values())
    messages = dict.fromkeys(
        str(p.get("exception_message")) for p in parts if p.get("raised_exception")
    )
    return "; ".join(messages) or None


def _jsonable(value: Any) -> Any:
    """Make GE/pandas values strict-JSON: numpy scalars, NaN/NaT (None), inf (string), times."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NaT:
        return None
    if isinstance(value, float):
        return value if math.isfinite(value) else (None if math.isnan(value) else str(value))
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, bool | int | str):
        return value
    return str(value)


def _row_text(row: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in row.items())
