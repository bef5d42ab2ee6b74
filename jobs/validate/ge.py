"""Great Expectations for the rules it judges cheaply, and the translation of its results.

One ephemeral GE context per process, with one pandas asset, suite and validation definition per
table. The suites' set rules with a run-time parameter (the job's key groups, 10⁴–10⁵ ids) are
not given to GE: GE copies such a parameter per expectation and per metric, so they are checked
by jobs/validate/sets.py over whole columns, and merged with GE's failures in the suite's order.
`engine(sets_by_ge=True)` is the reference: every rule through GE, as validate ran before (the
property test tests/validation/test_sets.py holds the two to the same reports; a table whose
set-rule column is absent or of times goes to it, so such a report stays GE's).

GE is imported lazily: importing this module is cheap, building the engine ~0.1 s plus GE.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from jobs.validate.report import MAX_ROWS, Failure, jsonable
from jobs.validate.sets import SetRule, check, judged_here, set_rules, without_set_rules
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

__all__ = ["STATS_TABLES", "SUITE_DIR", "Engine", "engine", "load_suite", "prepare",
           "with_all_columns"]

SUITE_DIR = Path(__file__).resolve().parents[2] / "schemas" / "expectations"
# The three tables in report order; their row key minus the partition columns names a bad row.
STATS_TABLES: tuple[Table, ...] = (KEYGROUP_STATS, COMM_STATS, NODE_STATS)
# The facet tables (jobs/facets/), validated by suites.py's other functions.
_FACET_TABLES: tuple[Table, ...] = (SOURCE_STATS, SUBSCRIPTIONS, STREAM_STATS, LOAD_MODEL,
                                    NETWORK_LINKS, COMM_TOTALS)
_PARTITION = ("job_id", "period_end")
Ranked = list[tuple[int, Failure]]  # a failure and its rule's position in the suite


def load_suite(table: str) -> dict[str, Any]:
    """The suite JSON of ``table`` (kept as data so reviewers can read the rules directly)."""
    with (SUITE_DIR / f"{table}.json").open(encoding="utf-8") as fh:
        suite: dict[str, Any] = json.load(fh)
    return suite


def _parameters(spec: Mapping[str, Any]) -> frozenset[str]:
    """The run-time parameters the suite's rules name."""
    return frozenset(str(value["$PARAMETER"])
                     for rule in spec.get("expectations", ())
                     for value in (rule.get("kwargs") or {}).values()
                     if isinstance(value, Mapping) and "$PARAMETER" in value)


