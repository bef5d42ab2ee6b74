"""collect: landing zone -> Delta stats tables, on real Spark + Delta."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from delta.tables import DeltaTable
from pipeline_kit import (
    JOB_ID,
    P1,
    P2,
    PERIOD_MS,
    SPL,
    all_keygroups,
    delta_versions,
    land,
    of_period,
    rows,
)

from jobs.collect.stage import collect
from jobs.lake.base import table_version
from runtime.source import write_period
from schemas.landing import EDGES, KEYGROUPS, NODES, SCHEMAS
from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS

pytestmark = pytest.mark.spark

STATS = (KEYGROUP_STATS, COMM_STATS, NODE_STATS)


def _key_counts(frame: pd.DataFrame, key: tuple[str, ...]) -> pd.Series:
    return frame.groupby(list(key), dropna=False).size()


def test_collect_twice_keeps_one_copy_and_adds_a_commit(collected_home, job, spark):
    paths = collected_home  # P1 and P2 collected once (template)
    first = {t.name: table_version(spark, paths, t.name) for t in STATS}

    again = collect(job, P1, paths=paths, spark=spark)

    for table in STATS:
        # exactly one new Delta commit per table, and collect reports that version
        assert again.versions[table.name] == first[table.name] + 1
        history: pd.DataFrame = (
            DeltaTable.forPath(spark, paths.table(table.name)).history().toPandas()
        )
        assert sorted(history["version"]) == list(range(first[table.name] + 2))
        assert history.set_index("version").loc[first[table.name] + 1, "operation"] == "WRITE"

        everything = rows(spark, paths, table.name)
        p1 = everything[everything["period_end"] == pd.Timestamp(P1).tz_localize(None)]
        p2 = everything[everything["period_end"] == pd.Timestamp(P2).tz_localize(None)]
        # one copy: the rerun replaced P1's rows, left P2's alone, and keys stay unique
        assert len(p1) == again.rows[table.name] > 0
        assert len(p2) == again.rows[table.name]  # the tiny job lands the same shape each period
        assert len(everything) == len(p1) + len(p2)
        assert _key_counts(everything, table.key).max() == 1

        # time travel: the version before the rerun holds the same P1 rows as the one after
        before = (
            spark.read.format("delta").option("versionAsOf", first[table.name])
            .load(paths.table(table.name)).where(of_period(P1)).toPandas()
        )
        cols = sorted(table.columns)
        key = list(table.key)
        assert len(before) == len(p1)
        pd.testing.assert_frame_equal(
            before[cols].sort_values(key).reset_index(drop=True),
            p1[cols].sort_values(key).reset_index(drop=True),
        )

    kg = rows(spark, paths, KEYGROUP_STATS.name, of_period(P1))
    assert set(kg["keygroup"]) == all_keygroups()


def _landed(paths, period_end, kind: str) -> pd.DataFrame:
    return pq.read_table(next((paths.landing / JOB_ID).glob(
        f"period_end={period_end:%Y-%m-%dT%H:%M:%SZ}/{kind}/*.parquet"
    ))).to_pandas()


def test_collect_arithmetic_matches_pandas_on_the_landed_parquet(home, job, spark):
    paths = home
    where = land(paths, P1, job)
    # Add samples just outside the period [P1 - SPL, P1): the period's end belongs to the next
    # period, a sample before its start to the previous one; collect must ignore both.
    tables = {kind: pq.read_table(where / kind / "part-0.parquet") for kind in (KEYGROUPS, EDGES, NODES)}
    outside = [pd.Timestamp(P1), pd.Timestamp(P1 - SPL) - pd.Timedelta(microseconds=1)]
    extra = {}
    for kind, table in tables.items():
        frame = table.to_pandas()
        stray = pd.concat([frame.head(2).assign(ts=ts) for ts in outside], ignore_index=True)
        for column in ("cpu_ms", "tuples_in", "tuples", "bytes"):
            if column in stray:
                stray[column] = stray[column] * 1000  # would be obvious in any sum
        extra[kind] = pa.Table.from_pandas(
            pd.concat([frame, stray], ignore_index=True), schema=SCHEMAS[kind], preserve_index=False
        )
    write_period(paths.landing, JOB_ID, P1, extra)

    result = collect(job, P1, paths=paths, spark=spark)

    start, end = pd.Timestamp(P1 - SPL), pd.Timestamp(P1)

    def in_period(kind: str) -> pd.DataFrame:
        frame = _landed(paths, P1, kind)
        assert len(frame) == len(tables[kind]) + 4  # the strays are in the landed file
        return frame[(frame["ts"] >= start) & (frame["ts"] < end)]

    kg_in = in_period(KEYGROUPS)
    expected_kg = kg_in.sort_values("ts").groupby("keygroup").agg(
        operator=("operator", "last"), node=("node", "last"), tuples_in=("tuples_in", "sum"),
        tuples_out=("tuples_out", "sum"), cpu_ms=("cpu_ms", "sum"),
        state_bytes=("state_bytes", "last"), samples=("ts", "size"),
    )
    expected_kg["load_pct"] = 100.0 * expected_kg["cpu_ms"] / PERIOD_MS
    got_kg = rows(spark, paths, KEYGROUP_STATS.name, of_period(P1)).set_index("keygroup")
    assert result.rows[KEYGROUP_STATS.name] == len(got_kg) == len(all_keygroups())
    got_kg = got_kg.loc[expected_kg.index]
    for column in ("operator", "node", "tuples_in", "tuples_out", "state_bytes", "samples"):
        assert got_kg[column].tolist() == expected_kg[column].tolist(), column
    np.testing.assert_allclose(got_kg["cpu_ms"], expected_kg["cpu_ms"], rtol=1e-12)
    np.testing.assert_allclose(got_kg["load_pct"], expected_kg["load_pct"], rtol=1e-12)
    assert (got_kg["period_start"] == start.tz_localize(None)).all()
    assert (got_kg["period_end"] == end.tz_localize(None)).all()
    assert (got_kg["job_id"] == JOB_ID).all()

    edges_in = in_period(EDGES)
    expected_comm = edges_in.groupby(["src_keygroup", "dst_keygroup"]).agg(
        tuples=("tuples", "sum"), bytes=("bytes", "sum")
    )
    expected_comm["tuples_per_s"] = expected_comm["tuples"] / SPL.total_seconds()
    got_comm = rows(spark, paths, COMM_STATS.name, of_period(P1)).set_index(
        ["src_keygroup", "dst_keygroup"]
    )
    assert len(got_comm) == len(expected_comm) > 0
    got_comm = got_comm.loc[expected_comm.index]
    assert got_comm["tuples"].tolist() == expected_comm["tuples"].tolist()
    assert got_comm["bytes"].tolist() == expected_comm["bytes"].tolist()
    np.testing.assert_allclose(got_comm["tuples_per_s"], expected_comm["tuples_per_s"], rtol=1e-12)

    nodes_in = in_period(NODES)
    expected_nodes = nodes_in.sort_values("ts").groupby("node").agg(
        capacity=("capacity", "last"), cpu_ms=("cpu_ms", "sum"), samples=("ts", "size")
    )
    expected_nodes["utilisation_pct"] = (
        100.0 * expected_nodes["cpu_ms"] / (expected_nodes["capacity"] * PERIOD_MS)
    )
    got_nodes = rows(spark, paths, NODE_STATS.name, of_period(P1)).set_index("node")
    assert len(got_nodes) == len(expected_nodes) == job.source["nodes"]
    got_nodes = got_nodes.loc[expected_nodes.index]
    np.testing.assert_allclose(got_nodes["cpu_ms"], expected_nodes["cpu_ms"], rtol=1e-12)
    np.testing.assert_allclose(
        got_nodes["utilisation_pct"], expected_nodes["utilisation_pct"], rtol=1e-12
    )
    assert got_nodes["samples"].tolist() == expected_nodes["samples"].tolist()

    # Across tables: a node's utilisation is the load of the key groups it hosts (capacity 1.0).
    hosted = got_kg.groupby("node")["load_pct"].sum()
    np.testing.assert_allclose(got_nodes.loc[hosted.index, "utilisation_pct"], hosted, rtol=1e-9)

    assert delta_versions(paths)[KEYGROUP_STATS.name] == result.versions[KEYGROUP_STATS.name]
