"""collect: one period of the landing zone -> keygroup_stats, comm_stats, node_stats (Delta).

Load is expressed in % of a reference node over the period: a key group that used
`cpu_ms` CPU-milliseconds in a period of `P` ms has load 100 * cpu_ms / P (a reference node
offers P CPU-ms per period; a node of capacity weight c offers c * P). Each table's rows for
(job, period) are replaced in one Delta commit, so a rerun leaves exactly one copy.

Before anything is written, the period is checked whole: complete (`_SUCCESS`), every Parquet file
of the landing contract's types, the runtime report well-formed, and every sample sane (no
duplicate samples, no negative counters, at least one sample of key groups and nodes inside the
period's window: what the sums would hide). A period that fails changes nothing.

The three tables are three Delta commits, so a collect is made atomic by a marker: it first removes
the period's collect marker and validation report, writes node_stats, comm_stats and
keygroup_stats, and only then writes the marker (`reports/<job>/<period>/collect.json`, the commit
point). Validate refuses a period without the marker, so a collect interrupted anywhere reads as
"collect did not finish; rerun it", and the rerun completes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from jobs.collect.aggregate import CollectedFrames
from jobs.collect.by_spark import release, replace_from_spark, spark_aggregates
from jobs.collect.engine import NATIVE, EngineChoice, choose_engine, crossover, landed_samples
from jobs.collect.native import collect_frames
from jobs.context import StageContext, run_stage_committing, stage_context
from jobs.errors import StageError
from jobs.facets.load_model import fit_stage
from jobs.facets.subscriptions import FACET_TABLES, check_facet_landing
from jobs.faults import failpoint
from jobs.lake import Lake, Scope, concurrently, io_mode
from jobs.lake.spark_sql import SparkLake
from jobs.markers import clear_period_markers, write_collect_marker
from schemas.config import JobConfig, Paths
from schemas.landing import (
    EDGES,
    KEYGROUPS,
    NODES,
    SCHEMAS,
    SUCCESS_MARKER,
    format_period_end,
    period_dir,
    read_runtime_report,
)
from schemas.tables import COMM_STATS, KEYGROUP_STATS, LOAD_MODEL, NODE_STATS, Table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CollectResult", "check_landing", "collect", "collect_period"]


@dataclass(frozen=True)
class CollectResult:
    job_id: str
    period_end: str
    rows: dict[str, int]  # table -> rows written for the period
    versions: dict[str, int]  # table -> Delta version after the write
    engine: str = NATIVE  # which engine aggregated (jobs/collect/engine.py)

    def summary(self) -> str:
        rows = ", ".join(f"{name} {count} rows (v{self.versions[name]})"
                         for name, count in self.rows.items())
        return f"collect {self.job_id}@{self.period_end}: {rows}"


@dataclass(frozen=True)
class _Gathered:
    """What collect checked and aggregated before taking the lock: each table's rows (Arrow),
    the facet tables among them, the rows each table gets, the landed period's folder."""

    frames: CollectedFrames
    facets: list[Table]
    rows: dict[str, int]
    landed: Path
    engine: str


def check_landing(paths: Paths, job_id: str, period_end: datetime) -> dict[str, list[Path]]:
    """The period's Parquet files by kind, after checking it is complete and readable.

    Runs before Spark touches anything, so a bad period changes no table.
    """
    where = period_dir(paths.landing, job_id, period_end)
    land_cmd = f"reconf land --job {job_id} --period-end {format_period_end(period_end)}"
    if not where.is_dir():
        raise StageError(
            f"no landing data for job {job_id!r}, period ending {format_period_end(period_end)}",
            where=str(where),
            fix=f"let the runtime land the period first (`{land_cmd}`), or pick a landed period",
        )
    if not (where / SUCCESS_MARKER).is_file():
        raise StageError(
            f"period {format_period_end(period_end)} of job {job_id!r} is incomplete "
            f"(no {SUCCESS_MARKER} marker): the runtime has not finished landing it",
            where=str(where),
            fix=f"wait for the runtime to write {SUCCESS_MARKER}, or land the period again (`{land_cmd}`)",
        )
    files: dict[str, list[Path]] = {}
    for kind in (KEYGROUPS, EDGES, NODES):
        found = sorted((where / kind).glob("*.parquet"))
        if kind != EDGES and not found:
            raise StageError(
                f"the period has no {kind} samples",
                where=str(where / kind),
                fix=f"land the period again (`{land_cmd}`)",
            )
        for file in found:
            try:
                schema = pq.read_schema(file)
            except Exception as exc:  # pyarrow raises several types for a damaged file
                raise StageError(
                    f"corrupt Parquet file ({exc})",
                    where=str(file),
                    fix=f"remove the period's directory and land it again (`{land_cmd}`)",
                ) from exc
            _check_columns(file, kind, schema, land_cmd)
        files[kind] = found
    try:
        read_runtime_report(where)
    except ValueError as exc:
        raise StageError(f"the runtime report is malformed: {exc}", where=str(where),
                         fix=f"land the period again (`{land_cmd}`)") from None
    return files


