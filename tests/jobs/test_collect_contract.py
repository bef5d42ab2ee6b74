"""collect's aggregation contract (jobs/collect/aggregate.py), held against both engines: pyarrow
(jobs/collect/native.py) and Spark (jobs/collect/by_spark.py). Refusals, null/NaN/max_by
semantics and the facets run on each engine; a brute-force property on the pyarrow one; and one
comparison of its frames with what Spark's `collect` writes to Delta, refusals included."""

from __future__ import annotations

import math
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pipeline_kit import JOB_ID, P1, SPL

from jobs.collect.aggregate import Aggregation, CollectedFrames
from jobs.collect.native import collect_frames
from jobs.collect.stage import check_landing
from jobs.errors import StageError
from jobs.facets.subscriptions import check_facet_landing
from runtime.source import write_period
from schemas.config import JobConfig, Paths
from schemas.landing import (
    EDGES,
    FACET_SCHEMAS,
    KEYGROUPS,
    NODES,
    SCHEMAS,
    SOURCES,
    SUBSCRIPTIONS,
    period_dir,
)
from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS, SOURCE_STATS, TABLES
from schemas.tables import SUBSCRIPTIONS as SUBSCRIPTIONS_TABLE

START = P1 - SPL
PERIOD_MS = SPL.total_seconds() * 1000.0
LAND_CMD = f"reconf land --job {JOB_ID} --period-end 2026-01-01T00:05:00Z"


def _at(seconds: float) -> datetime:
    return START + timedelta(seconds=seconds)


def kg(ts: datetime | None, keygroup: str | None = "op0-kg000", **values: Any) -> dict[str, Any]:
    row = {"ts": ts, "operator": "op0", "keygroup": keygroup, "node": "node-00", "tuples_in": 10,
           "tuples_out": 10, "cpu_ms": 5.0, "state_bytes": 640}
    return {**row, **values}


def edge(ts: datetime | None, src: str | None = "op0-kg000", dst: str | None = "op1-kg000",
         **values: Any) -> dict[str, Any]:
    return {"ts": ts, "src_keygroup": src, "dst_keygroup": dst, "tuples": 3, "bytes": 300,
            **values}


def node(ts: datetime | None, name: str | None = "node-00", **values: Any) -> dict[str, Any]:
    return {"ts": ts, "node": name, "capacity": 1.0, "cpu_ms": 5.0, **values}


def land(home: Path, job: JobConfig, keygroups: list[dict[str, Any]], edges: list[dict[str, Any]],
         nodes: list[dict[str, Any]], facets: dict[str, list[dict[str, Any]]] | None = None,
         ) -> tuple[dict[str, list[Path]], dict[str, list[Path]], Path]:
    """Land period P1 of the tiny job under `home` (no edges: no edge file at all); what
    `collect` hands `collect_frames`: check_landing's files, the facet files, the directory."""
    tables = {KEYGROUPS: keygroups, EDGES: edges, NODES: nodes}
    where = write_period(home / "landing", JOB_ID, P1,
                         {k: pa.Table.from_pylist(v, schema=SCHEMAS[k]) for k, v in tables.items()},
                         facets={k: pa.Table.from_pylist(v, schema=FACET_SCHEMAS[k])
                                 for k, v in (facets or {}).items()})
    if not edges:
        (where / EDGES / "part-0.parquet").unlink()
    paths = Paths(home)
    return check_landing(paths, JOB_ID, P1), check_facet_landing(paths, job, P1), where


def frames(home: Path, job: JobConfig, *args: Any, engine: Aggregation = collect_frames,
           **kwargs: Any) -> CollectedFrames:
    files, facet_files, where = land(home, job, *args, **kwargs)
    return engine(job, P1, files, facet_files, where)


def refusal(home: Path, job: JobConfig, *args: Any, engine: Aggregation = collect_frames
            ) -> StageError:
    with pytest.raises(StageError) as caught:
        frames(home, job, *args, engine=engine)
    return caught.value


def by_key(table: pa.Table, *key: str) -> dict[Any, dict[str, Any]]:
    return {tuple(r[k] for k in key): r for r in table.to_pylist()}


GOOD_NODES = [node(_at(10))]


