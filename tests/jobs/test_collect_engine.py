"""Which engine collect aggregates with (jobs/collect/engine.py), and `auto` going to Spark.

The rule is tested on its own over all inputs (the measured crossover included); one real-Spark
test has `auto` pick Spark above a tiny configured crossover, write the aggregates to Delta from
Spark, and leave exactly the rows the pyarrow engine writes.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from hypothesis import given
from hypothesis import strategies as st
from pipeline_kit import P1, land

from jobs.collect.engine import (
    CROSSOVER_ENV,
    NATIVE,
    SPARK,
    SPARK_ABOVE_SAMPLES,
    choose_engine,
    crossover,
    landed_samples,
)
from jobs.collect.stage import collect
from jobs.errors import StageError
from schemas.config import Paths
from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS

STATS = (KEYGROUP_STATS, COMM_STATS, NODE_STATS)
counts = st.integers(min_value=0, max_value=10**12)


@given(samples=counts, above=counts)
def test_auto_goes_to_spark_exactly_above_the_crossover(samples: int, above: int) -> None:
    got = choose_engine("auto", False, samples, above)
    assert got.engine == (SPARK if samples > above else NATIVE)
    assert got.samples == samples and got.crossover == above
    assert f"{samples:,}" in got.reason


@given(samples=counts, above=counts)
def test_native_never_and_the_spark_lake_always_aggregate_on_spark(samples: int, above: int
                                                                   ) -> None:
    assert choose_engine("native", False, samples, above).engine == NATIVE
    for mode in ("auto", "spark"):
        assert choose_engine(mode, True, samples, above).engine == SPARK


def test_the_measured_crossover_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CROSSOVER_ENV, raising=False)
    assert crossover() == SPARK_ABOVE_SAMPLES
    # a period of 10^6 samples stays in the stage's process, one of 10^8 goes to Spark
    assert choose_engine("auto", False, 10**6, crossover()).engine == NATIVE
    assert choose_engine("auto", False, 10**8, crossover()).engine == SPARK
    assert SPARK_ABOVE_SAMPLES == 50_000_000  # docs/benchmarks.md, "collect on Spark at 10^8"
    for raw, want in (("3e7", 30_000_000), ("1_000", 1000), (" 0 ", 0)):
        monkeypatch.setenv(CROSSOVER_ENV, raw)
        assert crossover() == want


@pytest.mark.parametrize("raw", ["many", "-5", "1.5.2"])
def test_a_bad_crossover_is_refused_with_what_where_and_fix(monkeypatch: pytest.MonkeyPatch,
                                                            raw: str) -> None:
    monkeypatch.setenv(CROSSOVER_ENV, raw)
    with pytest.raises(StageError) as caught:
        crossover()
    assert caught.value.what.startswith(f"{CROSSOVER_ENV}={raw!r} is not a number of samples")
    assert caught.value.where == f"the environment variable {CROSSOVER_ENV}"
    assert "unset it" in caught.value.fix


def test_landed_samples_are_counted_from_the_footers(tmp_path) -> None:
    files = []
    for i, n in enumerate((0, 7, 1000)):
        files.append(tmp_path / f"part-{i}.parquet")
        pq.write_table(pa.table({"x": list(range(n))}), files[-1], row_group_size=300)
    assert landed_samples(files) == 1007
    assert landed_samples([]) == 0


def _period_rows(paths: Paths) -> dict[str, list[dict[str, Any]]]:
    """Each stats table's P1 rows, read by delta-rs, in key order."""
    out = {}
    for table in STATS:
        rows = DeltaTable(paths.table(table.name)).to_pyarrow_table().to_pylist()
        rows = [r for r in rows if r["period_end"].replace(tzinfo=None) == P1.replace(tzinfo=None)]
        out[table.name] = sorted(rows, key=lambda r: tuple(str(r[k]) for k in table.key))
    return out


@pytest.mark.spark
def test_auto_above_a_tiny_crossover_collects_on_spark_the_rows_native_collects(
        home: Paths, job, spark, monkeypatch: pytest.MonkeyPatch) -> None:
    land(home, P1, job)
    monkeypatch.setenv("RECONF_LAKE_IO", "auto")
    monkeypatch.setenv(CROSSOVER_ENV, "10")  # the tiny job lands more than 10 samples
    on_spark = collect(job, P1, paths=home, spark=spark)
    assert on_spark.engine == SPARK
    spark_rows = _period_rows(home)

    monkeypatch.setenv(CROSSOVER_ENV, str(10**9))  # the same period, now within the crossover
    native = collect(job, P1, paths=home, spark=spark)
    assert native.engine == NATIVE
    assert native.rows == on_spark.rows and all(n > 0 for n in native.rows.values())
    # each table got one commit per collect, Spark's read back by delta-rs like its own
    for table in STATS:
        assert native.versions[table.name] == on_spark.versions[table.name] + 1
    assert _period_rows(home) == spark_rows
    assert {t: len(r) for t, r in spark_rows.items()} == on_spark.rows