class Engine:
    """GE for every rule but the set rules (unless `sets_by_ge`), plus those checked here."""

    def __init__(self, *, sets_by_ge: bool = False) -> None:
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
        self.sets_by_ge = sets_by_ge
        self._lock = threading.Lock()  # a GE context is not thread-safe
        self._context = gx.get_context(mode="ephemeral")
        self._context.variables.progress_bars = ProgressBarsConfig(globally=False)
        source = self._context.data_sources.add_pandas("reconf_stats")
        self._definitions: dict[str, Any] = {}
        self._order: dict[str, dict[str, int]] = {}
        self._fix: dict[str, str] = {}
        self._sets: dict[str, tuple[SetRule, ...]] = {}
        self._kept: dict[str, dict[str, Any]] = {}
        self._needs: dict[str, frozenset[str]] = {}
        for table in (*STATS_TABLES, *_FACET_TABLES):
            spec = load_suite(table.name)
            if sets_by_ge:
                kept, positions = spec, tuple(range(len(spec["expectations"])))
            else:
                kept, positions = without_set_rules(spec)
            self._sets[table.name] = () if sets_by_ge else set_rules(spec)
            self._kept[table.name] = kept
            self._needs[table.name] = _parameters(kept)
            suite = gx.ExpectationSuite(**kept)
            # GE only logs (does not raise on) an invalid expectation: refuse a partial suite.
            if len(suite.expectations) != len(kept["expectations"]):
                raise ValueError(f"{table.name}.json has expectations GE {gx.__version__} rejects")
            suite = self._context.suites.add(suite)
            self._order[table.name] = {str(e.id): positions[i]
                                       for i, e in enumerate(suite.expectations)}
            self._fix[table.name] = str((spec.get("meta") or {}).get("fix", ""))
            batch = source.add_dataframe_asset(table.name).add_batch_definition_whole_dataframe(
                "period"
            )
            self._definitions[table.name] = self._context.validation_definitions.add(
                gx.ValidationDefinition(name=table.name, data=batch, suite=suite)
            )

    def run(self, table: Table, frame: pd.DataFrame, params: Mapping[str, Any]) -> list[Failure]:
        """Every failure of ``frame`` (a period of ``table``), in the suite's order."""
        rules = self._sets[table.name]
        if rules and not judged_here(rules, frame, params):
            return engine(sets_by_ge=True).run(table, frame, params)
        ranked = self._set_failures(table, frame, params) + self._ge(table, frame, params)
        return [f for _, f in sorted(ranked, key=lambda pair: pair[0])]

    def run_arrow(self, table: Table, data: pa.Table, params: Mapping[str, Any]
                  ) -> list[Failure]:
        """`run` for a table given as Arrow (O(edges) rows): the set rules over its columns, GE
        over its witness rows (jobs/validate/witness.py), and over all its rows only when those
        fail, so a refusal names every offending row as a run over all rows does."""
        from jobs.validate.witness import witnesses

        rules = self._sets[table.name]
        if rules and not judged_here(rules, data, params):
            return engine(sets_by_ge=True).run_arrow(table, data, params)
        ranked = self._set_failures(table, data, params)
        rows = witnesses(data, self._kept[table.name]) if data.num_rows else None
        found: Ranked | None = None
        if rows is not None:
            few = _pandas(data.take(rows))
            few.index = pd.Index(rows.to_numpy(zero_copy_only=False))  # the rows' numbers in all
            if not self._ge(table, with_all_columns(few, table), params):
                found = []
        if found is None:
            found = self._ge(table, with_all_columns(_pandas(data), table), params)
        return [f for _, f in sorted(ranked + found, key=lambda pair: pair[0])]

    def _set_failures(self, table: Table, data: pd.DataFrame | pa.Table,
                      params: Mapping[str, Any]) -> Ranked:
        keys = _keys(table, data)
        ranked: Ranked = []
        for rule in self._sets[table.name]:
            failure = check(table.name, rule, data, keys, params[rule.parameter])
            if failure is not None:
                ranked.append((rule.position, failure))
        return ranked

    def _ge(self, table: Table, frame: pd.DataFrame, params: Mapping[str, Any]) -> Ranked:
        """GE's failed results on ``frame``, translated, with their rules' positions."""
        result_format = {
            "result_format": "SUMMARY",
            "unexpected_index_column_names": _keys(table, frame),
            "partial_unexpected_count": MAX_ROWS,
            "return_unexpected_index_query": False,
        }
        needs = self._needs[table.name]  # only the parameters GE's rules name: it copies them
        with self._lock:
            result = self._definitions[table.name].run(
                batch_parameters={"dataframe": frame},
                expectation_parameters={k: v for k, v in params.items() if k in needs},
                result_format=result_format,
            )
            store = self._context.validation_results_store  # in memory: drop to stay flat
            for key in store.list_keys():
                store.remove_key(key)
        fix = self._fix[table.name]
        order = self._order[table.name]
        return [(order.get(str(r.expectation_config.id), len(order)),
                 failure_of(table.name, r, frame, params, fix))
                for r in result.results if not r.success]


def _keys(table: Table, data: pd.DataFrame | pa.Table) -> list[str]:
    columns = data.columns if isinstance(data, pd.DataFrame) else data.column_names
    return [c for c in table.key if c not in _PARTITION and c in columns]


_ENGINES: dict[bool, Engine] = {}
_ENGINE_LOCK = threading.Lock()


def engine(*, sets_by_ge: bool = False) -> Engine:
    """The per-process engine (building one takes ~0.1 s plus the GE import)."""
    with _ENGINE_LOCK:
        if sets_by_ge not in _ENGINES:
            _ENGINES[sets_by_ge] = Engine(sets_by_ge=sets_by_ge)
        return _ENGINES[sets_by_ge]


def prepare() -> None:
    """Import GE and build the engine now, e.g. in a thread while the stage's Spark reads run:
    in a fresh process that import is most of the validation's cost."""
    engine()


def _pandas(data: pa.Table) -> pd.DataFrame:
    """An Arrow table as the lake's frames give it (jobs/lake/delta_rs.py `frame`)."""
    return data.to_pandas(coerce_temporal_nanoseconds=True)


def with_all_columns(frame: pd.DataFrame, table: Table) -> pd.DataFrame:
    """Give an empty frame the table's columns: an empty period is judged by rows, not schema."""
    if len(frame) or all(c in frame.columns for c in table.columns):
        return frame
    return frame.reindex(columns=[*frame.columns, *(c for c in table.columns if c not in frame)])


def failure_of(
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
        values = res.get("partial_unexpected_list") or []
        for at, row in enumerate(res["partial_unexpected_index_list"]):
            if isinstance(row, Mapping):  # the row key first, then the bad value(s)
                rows.append({**{k: row[k] for k in keys if k in row}, **row})
            else:  # the table lacks its key columns: GE gives the row's label
                rows.append({"row": row, **({column: values[at]}
                                            if column and at < len(values) else {})})
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
        rows=tuple(jsonable(row) for row in rows[:MAX_ROWS]),
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