@pytest.fixture(params=["native", pytest.param("spark", marks=pytest.mark.spark)])
def engine(request: pytest.FixtureRequest) -> Aggregation:
    """Each implementation of the aggregation contract (the Spark one on the shared session)."""
    if request.param == "native":
        return collect_frames
    from functools import partial

    from jobs.collect.by_spark import spark_frames

    return partial(spark_frames, request.getfixturevalue("spark"))


def test_no_keygroup_sample_inside_the_window_is_refused(tmp_path, job, engine):
    outside = [kg(P1), kg(START - timedelta(microseconds=1)), kg(None)]
    error = refusal(tmp_path, job, outside, [], GOOD_NODES, engine=engine)
    assert error.what == ("the period has no keygroups samples inside its window "
                          "[2026-01-01T00:00:00Z, 2026-01-01T00:05:00Z) (3 sample(s) lie outside it)")
    assert error.where == str(period_dir(tmp_path / "landing", JOB_ID, P1) / KEYGROUPS)
    assert error.fix == f"fix the runtime's keygroups samples and land the period again (`{LAND_CMD}`)"


def test_a_negative_counter_or_a_capacity_of_zero_is_refused_with_an_example(tmp_path, job, engine):
    rows = [kg(_at(1)), kg(_at(2), tuples_in=None, cpu_ms=-1.5), kg(_at(3), state_bytes=-2),
            kg(P1, tuples_out=-9)]  # outside the window: not counted
    error = refusal(tmp_path / "a", job, rows, [], GOOD_NODES, engine=engine)
    assert error.what == (
        "2 keygroups sample(s) break the rule tuples_in >= 0 or tuples_out >= 0 or cpu_ms >= 0 or "
        "state_bytes >= 0, e.g. {'ts': datetime.datetime(2026, 1, 1, 0, 0, 2), 'operator': 'op0', "
        "'keygroup': 'op0-kg000', 'node': 'node-00', 'tuples_in': None, 'tuples_out': 10, "
        "'cpu_ms': -1.5, 'state_bytes': 640}")
    error = refusal(tmp_path / "b", job, [kg(_at(1))], [], [node(_at(1), capacity=0.0),
                                                          node(_at(2), capacity=math.nan)],
                    engine=engine)
    assert error.what.startswith("1 nodes sample(s) break the rule cpu_ms >= 0 or capacity > 0, "
                                 "e.g. {'ts': datetime.datetime(2026, 1, 1, 0, 0, 1), ")
    assert error.where.endswith("/nodes")


def test_repeated_samples_are_refused_and_the_first_failing_kind_wins(tmp_path, job, engine):
    edges = [edge(_at(1)), edge(_at(1)), edge(_at(1)), edge(_at(2)), edge(_at(1), dst=None),
             edge(_at(1), dst=None), edge(P1), edge(P1)]
    error = refusal(tmp_path / "a", job, [kg(_at(1))], edges, GOOD_NODES, engine=engine)
    assert error.what.startswith(
        "3 edges sample(s) repeat another sample's (src_keygroup, dst_keygroup, ts), e.g. {")
    assert error.what.endswith("; summing them would inflate the load")
    assert ("e.g. {'src_keygroup': 'op0-kg000', 'dst_keygroup': 'op1-kg000', 'ts': datetime."
            "datetime(2026, 1, 1, 0, 0, 1), 'count': 3};") in error.what
    # key groups' refusal wins over the edges' and the nodes'
    error = refusal(tmp_path / "b", job, [kg(_at(1), tuples_in=-1)], edges,
                    [node(_at(1), cpu_ms=-1)], engine=engine)
    assert error.what.startswith("1 keygroups sample(s) break the rule")


