"""The `Lake`: the questions the stages ask of the Delta tables, and the writes they make.

A stage opens its lake once (`open_lake`, jobs/lake/__init__.py) and asks it named questions
(a period's rows of a table, the newest published version, where a plan starts, the period's
attempts, …); it never writes SQL. Each question is written here once, as the plain SQL both
Spark and DataFusion accept (`{table}` names a table of schemas/tables.py; comparisons,
`TIMESTAMP '…'` literals, `CASE WHEN`, `max`/`count`, `IN`, a join, `ORDER BY … LIMIT`), over a
handful of primitives each engine implements: run a query (records, a pandas frame), a table's
Delta version, create a table, replace the rows a predicate matches, update them. Strings and
timestamps enter the SQL only through jobs/lake/literals.py (`quote`, `timestamp`). The engines
are jobs/lake/delta_rs.py (delta-rs in the stage's process) and jobs/lake/spark_sql.py (the
stage's Spark session); tests/jobs/test_lake_contract.py asks both the same questions.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from jobs.errors import StageError
from jobs.lake.literals import quote, timestamp
from schemas.attempts import PlanStatus, own_version_patterns
from schemas.config import Paths
from schemas.landing import RuntimeReport
from schemas.tables import ASSIGNMENT_VERSIONS, ASSIGNMENTS, PLAN_MOVES, PLANS, TABLES, Table

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["Lake", "Scope", "Start", "VersionLog", "concurrently", "quote", "timestamp"]

_PUBLISHED = quote(PlanStatus.PUBLISHED)  # the status of a published plan and version, in SQL


def concurrently(*calls: Callable[[], Any]) -> list[Any]:
    """The calls' results, in order, the calls run at once.

    Each small Spark query costs mostly latency (planning, a Delta snapshot update, scheduling,
    a round trip), not cores, so independent queries of a stage overlap well. Both sessions take
    queries from several threads: a Spark Connect client is thread-safe, and the in-process
    session runs each thread's jobs in parallel (PySpark's pinned threads).
    """
    if len(calls) <= 1:
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="reconf-query") as pool:
        return list(pool.map(lambda call: call(), calls))


@dataclass(frozen=True)
class Scope:
    """Which rows of a job a write replaces: a period's, one plan attempt's, or one version's."""

    job_id: str
    period_end: datetime | None = None
    plan_id: str | None = None
    version: int | None = None

    @property
    def sql(self) -> str:
        """The predicate, as Spark's `replaceWhere` and delta-rs (jobs/lake/write.py) take it."""
        parts = [f"job_id = {quote(self.job_id)}"]
        if self.period_end is not None:
            parts.append(f"period_end = {timestamp(self.period_end)}")
        if self.plan_id is not None:
            parts.append(f"plan_id = {quote(self.plan_id)}")
        if self.version is not None:
            parts.append(f"version = {int(self.version)}")
        return " AND ".join(parts)


@dataclass(frozen=True)
class Start:
    """Where a plan of a period starts: what the runtime ran at the period's end.

    `version` is the assignment version the plan starts from (None: the runtime's initial
    allocation, whose placement the key-group stats report); `newest` the newest version published
    for an earlier period when the plan was made (publish refuses the plan if another version has
    been published since); `note` says why the two differ, for the operator.
    """

    version: int | None
    assignment: dict[str, str]
    newest: int | None
    note: str = ""


@dataclass(frozen=True)
class VersionLog:
    """What publish needs of a job's version log: the newest version, how many versions are of
    periods after the given one, and that period's own version row (or None)."""

    newest: int | None
    newer: int
    mine: dict[str, Any] | None


