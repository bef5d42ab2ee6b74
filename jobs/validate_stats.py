"""validate: one collected period, checked by the GE suites of schemas/expectations/.

The job's key groups are those of the newest published assignment (every one of them must be
reported exactly once); before anything is published, those of the previous collected period; for
a job's very first period, the reported ones (then only uniqueness can be checked). Known nodes
are the nodes the runtime reported for the period. The report is written to
`reports/<job>/<period_end>/validation.json` whatever the verdict, and the plan stage logs it
to MLflow; a failure raises `StageError`, which stops the cycle before planning.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from jobs.errors import StageError
from jobs.lake import ensure_tables, last_published, period_predicate, read_table
from jobs.validation import ValidationReport, validate_stats
from schemas.config import JobConfig, Paths
from schemas.landing import format_period_end
from schemas.manifest import atomic_write_bytes
from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ValidateResult", "read_report", "report_path", "validate_period"]


@dataclass(frozen=True)
class ValidateResult:
    report: ValidationReport
    report_path: Path
    expected_from: str  # where the job's key-group set came from


def report_path(paths: Paths, job_id: str, period_end: datetime) -> Path:
    return paths.reports / job_id / format_period_end(period_end) / "validation.json"


def read_report(paths: Paths, job_id: str, period_end: datetime) -> dict[str, Any] | None:
    path = report_path(paths, job_id, period_end)
    return json.loads(path.read_text()) if path.is_file() else None


def _expected_keygroups(
    spark: SparkSession, paths: Paths, job_id: str, period_end: datetime, reported: set[str]
) -> tuple[set[str], str]:
    from pyspark.sql import functions as F

    version, assignment = last_published(spark, paths, job_id, period_end)
    if version is not None:
        return set(assignment), f"published assignment v{version}"
    previous = (
        read_table(spark, paths, KEYGROUP_STATS)
        .where((F.col("job_id") == job_id) & (F.col("period_end") < F.lit(period_end)))
        .agg(F.max("period_end"))
        .first()
    )
    if previous is not None and previous[0] is not None:
        rows = read_table(spark, paths, KEYGROUP_STATS).where(
            (F.col("job_id") == job_id) & (F.col("period_end") == F.lit(previous[0]))
        ).select("keygroup").collect()
        return {r[0] for r in rows}, f"previous period {previous[0].isoformat()}"
    return reported, "this period (first period of the job)"


def validate_period(
    job: JobConfig, period_end: datetime, *, paths: Paths, spark: SparkSession
) -> ValidateResult:
    ensure_tables(spark, paths)
    where = period_predicate(job.job_id, period_end)
    stamp = format_period_end(period_end)
    keygroups: pd.DataFrame = read_table(spark, paths, KEYGROUP_STATS).where(where).toPandas()
    if keygroups.empty:
        raise StageError(
            f"no statistics collected for job {job.job_id!r}, period ending {stamp}",
            where=paths.table(KEYGROUP_STATS.name),
            fix=f"run `reconf collect --job {job.job_id} --period-end {stamp}` first",
        )
    edges: pd.DataFrame = read_table(spark, paths, COMM_STATS).where(where).toPandas()
    nodes: pd.DataFrame = read_table(spark, paths, NODE_STATS).where(where).toPandas()
    if nodes.empty:
        raise StageError(
            f"the runtime reported no nodes for job {job.job_id!r}, period ending {stamp}",
            where=paths.table(NODE_STATS.name),
            fix="fix the runtime's node metrics and land the period again",
        )
    expected, expected_from = _expected_keygroups(
        spark, paths, job.job_id, period_end, set(keygroups["keygroup"].dropna())
    )
    report = validate_stats(
        keygroups, edges, nodes,
        expected_keygroups=expected, known_nodes=set(nodes["node"].dropna()),
    )
    path = report_path(paths, job.job_id, period_end)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"job_id": job.job_id, "period_end": stamp, "expected_keygroups_from": expected_from,
                **report.to_dict()}
    atomic_write_bytes(path, json.dumps(document, indent=2, sort_keys=True).encode())
    if not report.success:
        raise StageError(
            report.summary(),
            where=f"job {job.job_id!r}, period ending {stamp} (report: {path})",
            fix="nothing was planned or published and the runtime keeps its assignment; "
            "fix the runtime's metrics and land the period again",
        )
    return ValidateResult(report, path, expected_from)