def test_sums_propagate_nulls_and_nan_and_max_by_takes_the_newest_sample(tmp_path, job, engine):
    keygroups = [
        kg(_at(3), "a", node="n-new", operator=None, state_bytes=None, cpu_ms=1.5),
        kg(_at(1), "a", node="n-old", state_bytes=7, cpu_ms=2.25, tuples_in=None),
        kg(P1, "a", node="n-late", cpu_ms=1e9),  # the next period's: ignored
        kg(_at(2), "b", cpu_ms=math.nan, tuples_out=4),
        kg(_at(4), "b", cpu_ms=1.0, tuples_out=5),
        kg(_at(5), None, cpu_ms=0.5),  # a null key group is a group of its own
        kg(None, "c"),  # no ts: outside every window
    ]
    got = frames(tmp_path, job, keygroups, [], [node(_at(2), capacity=2.0, cpu_ms=None),
                                                node(_at(1), capacity=4.0, cpu_ms=1.0)],
                 engine=engine)
    rows = by_key(got.tables[KEYGROUP_STATS.name], "keygroup")
    assert set(rows) == {("a",), ("b",), (None,)} and got.groups[KEYGROUPS] == 3
    a, b = rows[("a",)], rows[("b",)]
    assert (a["node"], a["operator"], a["state_bytes"]) == ("n-new", None, None)
    assert (a["tuples_in"], a["tuples_out"], a["cpu_ms"], a["samples"]) == (None, 20, 3.75, 2)
    assert a["load_pct"] == 3.75 * 100.0 / PERIOD_MS
    assert math.isnan(b["cpu_ms"]) and math.isnan(b["load_pct"]) and b["tuples_out"] == 9
    assert rows[(None,)]["samples"] == 1
    assert a["period_start"] == START and a["period_end"] == P1 and a["job_id"] == JOB_ID
    (nd,) = got.tables[NODE_STATS.name].to_pylist()
    assert (nd["capacity"], nd["cpu_ms"], nd["utilisation_pct"], nd["samples"]) == (2.0, None, None, 2)
    # no edge file: an empty comm table, of the table's schema
    assert got.groups[EDGES] == 0 and got.tables[COMM_STATS.name].num_rows == 0
    for name, table in got.tables.items():
        assert table.schema.equals(TABLES[name].arrow_schema()), name


def test_edges_sum_per_pair_and_facets_are_copied_inside_the_window(tmp_path, job, engine):
    edges = [edge(_at(1), tuples=2**40), edge(_at(2), tuples=1), edge(_at(1), dst="x"),
             edge(_at(2), src=None, dst=None, bytes=None), edge(_at(3), src=None, dst=None),
             edge(_at(400))]
    facets = {SUBSCRIPTIONS: [{"ts": _at(1), "keygroup": "q1", "node": "n", "source": "s"},
                              {"ts": _at(1), "keygroup": "q1", "node": "n", "source": "s"},
                              {"ts": P1, "keygroup": "q2", "node": "n", "source": "s"}],
              SOURCES: [{"ts": _at(299), "source": "s", "tuples_per_s": math.nan,
                         "bytes_per_s": None}]}
    got = frames(tmp_path, job, [kg(_at(1))], edges, GOOD_NODES, facets, engine=engine)
    rows = by_key(got.tables[COMM_STATS.name], "src_keygroup", "dst_keygroup")
    assert got.groups[EDGES] == 3
    pair = rows[("op0-kg000", "op1-kg000")]
    assert (pair["tuples"], pair["bytes"], pair["tuples_per_s"]) == (
        2**40 + 1, 600, float(2**40 + 1) * 1000.0 / PERIOD_MS)
    assert rows[(None, None)]["bytes"] is None and rows[(None, None)]["tuples"] == 6
    subs = got.tables[SUBSCRIPTIONS_TABLE.name]
    assert subs.schema.equals(SUBSCRIPTIONS_TABLE.arrow_schema())
    assert subs.column("keygroup").to_pylist() == ["q1", "q1"]  # as landed: no dedup
    (source,) = got.tables[SOURCE_STATS.name].to_pylist()
    assert math.isnan(source["tuples_per_s"]) and source["bytes_per_s"] is None


