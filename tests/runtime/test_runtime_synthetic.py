"""The synthetic job's spec, naming, initial allocation and §5.1 load model."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.replay.spec import ramp_profile
from runtime.source import MetricsSource, load_state, state_path
from runtime.synthetic import (
    SyntheticJob,
    SyntheticSpec,
    base_loads,
    build_tables,
    initial_assignment,
    period_loads,
    stream_rates,
    true_coefficients,
)
from runtime.synthetic_model import ramp_factor

END = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
SPEC = SyntheticSpec("demo")  # 4 operators x 16 key groups on 8 nodes, mean 60 %, varies 30


def node_loads(spec: SyntheticSpec, end: datetime, assignment: dict[str, str]) -> dict[str, float]:
    loads = period_loads(spec, end, assignment).keygroups
    out: dict[str, float] = {}
    for kg, node in assignment.items():
        out[node] = out.get(node, 0.0) + loads[kg]
    return out


def test_names_and_round_robin_allocation() -> None:
    assert SPEC.operator_names == ("op0", "op1", "op2", "op3")
    assert SPEC.keygroups[:2] == ("op0-kg000", "op0-kg001") and "op1-kg003" in SPEC.keygroups
    assert (
        len(SPEC.keygroups) == 64 and SPEC.node_names[0] == "node-00" and len(SPEC.node_names) == 8
    )
    a = initial_assignment(SPEC)
    assert set(Counter(a.values()).values()) == {8}
    per_op_node = Counter((kg.split("-")[0], n) for kg, n in a.items())
    assert set(per_op_node.values()) == {2}  # every operator spread evenly too


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("operators", 0),
        ("keygroups_per_operator", 1001),
        ("nodes", "8"),
        ("nodes", True),
        ("mean_node_load", 0),
        ("varies", -1.0),
        ("varies", float("nan")),
        ("seed", -1),
        ("samples_per_period", 0),
        ("period_s", 2.5),
        ("job_id", ""),
        ("job_id", "a/b"),
        ("nodes", 1001),
        ("fanout", -1),
        ("reads", -1),
        ("reads", 11),
        ("reads_beta", 0.2),
        ("reads_beta", float("nan")),
    ],
)
def test_spec_validation_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        SyntheticSpec(**{"job_id": "demo", field: value})  # type: ignore[arg-type]


def test_from_mapping_reads_the_jobs_toml_shape() -> None:
    source = {
        "kind": "synthetic",
        "operators": 4,
        "keygroups_per_operator": 16,
        "nodes": 8,
        "seed": 7,
        "varies": 30,
    }
    spec = SyntheticSpec.from_mapping(source, job_id="demo")
    assert spec == SPEC and isinstance(spec.varies, float)
    assert SyntheticSpec.from_mapping({"job_id": "x", "nodes": 3}).nodes == 3


@pytest.mark.parametrize(
    ("mapping", "words"),
    [
        ({"job_id": "x", "node": 3}, "unknown synthetic source key(s) ['node']"),
        ({"job_id": "x", "operators": "4"}, "operators must be an integer"),
        ({"job_id": "x", "kind": "replay"}, "kind is 'replay'"),
        ({"nodes": 3}, "needs a 'job_id'"),
    ],
)
def test_from_mapping_errors(mapping: dict[str, object], words: str) -> None:
    with pytest.raises(ValueError) as caught:
        SyntheticSpec.from_mapping(mapping)
    assert words in str(caught.value)


def test_base_loads_are_mean_plus_minus_five_percent() -> None:
    loads = base_loads(SPEC)
    mean = 60.0 * 8 / 64
    assert all(0.95 * mean <= v <= 1.05 * mean for v in loads.values())
    assert len(set(loads.values())) == 64  # actually jittered
    assert base_loads(SyntheticSpec("demo", seed=8)) != loads


@pytest.mark.parametrize("minutes", [5, 10, 15, 60, 24 * 60])
def test_twenty_percent_of_nodes_drift_half_up_half_down(minutes: int) -> None:
    end = END + timedelta(minutes=minutes)
    a = initial_assignment(SPEC)
    loads = node_loads(SPEC, end, a)
    drift = period_loads(SPEC, end, a).drift
    assert len(drift) == 2 and sorted(drift.values()) == [-15.0, 15.0]
    for node, load in loads.items():
        expected = 60.0 + drift.get(node, 0.0)
        assert abs(load - expected) <= 3.0 + 1e-9, (node, load)  # ±5 % jitter of 8 key groups
    assert sum(loads.values()) == pytest.approx(sum(base_loads(SPEC).values()))


def test_drift_moves_between_periods_and_follows_the_assignment() -> None:
    a = initial_assignment(SPEC)
    drifted = {
        frozenset(period_loads(SPEC, END + timedelta(minutes=5 * i), a).drift) for i in range(10)
    }
    assert len(drifted) > 3  # the planner gets new work each period
    # Loads belong to key groups: swapping two undrifted key groups' nodes swaps their load too.
    pl = period_loads(SPEC, END, a)
    calm = [kg for kg in SPEC.keygroups if a[kg] not in pl.drift]
    x, y = calm[0], next(kg for kg in calm if a[kg] != a[calm[0]])
    other = dict(a)
    other[x], other[y] = a[y], a[x]
    swapped = period_loads(SPEC, END, other).keygroups
    assert (swapped[x], swapped[y]) == (pl.keygroups[x], pl.keygroups[y])
    assert node_loads(SPEC, END, other)[a[x]] != node_loads(SPEC, END, a)[a[x]]
    assert period_loads(SPEC, END, a) == pl  # a function of its inputs only


def test_down_drift_never_empties_a_key_group() -> None:
    spec = SyntheticSpec(
        "tiny", operators=1, keygroups_per_operator=20, nodes=10, mean_node_load=10.0, varies=60.0
    )
    a = initial_assignment(spec)
    for i in range(10):
        end = END + timedelta(minutes=5 * i)
        pl = period_loads(spec, end, a)
        assert min(pl.keygroups.values()) > 0
        assert sorted(pl.drift.values())[1] == 30.0
        ((node, cut),) = [(n, d) for n, d in pl.drift.items() if d < 0]
        base = sum(v for kg, v in base_loads(spec).items() if a[kg] == node)
        assert cut == pytest.approx(-0.9 * base)  # a 10 % node cannot give up 30 %: capped at 90 %
        assert node_loads(spec, end, a)[node] == pytest.approx(0.1 * base)


def test_no_drift_when_varies_is_zero() -> None:
    spec = SyntheticSpec("calm", varies=0)
    assert dict(period_loads(spec, END, initial_assignment(spec)).keygroups) == base_loads(spec)


def test_state_is_persisted_and_checked_against_the_spec(tmp_path: Path) -> None:
    job = SyntheticJob(SPEC, tmp_path)
    source: MetricsSource = job
    assert isinstance(source, MetricsSource)
    state = load_state(tmp_path, "demo")
    assert (
        state is not None
        and state.version is None
        and dict(state.assignment) == initial_assignment(SPEC)
    )
    text = state_path(tmp_path, "demo").read_text()
    assert '"version": null' in text and '"format": 1' in text
    with pytest.raises(ValueError, match="different job shape"):
        SyntheticJob(SyntheticSpec("demo", operators=3), tmp_path)
    state_path(tmp_path, "demo").write_text("{")
    with pytest.raises(ValueError, match="corrupt runtime state"):
        SyntheticJob(SPEC, tmp_path)


def test_stream_ramp_scales_the_rates_and_keeps_the_loads_linear() -> None:
    """With ramp_periods the rates follow the ramp (1x -> 2.5x -> 0.6x) times U[0.5, 1.5] and
    bursts; without it they are exactly the plain draw; loads stay the true linear model."""
    plain = SyntheticSpec("s", operators=3, keygroups_per_operator=4, nodes=3, streams=3)
    ramp = SyntheticSpec("s", operators=3, keygroups_per_operator=4, nodes=3, streams=3,
                         ramp_periods=12)
    start = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=12 * 300 * 5000)
    ends = [start + timedelta(seconds=300 * n) for n in range(1, 13)]
    assert [ramp_factor(ramp, e) for e in ends] == list(ramp_profile(12))
    assert ramp_factor(plain, ends[5]) == 1.0
    truth = true_coefficients(ramp)
    for end in ends:
        base, rates = stream_rates(plain, end), stream_rates(ramp, end)
        for s, r in rates.items():
            burst = r / (base[s] * ramp_factor(ramp, end))
            assert burst == pytest.approx(1.0) or 1.5 <= burst <= 3.0
        loads = period_loads(ramp, end, initial_assignment(ramp)).keygroups
        for kg, row in truth.items():
            assert loads[kg] == pytest.approx(sum(c * rates[k] for k, c in row.items()))
    bursts = sum(r / (stream_rates(plain, e)[s] * ramp_factor(ramp, e)) > 1.01
                 for e in ends for s, r in stream_rates(ramp, e).items())
    assert 0 < bursts < 3 * 12 / 2  # about one stream-period in five bursts


@pytest.mark.parametrize(("periods", "streams"), [(5, 3), (12, 0)])
def test_stream_ramp_needs_streams_and_six_periods(periods: int, streams: int) -> None:
    with pytest.raises(ValueError, match="ramp_periods"):
        SyntheticSpec("s", streams=streams, ramp_periods=periods)


@pytest.mark.parametrize("fanout", [1, 3, 15])
def test_fanout_sends_to_f_key_groups_and_keeps_the_tuple_counts(fanout: int) -> None:
    """With `fanout = f` each key group sends to f of the next operator's (O(units * f) edges),
    and every tuple a key group emits is still received: what the full exchange guarantees."""
    spec = SyntheticSpec("demo", operators=3, keygroups_per_operator=16, nodes=4, fanout=fanout)
    full = build_tables(SyntheticSpec("demo", operators=3, keygroups_per_operator=16, nodes=4),
                        END, initial_assignment(spec), spec.node_names)
    tables = build_tables(spec, END, initial_assignment(spec), spec.node_names)
    edges, kgs = tables["edges"].to_pandas(), tables["keygroups"].to_pandas()
    assert len(edges) == 2 * 16 * fanout * spec.samples_per_period
    assert set(edges.groupby(["ts", "src_keygroup"]).size()) == {fanout}
    received = edges.groupby("dst_keygroup")["tuples"].sum()
    tuples_in = kgs.groupby("keygroup")["tuples_in"].sum()
    assert all(received[k] == tuples_in[k] for k in received.index)
    sent = edges.groupby("src_keygroup")["tuples"].sum()
    tuples_out = kgs[kgs.operator != "op2"].groupby("keygroup")["tuples_out"].sum()
    assert sent.equals(tuples_out.rename_axis("src_keygroup").rename("tuples"))
    # the loads, the counters of op0 and the total traffic are the full exchange's
    assert edges["tuples"].sum() == full["edges"].to_pandas()["tuples"].sum()
    assert kgs["tuples_out"].equals(full["keygroups"].to_pandas()["tuples_out"])


def test_a_thousand_nodes_have_distinct_names() -> None:
    spec = SyntheticSpec("big", operators=2, keygroups_per_operator=1000, nodes=1000)
    assert len(set(spec.node_names)) == 1000 and spec.node_names[:2] == ("node-00", "node-01")
    assert len(set(initial_assignment(spec).values())) == 1000


@settings(max_examples=25, deadline=None)
@given(operators=st.integers(1, 4), per_operator=st.integers(1, 12), nodes=st.integers(1, 5),
       fanout=st.integers(0, 13), samples=st.integers(1, 4))
def test_id_columns_are_the_rows_named_in_order(operators: int, per_operator: int, nodes: int,
                                                fanout: int, samples: int) -> None:
    """The id columns (built by Arrow take, no Python string per row) list, sample after
    sample, every key group with its operator and node, and each edge's ends in the order of
    the numeric columns: key group i of op o sends to (i + j) mod k of op o+1, j < f (every key
    group of op o+1 when f = 0 or f >= k). A job of one operator lands no edges."""
    spec = SyntheticSpec("p", operators=operators, keygroups_per_operator=per_operator,
                         nodes=nodes, fanout=fanout, samples_per_period=samples)
    assignment = initial_assignment(spec)
    tables = build_tables(spec, END, assignment, spec.node_names)
    kgs = spec.keygroups
    keygroups = tables["keygroups"]
    assert keygroups["keygroup"].to_pylist() == list(kgs) * samples
    assert keygroups["operator"].to_pylist() == [kg.split("-")[0] for kg in kgs] * samples
    assert keygroups["node"].to_pylist() == [assignment[kg] for kg in kgs] * samples
    k = per_operator
    f = fanout if 0 < fanout < k else k
    pairs = [(kgs[o * k + i], kgs[(o + 1) * k + (i + j) % k])
             for o in range(operators - 1) for i in range(k) for j in range(f)]
    if not 0 < fanout < k:  # the full exchange lists dst in order, for each src
        pairs = [(kgs[o * k + i], kgs[(o + 1) * k + j])
                 for o in range(operators - 1) for i in range(k) for j in range(k)]
    edges = tables["edges"]
    assert list(zip(edges["src_keygroup"].to_pylist(), edges["dst_keygroup"].to_pylist(),
                    strict=True)) == pairs * samples


def test_a_query_population_lands_its_subscriptions_and_sources_and_no_edges(tmp_path: Path
                                                                          ) -> None:
    """`reads = d`: each key group a query reading ≤ d distinct sources of Herding's power-law
    popularity; the facets follow the running assignment, are the same on re-landing, and the
    pipeline's facet contract (subscriptions, sources) holds; no edges."""
    import pyarrow.parquet as pq

    from schemas.landing import FACET_SCHEMAS

    spec = SyntheticSpec("herd", operators=2, keygroups_per_operator=500, nodes=10, reads=2)
    job = SyntheticJob(spec, tmp_path / "state")
    where = job.land_period(tmp_path / "landing", END)
    assert pq.read_table(where / "edges").num_rows == 0
    subs = pq.read_table(where / "subscriptions")
    srcs = pq.read_table(where / "sources")
    assert subs.schema.equals(FACET_SCHEMAS["subscriptions"], check_metadata=False)
    assert srcs.schema.equals(FACET_SCHEMAS["sources"], check_metadata=False)
    rows = subs.to_pylist()
    per_query = Counter(r["keygroup"] for r in rows)
    assert set(per_query) == set(spec.keygroups) and set(per_query.values()) <= {1, 2}
    assert len({(r["keygroup"], r["source"]) for r in rows}) == len(rows)  # distinct sources
    assert all(r["node"] == job.assignment[r["keygroup"]] for r in rows)
    names = srcs.column("source").to_pylist()
    assert {r["source"] for r in rows} == set(names)  # every landed source is read
    assert min(srcs.column("tuples_per_s").to_pylist()) > 0
    readers = Counter(r["source"] for r in rows).most_common()
    assert readers[0][1] > 10 * readers[len(readers) // 2][1]  # a heavy-tailed popularity
    again = SyntheticJob(spec, tmp_path / "state2").query_facets(END)
    assert again["subscriptions"].equals(subs.select(again["subscriptions"].column_names))
    with pytest.raises(ValueError, match="fanout"):
        SyntheticSpec("herd", reads=2, fanout=4)