def _check_columns(file: Path, kind: str, schema: pa.Schema, land_cmd: str) -> None:
    """Every column of the landing contract, of exactly its type (Spark would otherwise fail deep
    inside the read, or silently cast)."""
    for want in SCHEMAS[kind]:
        index = schema.get_field_index(want.name)
        got = schema.field(index).type if index >= 0 else None
        if got != want.type:
            problem = "is missing" if got is None else f"has type {got}"
            raise StageError(
                f"{kind} column {want.name!r} {problem}; the landing contract says {want.type}",
                where=str(file),
                fix=f"fix the runtime's {kind} writer (schemas/landing.py, SCHEMAS) and land the "
                    f"period again (`{land_cmd}`)",
            )


def collect(
    job: JobConfig, period_end: datetime, *, paths: Paths, spark: SparkSession
) -> CollectResult:
    """`collect_period` for a caller holding a job and a session (the tests, the bench)."""
    return collect_period(stage_context(job, period_end, paths, spark))


def collect_period(ctx: StageContext) -> CollectResult:
    """Collect one landed period inside the stage frame (jobs/context.py): the landing zone is
    checked, read and aggregated without the lock; the tables, the marker, under it."""
    return run_stage_committing(ctx, "collect", _gather, _commit)


def _gather(ctx: StageContext) -> _Gathered:
    job, period_end, paths = ctx.job, ctx.end, ctx.paths
    files = check_landing(paths, job.job_id, period_end)  # check
    facet_files = check_facet_landing(paths, job, period_end)
    landed = period_dir(paths.landing, job.job_id, period_end)
    choice = _engine(ctx.lake, files, facet_files)
    if choice.engine == NATIVE:  # read, compute
        frames = collect_frames(job, period_end, files, facet_files, landed)
    else:
        frames = spark_aggregates(ctx.spark, job, period_end, files, facet_files, landed)
    facets = [t for t in FACET_TABLES.values() if t.name in frames.tables]
    rows = {KEYGROUP_STATS.name: frames.groups[KEYGROUPS], COMM_STATS.name: frames.groups[EDGES],
            NODE_STATS.name: frames.groups[NODES]}
    rows.update({t.name: frames.tables[t.name].num_rows for t in facets})
    return _Gathered(frames, facets, rows, landed, choice.engine)


def _commit(ctx: StageContext, gathered: _Gathered) -> CollectResult:
    """`_commit_tables`, then the Spark engine's cached aggregates dropped (written or not)."""
    try:
        return _commit_tables(ctx, gathered)
    finally:
        release(gathered.frames.on_cluster.values())


def _commit_tables(ctx: StageContext, gathered: _Gathered) -> CollectResult:
    """Under the job's lock: the period's markers removed, its tables replaced (keygroup_stats
    last), the load model fitted, and the marker written: collect's commit point."""
    job, period_end, paths, lake = ctx.job, ctx.end, ctx.paths, ctx.lake
    frames, facets, rows, landed = (gathered.frames, gathered.facets, dict(gathered.rows),
                                    gathered.landed)
    scope = Scope(job.job_id, period_end)
    # the job's lock is held here (jobs/context.py `run_stage_committing`)
    clear_period_markers(paths, job.job_id, period_end)
    # keygroup_stats last: a reader that finds no key groups says "run collect". The others
    # (and the facet tables: a dynamic job's, declared streams) in one round of commits.
    first = [*facets, NODE_STATS, COMM_STATS]
    concurrently(*(lambda t=t: _replace(lake, frames, t, scope) for t in first))
    for table in first:
        failpoint(f"collect.{table.name}")
    _replace(lake, frames, KEYGROUP_STATS, scope)
    failpoint(f"collect.{KEYGROUP_STATS.name}")
    # the versions after the commits, asked at once
    versions = lake.table_versions(t.name for t in (*first, KEYGROUP_STATS))
    # a job declaring input streams: its load model, fitted on what was just written
    for table, count, version in fit_stage(ctx):
        rows[table.name], versions[table.name] = count, version
    write_collect_marker(paths, job.job_id, period_end, versions, rows,
                         read_runtime_report(landed))
    failpoint("collect.marker")
    ordered = {t.name: rows[t.name] for t in (KEYGROUP_STATS, COMM_STATS, NODE_STATS)}
    ordered.update({t.name: rows[t.name] for t in facets})
    ordered.update({LOAD_MODEL.name: rows[LOAD_MODEL.name]} if LOAD_MODEL.name in rows else {})
    return CollectResult(job.job_id, format_period_end(period_end), ordered, versions,
                         gathered.engine)


def _engine(lake: Lake, files: dict[str, list[Path]], facet_files: dict[str, list[Path]]
            ) -> EngineChoice:
    """The aggregation's engine (jobs/collect/engine.py): Spark with the Spark lake, pyarrow in
    this process with delta-rs, unless `auto` finds more samples than the crossover."""
    spark_lake, mode = isinstance(lake, SparkLake), io_mode()
    if spark_lake or mode != "auto":  # the footers are read only when the rule needs them
        return choose_engine(mode, spark_lake, 0, 0)
    landed = [f for group in (*files.values(), *facet_files.values()) for f in group]
    return choose_engine(mode, False, landed_samples(landed), crossover())


def _replace(lake: Lake, frames: CollectedFrames, table: Table, scope: Scope) -> None:
    """One table's period rows replaced: by the lake from Arrow, or by Spark from the cluster
    (an aggregate `spark_aggregates` left there) into the same Delta table."""
    if table.name in frames.on_cluster:
        replace_from_spark(frames.on_cluster[table.name], table, lake.paths.table(table.name),
                           scope.sql)
    else:
        lake.replace(table, frames.tables[table.name], scope)