def test_several_files_and_row_groups_give_the_rows_of_one_file(tmp_path, job):
    """Each file and row group has its own Parquet dictionary: the codes must unify them (the
    pyarrow engine's concern; Spark sums several files' partitions in no fixed order, so its
    floating-point sums may differ from one file's in the last bit)."""
    engine = collect_frames
    keygroups = [kg(_at(t), key, cpu_ms=0.1 * t, node=f"n{t}") for t in range(1, 9)
                 for key in (["a", "b", None] if t % 2 else ["c", "b"])]
    edges = [edge(_at(t), src, dst) for t in range(1, 5) for src, dst in
             (("a", "b"), ("b", "a"), (None, "a"), ("c", None))]
    one = frames(tmp_path / "one", job, keygroups, edges, GOOD_NODES, engine=engine)
    _, facet_files, where = land(tmp_path / "split", job, keygroups[:7], edges[:5], GOOD_NODES)
    for kind, rest in ((KEYGROUPS, keygroups[7:]), (EDGES, edges[5:])):
        pq.write_table(pa.Table.from_pylist(rest, schema=SCHEMAS[kind]),
                       where / kind / "part-1.parquet", row_group_size=3)
    split = engine(job, P1, check_landing(Paths(tmp_path / "split"), JOB_ID, P1),
                   facet_files, where)
    assert split.groups == one.groups == {KEYGROUPS: 4, EDGES: 4, NODES: 1}
    for name, table in one.tables.items():
        assert sorted(map(repr, table.to_pylist())) == sorted(
            map(repr, split.tables[name].to_pylist())), name


# -- property: the sums, counts and max_by per key are a brute-force fold over the window --------

_KEYS = st.sampled_from(["a", "b", "c", None])
_TIMES = st.sampled_from([-1.0, 0.0, 1.0, 2.0, 3.0, 4.5, 299.0, 300.0, None])  # window [0, 300)
_INTS = st.sampled_from([None, 0, 1, 7, 50, 2**40])
_FLOATS = st.sampled_from([None, 0.0, 0.1, 0.2, 1e16, 3.5, math.nan, -0.0])
_SAMPLE = st.tuples(_KEYS, _TIMES, _INTS, _FLOATS, _INTS)


def _brute(samples: list[tuple[Any, ...]]) -> dict[Any, dict[str, Any]] | str:
    inside = [s for s in samples if s[1] is not None and 0.0 <= s[1] < 300.0]
    if not inside:
        return "no keygroups samples inside"
    if any((v is not None and v < 0) for s in inside for v in (s[2], s[3], s[4])):
        return "break the rule"
    if len({(s[0], s[1]) for s in inside}) < len(inside):
        return "repeat another sample"
    out: dict[Any, dict[str, Any]] = {}
    for key in {s[0] for s in inside}:
        mine = [s for s in inside if s[0] == key]
        newest = max(mine, key=lambda s: s[1])
        ins = [s[2] for s in mine]
        cpu = [s[3] for s in mine]
        out[key] = {"tuples_in": None if None in ins else sum(ins),
                    "cpu_ms": None if None in cpu else sum(cpu),
                    "state_bytes": newest[4], "node": f"n{newest[1]}", "samples": len(mine)}
    return out


def _same(a: Any, b: Any) -> bool:
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(samples=st.lists(_SAMPLE, max_size=12), negative=st.none() | st.integers(0, 11))
def test_sums_and_max_by_equal_a_brute_force_fold_over_the_window(samples, negative, job):
    if negative is not None and negative < len(samples):  # one sample's counter below zero
        samples[negative] = (*samples[negative][:2], -1, *samples[negative][3:])
    rows = [kg(None if t is None else _at(t), key, node=f"n{t}", tuples_in=i, cpu_ms=c,
               state_bytes=s) for key, t, i, c, s in samples]
    expected = _brute(samples)
    event(expected if isinstance(expected, str) else "rows")
    with tempfile.TemporaryDirectory() as home:
        if isinstance(expected, str):
            with pytest.raises(StageError, match=expected):
                frames(Path(home), job, rows, [], GOOD_NODES)
            return
        got = by_key(frames(Path(home), job, rows, [], GOOD_NODES).tables[KEYGROUP_STATS.name],
                     "keygroup")
    assert {k[0] for k in got} == set(expected)
    for key, want in expected.items():
        row = got[(key,)]
        for column, value in want.items():
            assert _same(row[column], value), (key, column, row[column], value)


# -- the same rows as Spark's collect writes to Delta (the whole stage, through the Spark lake) ---


def _normal(table: pa.Table, schema: pa.Schema) -> list[tuple[Any, ...]]:
    """Rows as comparable tuples (NaN as a marker, order-free), after checking the types."""
    table = table.select(schema.names).cast(schema)
    rows = [tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in r.values())
            for r in table.to_pylist()]
    return sorted(rows, key=repr)