class Lake(ABC):
    """The lake of one RECONF_HOME, through one engine (the module docstring)."""

    engine: ClassVar[str]  # "delta-rs" or "spark"

    def __init__(self, paths: Paths) -> None:
        self.paths = paths

    # -- the primitives each engine implements ---------------------------------------------

    @abstractmethod
    def records(self, sql: str) -> list[dict[str, Any]]:
        """The result of `sql` as one dict per row (what `Row.asDict()` gives; timestamps naive
        UTC). Only the questions below and jobs/lake's tests write SQL."""

    @abstractmethod
    def frame(self, sql: str) -> pd.DataFrame:
        """The result of `sql` as a pandas frame (what `DataFrame.toPandas()` gives)."""

    @abstractmethod
    def arrow(self, sql: str) -> pa.Table:
        """The result of `sql` as an Arrow table, columnar end to end (no per-row Python
        objects): timestamps naive UTC, strings plain `string` whichever engine ran it."""

    @abstractmethod
    def table_version(self, name: str) -> int:
        """The table's newest Delta version (-1 if it has no commit)."""

    @abstractmethod
    def _create(self, table: Table) -> None:
        """Create the table, empty and partitioned by job_id, unless it exists."""

    @abstractmethod
    def _replace(self, table: Table, data: pa.Table, where: str) -> None:
        """Atomically replace the rows matching `where` with `data` (one Delta commit)."""

    @abstractmethod
    def _update(self, table: Table, values: dict[str, str], where: str) -> None:
        """`UPDATE table SET column = <SQL literal> … WHERE where`, one commit."""

    # -- tables and writes -------------------------------------------------------------------

    def ensure_tables(self) -> None:
        """Create every table of the contract (empty, partitioned by job_id) that does not exist;
        a table whose log already has a commit is skipped."""
        for table in TABLES.values():
            log = self.paths.lake / table.name / "_delta_log"
            if any(log.glob("*.json")):
                continue
            try:
                self._create(table)
            except Exception:
                # Another job's first run may be creating it right now (its directory exists,
                # its first commit not yet): wait for that commit rather than fail.
                deadline = time.monotonic() + 60.0
                while not any(log.glob("*.json")):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)

    def replace(self, table: Table, data: pa.Table, scope: Scope | str) -> None:
        """Replace the scope's rows of `table` with `data` (an Arrow table of its columns)."""
        self._replace(table, data, scope if isinstance(scope, str) else scope.sql)

    def write_records(self, table: Table, records: list[dict[str, Any]], scope: Scope | str
                      ) -> None:
        """`replace` for rows made in Python (one dict per row; naive datetimes are UTC)."""
        from jobs.lake.write import records_table

        self.replace(table, records_table(records, table), scope)

    def update(self, table: Table, values: dict[str, str], scope: Scope | str) -> None:
        """Set columns (values: SQL literals) of the scope's rows, in one commit."""
        self._update(table, values, scope if isinstance(scope, str) else scope.sql)

    def set_plan_status(self, job_id: str, period_end: datetime, plan_id: str, status: str
                        ) -> None:
        """One plan attempt's status."""
        self.update(PLANS, {"status": quote(status)}, Scope(job_id, period_end, plan_id))

    def settle_plan_statuses(self, job_id: str, period_end: datetime, published: str,
                             others: str) -> None:
        """The published attempt `published`, the period's waiting (`planned`) ones `others`, in
        one commit."""
        self.update(PLANS, {"status": f"CASE WHEN plan_id = {quote(published)} THEN {_PUBLISHED} "
                                      f"ELSE {quote(others)} END"},
                    f"{Scope(job_id, period_end).sql} AND (plan_id = {quote(published)} "
                    f"OR status = {quote(PlanStatus.PLANNED)})")

    def table_versions(self, names: Iterable[str]) -> dict[str, int]:
        """The newest Delta version of each table, looked up at once."""
        names = list(names)
        found = concurrently(*(lambda n=n: self.table_version(n) for n in names))
        return dict(zip(names, found, strict=True))

    # -- a period's rows -----------------------------------------------------------------------

    def _select(self, table: Table | str, where: str, columns: Sequence[str] | None,
                ordered: bool) -> str:
        table = table if isinstance(table, Table) else TABLES[table]
        order = f" ORDER BY {', '.join(table.key)}" if ordered else ""
        return (f"SELECT {', '.join(columns) if columns else '*'} FROM {{{table.name}}} "
                f"WHERE {where}{order}")

    def period_rows(self, table: Table | str, job_id: str, period_end: datetime,
                    columns: Sequence[str] | None = None, *, ordered: bool = False
                    ) -> list[dict[str, Any]]:
        """The period's rows of `table` (in key order if `ordered`: what a plan reads must not
        depend on how a writer laid out the table's files)."""
        return self.records(self._select(table, Scope(job_id, period_end).sql, columns, ordered))

    def period_frame(self, table: Table | str, job_id: str, period_end: datetime,
                     columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The period's rows of `table` as a pandas frame."""
        return self.frame(self._select(table, Scope(job_id, period_end).sql, columns, False))

    def period_arrow(self, table: Table | str, job_id: str, period_end: datetime,
                     columns: Sequence[str] | None = None, *, ordered: bool = False) -> pa.Table:
        """The period's rows of `table` as an Arrow table (in key order if `ordered`): what a
        stage reading O(units) or O(edges) rows takes, so no row becomes a Python object."""
        return self.arrow(self._select(table, Scope(job_id, period_end).sql, columns, ordered))

    def periods_frame(self, table: Table | str, job_id: str, after: datetime, through: datetime,
                      columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The rows of the periods ending in (after, through] as a pandas frame."""
        where = (f"job_id = {quote(job_id)} AND period_end > {timestamp(after)} "
                 f"AND period_end <= {timestamp(through)}")
        return self.frame(self._select(table, where, columns, False))

    def rows_of_jobs(self, table: Table | str, job_ids: Sequence[str], period_end: datetime
                     ) -> dict[str, list[dict[str, Any]]]:
        """One query for many jobs: the period's rows of `table`, by job id."""
        out: dict[str, list[dict[str, Any]]] = {}
        if not job_ids:
            return out
        where = (f"job_id IN ({', '.join(map(quote, job_ids))}) "
                 f"AND period_end = {timestamp(period_end)}")
        for row in self.records(self._select(table, where, None, True)):
            out.setdefault(row["job_id"], []).append(row)
        return out

    def latest_period(self, table: Table | str, job_id: str, before: datetime) -> datetime | None:
        """The end of the job's newest period before `before` that has rows in `table` (naive
        UTC, as every timestamp a question returns)."""
        name = table if isinstance(table, str) else table.name
        rows = self.records(f"SELECT max(period_end) AS latest FROM {{{name}}} "
                            f"WHERE job_id = {quote(job_id)} AND period_end < {timestamp(before)}")
        return rows[0]["latest"] if rows else None

    # -- plans and versions --------------------------------------------------------------------

    def plan_ids(self, job_id: str, period_end: datetime) -> list[str]:
        """The ids of the period's plan attempts (in no particular order)."""
        return [str(r["plan_id"]) for r in self.period_rows(PLANS, job_id, period_end,
                                                            ("plan_id",))]

    def period_version(self, job_id: str, period_end: datetime) -> dict[str, Any] | None:
        """The version published for the period (version, plan_id, checksum, manifest_path): the
        period's own, never a rollback's or a healing's planned on its statistics (a version of
        its own, schemas/attempts.py `own_version_id`)."""
        attempts = "".join(f" AND plan_id NOT LIKE {quote(p)}" for p in own_version_patterns())
        rows = self.records(
            f"SELECT version, plan_id, checksum, manifest_path FROM {{{ASSIGNMENT_VERSIONS.name}}} "
            f"WHERE {Scope(job_id, period_end).sql}{attempts} ORDER BY version DESC LIMIT 1")
        return rows[0] if rows else None

    def version_row(self, job_id: str, version: int) -> dict[str, Any] | None:
        """One version's row (version, plan_id, period_end, checksum, status), or None."""
        rows = self.records(
            f"SELECT version, plan_id, period_end, checksum, status FROM "
            f"{{{ASSIGNMENT_VERSIONS.name}}} WHERE {Scope(job_id, version=version).sql}")
        return rows[0] if rows else None

    def version_log(self, job_id: str, period_end: datetime) -> VersionLog:
        """The job's newest version, the versions of later periods, the period's own, at once."""
        counts, mine = concurrently(
            lambda: self.records(
                f"SELECT max(version) AS newest, count(CASE WHEN period_end > "
                f"{timestamp(period_end)} THEN 1 END) AS newer FROM "
                f"{{{ASSIGNMENT_VERSIONS.name}}} WHERE job_id = {quote(job_id)}"),
            lambda: self.period_version(job_id, period_end))
        newest = counts[0]["newest"]
        return VersionLog(None if newest is None else int(newest), int(counts[0]["newer"]), mine)

    def published_plans(self, job_id: str, before: datetime) -> list[dict[str, Any]]:
        """The published plans' rows (period_end, plan_json) of periods before `before`, oldest
        first."""
        return self.records(
            f"SELECT period_end, plan_json FROM {{{PLANS.name}}} WHERE job_id = {quote(job_id)} "
            f"AND status = {_PUBLISHED} AND period_end < {timestamp(before)} ORDER BY period_end")

    def published_moves(self, job_id: str, before: datetime, periods: int
                        ) -> list[list[tuple[str, str, str]]]:
        """The moves (keygroup, src, dst) of the job's newest `periods` published plans of
        periods before `before`, one list per period, oldest first (placement/stability.py)."""
        if periods <= 0:
            return []
        ends = self.records(
            f"SELECT DISTINCT period_end FROM {{{PLANS.name}}} WHERE job_id = {quote(job_id)} "
            f"AND status = {_PUBLISHED} AND period_end < {timestamp(before)} "
            f"ORDER BY period_end DESC LIMIT {int(periods)}")
        if not ends:
            return []
        first = min(r["period_end"] for r in ends)  # naive UTC, as the lake returns it
        first = first if first.tzinfo else first.replace(tzinfo=UTC)
        rows = self.records(
            f"SELECT m.period_end, m.keygroup, m.src_node, m.dst_node FROM "
            f"{{{PLAN_MOVES.name}}} m JOIN {{{PLANS.name}}} p ON m.job_id = p.job_id AND "
            f"m.period_end = p.period_end AND m.plan_id = p.plan_id WHERE "
            f"m.job_id = {quote(job_id)} AND p.status = {_PUBLISHED} AND "
            f"m.period_end >= {timestamp(first)} AND m.period_end < {timestamp(before)} "
            f"ORDER BY m.period_end, m.keygroup")
        by_end: dict[Any, list[tuple[str, str, str]]] = {r["period_end"]: [] for r in ends}
        for r in rows:
            by_end.setdefault(r["period_end"], []).append(
                (str(r["keygroup"]), str(r["src_node"]), str(r["dst_node"])))
        return [by_end[end] for end in sorted(by_end)]

    def newest_version(self, job_id: str, before: datetime | None = None) -> int | None:
        """The newest published version of the job (for a period before `before`, if given)."""
        cond = f"job_id = {quote(job_id)} AND status = {_PUBLISHED}"
        if before is not None:
            cond += f" AND period_end < {timestamp(before)}"
        rows = self.records(f"SELECT max(version) AS newest FROM {{{ASSIGNMENT_VERSIONS.name}}} "
                            f"WHERE {cond}")
        return None if not rows or rows[0]["newest"] is None else int(rows[0]["newest"])

    def published_assignment(self, job_id: str, version: int) -> dict[str, str]:
        """keygroup -> node of one published version (empty if the version does not exist)."""
        rows = self.records(f"SELECT keygroup, node FROM {{{ASSIGNMENTS.name}}} "
                            f"WHERE {Scope(job_id, version=version).sql}")
        return {r["keygroup"]: r["node"] for r in rows}

    def last_published(self, job_id: str, before: datetime) -> tuple[int | None, dict[str, str]]:
        """(version, keygroup -> node) of the newest version published for a period before
        `before`. A rerun of a period sees exactly what its first run saw: never a version of the
        same or a later period."""
        version = self.newest_version(job_id, before)
        if version is None:
            return None, {}
        return version, self.published_assignment(job_id, version)

    def last_published_of_jobs(self, job_ids: Sequence[str], before: datetime
                                ) -> dict[str, tuple[int, dict[str, str]]]:
        """`last_published` for many jobs in one query: job -> (version, assignment); a job
        without a published version is absent."""
        if not job_ids:
            return {}
        newest = (f"SELECT job_id, max(version) AS version FROM {{{ASSIGNMENT_VERSIONS.name}}} "
                  f"WHERE job_id IN ({', '.join(map(quote, job_ids))}) AND status = {_PUBLISHED} "
                  f"AND period_end < {timestamp(before)} GROUP BY job_id")
        rows = self.records(
            f"SELECT a.job_id AS job_id, a.version AS version, a.keygroup AS keygroup, "
            f"a.node AS node FROM {{{ASSIGNMENTS.name}}} a JOIN ({newest}) n "
            "ON a.job_id = n.job_id AND a.version = n.version ORDER BY a.job_id, a.keygroup")
        out: dict[str, tuple[int, dict[str, str]]] = {}
        for r in rows:
            out.setdefault(r["job_id"], (int(r["version"]), {}))[1][r["keygroup"]] = r["node"]
        return out

    def starting_point(self, job_id: str, period_end: datetime, runtime: RuntimeReport | None
                       ) -> Start:
        """The version the runtime is known to run (its report), else the newest published one.

        Planning from what runs, not from what was published, means a version the runtime
        refused (or has not applied yet) never becomes the base of later plans, and the budget
        always bounds the moves the runtime will actually make.
        """
        newest, assignment = self.last_published(job_id, period_end)
        return start_from(self, job_id, newest, assignment, runtime)


def start_from(lake: Lake, job_id: str, newest: int | None, assignment: dict[str, str],
               runtime: RuntimeReport | None) -> Start:
    """`Lake.starting_point` once the newest published version (`newest`, `assignment`) is
    known (fleet planning looks it up for many jobs at once)."""
    if runtime is not None and runtime.assignment is not None:
        # a schedule stopped or failed between waves (runtime/execution.py): plan from the
        # partial assignment the runtime reports, so no unit is assumed where it is not
        return Start(runtime.version, dict(runtime.assignment), newest,
                     f"the runtime runs a partial assignment (a schedule towards v{newest} stopped "
                     "or failed between waves); planned from what it runs")
    if runtime is None or runtime.version == newest:
        return Start(newest, assignment, newest)
    if runtime.version is None:
        return Start(None, {}, newest,
                     f"the runtime still ran its initial allocation, not v{newest}; planned from "
                     "what it runs")
    running = lake.published_assignment(job_id, runtime.version)
    if not running:
        raise StageError(
            f"the runtime reports running v{runtime.version} of job {job_id!r}, which reconf "
            "never published",
            where=lake.paths.table(ASSIGNMENT_VERSIONS.name),
            fix="check that the runtime and this pipeline share one RECONF_HOME (published/ and "
                "lake/); then land and collect the period again",
        )
    what = ("has not applied it yet, or refused it: see the runtime's log"
            if newest is not None and runtime.version < newest else "runs a newer version")
    return Start(runtime.version, running, newest,
                 f"the runtime ran v{runtime.version}, not v{newest} (it {what}); planned from "
                 f"v{runtime.version}")
