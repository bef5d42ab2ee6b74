"""The Spark lake's ordered reads are sorted by the driver (jobs/lake/spark_sql.py): the order of
Spark's own ORDER BY (binary strings, nulls first), for fewer Spark jobs than the ORDER BY."""

from __future__ import annotations

from typing import Any

import pytest
from pipeline_kit import JOB_ID, P1
from test_collect_spark_work import _jobs_of

from jobs.lake import Scope
from jobs.lake.spark_sql import SparkLake
from schemas.config import Paths
from schemas.tables import KEYGROUP_STATS

pytestmark = pytest.mark.spark

KEYGROUPS = ["b", "B", "a", "é", "z", "a10", "a9", None, "Z", "ä", ""]


def test_ordered_reads_give_spark_order_by_s_rows_in_fewer_jobs(home: Paths, spark: Any) -> None:
    lake = SparkLake(home, spark)
    lake.write_records(KEYGROUP_STATS, [
        {"job_id": JOB_ID, "period_end": P1, "period_start": P1, "keygroup": kg, "node": "n",
         "load_pct": float(i), "samples": 1} for i, kg in enumerate(KEYGROUPS)],
        Scope(JOB_ID, P1))
    by_spark, order_by_jobs = _jobs_of(spark, lambda: lake.records(
        lake._select(KEYGROUP_STATS, Scope(JOB_ID, P1).sql, None, True)))
    rows, jobs = _jobs_of(spark, lambda: lake.period_rows(KEYGROUP_STATS, JOB_ID, P1,
                                                          ordered=True))
    assert [r["keygroup"] for r in by_spark] == [None, "", "B", "Z", "a", "a10", "a9", "b", "z",
                                                 "ä", "é"]
    assert rows == by_spark
    assert lake.period_arrow(KEYGROUP_STATS, JOB_ID, P1, ordered=True).to_pylist() == by_spark
    # the plan's read: some columns, the key among them (a period's job_id and period_end are
    # one value each)
    some = ["load_pct", "keygroup"]
    assert lake.period_arrow(KEYGROUP_STATS, JOB_ID, P1, some, ordered=True).to_pylist() == [
        {c: r[c] for c in some} for r in by_spark]
    assert lake.period_rows(KEYGROUP_STATS, JOB_ID, P1, ["load_pct"], ordered=True) == [
        {"load_pct": r["load_pct"]} for r in by_spark]  # without the key: Spark's ORDER BY
    assert jobs < order_by_jobs, (jobs, order_by_jobs)