@pytest.mark.spark
def test_the_frames_are_the_rows_spark_collect_writes(home, job, spark, monkeypatch):
    from deltalake import DeltaTable
    from pipeline_kit import land as land_synthetic

    from jobs.collect.stage import collect
    from jobs.lake.read import IO_ENV

    monkeypatch.setenv(IO_ENV, "spark")  # collect's Spark part, and Spark's commits

    where = land_synthetic(home, P1, job)
    landed = {k: pq.read_table(where / k / "part-0.parquet") for k in (KEYGROUPS, EDGES, NODES)}

    def spoil(kind: str, extra: list[dict[str, Any]], column: str, value: Any) -> pa.Table:
        table = landed[kind]
        values = table.column(column).to_pylist()
        values[0] = value  # one sample's value: its key's sum becomes null or NaN
        table = table.set_column(table.schema.get_field_index(column), column,
                                 pa.array(values, table.schema.field(column).type))
        return pa.concat_tables([table, pa.Table.from_pylist(extra, schema=SCHEMAS[kind])])

    kgs = landed[KEYGROUPS].column("keygroup").to_pylist()
    tables = {
        KEYGROUPS: spoil(KEYGROUPS, [kg(P1, kgs[1], cpu_ms=1e6), kg(_at(299.5), kgs[2], node=None,
                                                                 state_bytes=None, cpu_ms=math.nan)],
                         "tuples_in", None),
        EDGES: spoil(EDGES, [edge(_at(7), None, "op1-kg000"), edge(START - timedelta(seconds=1))],
                     "bytes", None),
        NODES: spoil(NODES, [node(_at(299.9), "node-00", capacity=2.0, cpu_ms=math.nan)],
                     "cpu_ms", None),
    }
    facets = {SUBSCRIPTIONS: pa.Table.from_pylist(
        [{"ts": _at(299), "keygroup": kgs[0], "node": "node-00", "source": "s1"},
         {"ts": P1, "keygroup": kgs[1], "node": "node-01", "source": "s1"}],
        schema=FACET_SCHEMAS[SUBSCRIPTIONS]),
        SOURCES: pa.Table.from_pylist([{"ts": _at(299), "source": "s1", "tuples_per_s": 5.5,
                                        "bytes_per_s": math.nan}], schema=FACET_SCHEMAS[SOURCES])}
    write_period(home.landing, JOB_ID, P1, tables, facets=facets)
    files, facet_files = check_landing(home, JOB_ID, P1), check_facet_landing(home, job, P1)

    mine = collect_frames(job, P1, files, facet_files, where)
    result = collect(job, P1, paths=home, spark=spark)

    assert set(mine.tables) == set(result.rows)
    for name, table in mine.tables.items():
        schema = TABLES[name].arrow_schema()
        assert table.schema.equals(schema), name
        written = DeltaTable(home.table(name)).to_pyarrow_table()
        written = written.filter(pc.equal(written.column("job_id"), JOB_ID))
        assert table.num_rows == result.rows[name] > 0, name
        assert _normal(table, schema) == _normal(written, schema), name
    assert mine.groups == {KEYGROUPS: result.rows[KEYGROUP_STATS.name],
                           EDGES: result.rows[COMM_STATS.name], NODES: result.rows[NODE_STATS.name]}

    # the refusals say what Spark's say, example row included
    for kind, column, value in ((KEYGROUPS, "state_bytes", -3), (NODES, "capacity", 0.0)):
        spoiled = {**tables, kind: spoil(kind, [], column, value)}
        write_period(home.landing, JOB_ID, P1, spoiled)
        with pytest.raises(StageError) as spark_says:
            collect(job, P1, paths=home, spark=spark)
        with pytest.raises(StageError) as native_says:
            collect_frames(job, P1, check_landing(home, JOB_ID, P1), {}, where)
        assert str(native_says.value) == str(spark_says.value)
    doubled = {**tables, EDGES: pa.concat_tables([tables[EDGES], tables[EDGES].slice(3, 1)])}
    write_period(home.landing, JOB_ID, P1, doubled)
    with pytest.raises(StageError) as spark_says:
        collect(job, P1, paths=home, spark=spark)
    with pytest.raises(StageError) as native_says:
        collect_frames(job, P1, check_landing(home, JOB_ID, P1), {}, where)
    assert str(native_says.value) == str(spark_says.value)
