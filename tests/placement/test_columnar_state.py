"""The columnar planner state gives exactly the plans and metrics of the row state it replaced.

The reference is the row code the columns replaced, kept here: a state's communication as one
`Edge` per row and the metrics, pair rates, ALBIC scores and canonical edge order computed by
looping over them. On random small instances (every registered strategy, with the facets it
declares: tests/placement/verifier_lib.py), the state built from a comm_stats frame (columns,
any row order: jobs/plan/assemble.py `comm_of`) plans exactly what the state built row by row
plans (unless a wall clock cut the solve: then the two states are checked equal), and every vectorised function returns the row loop's floats (==, not approximately).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import replace

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verifier_lib import Case, call_params, states

from jobs.plan.assemble import comm_of
from placement.albic.scores import calc_scores
from placement.canonical import canonical_state, natural_key
from placement.graphpart import pair_rates, undirected_weights
from placement.metrics import collocation_factor, mean_load, node_loads
from placement.model import ClusterState, Edge
from placement.registry import get_spec, get_strategy, strategy_names
from schemas.config import JobConfig

JOB = JobConfig("columns")


# -- the row code the columns replaced (the reference) ----------------------------------------

def rows_node_loads(state: ClusterState, assignment: Mapping[str, str]) -> dict[str, float]:
    raw = {n.id: 0.0 for n in state.nodes}
    for kg in state.keygroups:
        raw[assignment[kg.id]] += kg.load
    return {n.id: raw[n.id] / n.capacity for n in state.nodes}


def rows_mean_load(state: ClusterState) -> float:
    total = sum(kg.load for kg in state.keygroups)
    return total / sum(n.capacity for n in state.nodes if not n.marked_for_removal)


def rows_collocation(edges: list[Edge], assignment: Mapping[str, str]) -> float:
    total = local = 0.0
    for e in edges:
        if e.src == e.dst:
            continue
        total += e.rate
        if assignment[e.src] == assignment[e.dst]:
            local += e.rate
    return 100.0 if total == 0.0 else 100.0 * local / total


def rows_pair_rates(edges: list[Edge]) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for e in edges:
        if e.src != e.dst:
            out[(e.src, e.dst)] = out.get((e.src, e.dst), 0.0) + e.rate
    return out


def rows_scores(state: ClusterState, edges: list[Edge], assignment: Mapping[str, str],
                s_f: float) -> tuple[dict[str, float], list[tuple[str, str]], list[tuple[str, str]]]:
    out = rows_pair_rates(edges)
    op_of = {k.id: k.operator for k in state.keygroups}
    op_size: dict[str, int] = {}
    for k in state.keygroups:
        op_size[k.operator] = op_size.get(k.operator, 0) + 1
    down: dict[str, set[str]] = {}
    output: dict[str, float] = {}
    for (src, dst), rate in out.items():
        down.setdefault(op_of[src], set()).add(op_of[dst])
        output[src] = output.get(src, 0.0) + rate
    avg = {kg: total / sum(op_size[o] for o in down[op_of[kg]]) for kg, total in output.items()}
    col: list[tuple[str, str]] = []
    to_be: list[tuple[str, str]] = []
    for (src, dst), rate in out.items():
        if rate > 0 and rate > avg[src] * s_f:
            (col if assignment[src] == assignment[dst] else to_be).append((src, dst))

    def order(p: tuple[str, str]) -> tuple[float, str, str]:
        return (-out[p], p[0], p[1])

    return avg, sorted(col, key=order), sorted(to_be, key=order)


def rows_state(state: ClusterState, edges: list[Edge]) -> ClusterState:
    """Today's builder: one Edge object per comm_stats row."""
    return replace(state, edges=tuple(edges))


def columns_state(state: ClusterState, edges: list[Edge], rng: random.Random) -> ClusterState:
    """The columnar builder: comm_stats as a frame (rows in any order) into columns."""
    rows = [{"src_keygroup": e.src, "dst_keygroup": e.dst, "tuples_per_s": e.rate}
            for e in edges]
    rng.shuffle(rows)
    frame = pd.DataFrame(rows, columns=["src_keygroup", "dst_keygroup", "tuples_per_s"])
    return replace(state, edges=comm_of(JOB, frame))


@st.composite
def with_edges(draw: st.DrawFn, facets: frozenset[str], arrivals: bool
               ) -> tuple[Case, list[Edge]]:
    """A verifier case plus random comm_stats rows (one per (src, dst), as the table holds)."""
    case = draw(states(facets, arrivals))
    if "network" in facets:  # SPRAWL's data edges form a forest: keep the generator's
        return case, list(case.state.edges)
    ids = [k.id for k in case.state.keygroups]
    pairs = draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(ids)), max_size=25,
                          unique=True))
    rates = st.sampled_from([0.0, 1.0, 2.5, 7.0]) | st.floats(0.0, 1e6, allow_subnormal=False)
    return case, [Edge(s, d, draw(rates)) for s, d in pairs]


# -- plans: every strategy ----------------------------------------------------------------------

@pytest.mark.parametrize("name", strategy_names())
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_the_columnar_state_plans_exactly_what_the_row_state_plans(name: str,
                                                                    data: st.DataObject) -> None:
    spec = get_spec(name)
    case, edges = data.draw(with_edges(frozenset(spec.facets), spec.places_arrivals))
    rng = data.draw(st.randoms(use_true_random=False))
    by_rows = rows_state(case.state, edges)
    by_columns = columns_state(case.state, edges, rng)
    strategy = get_strategy(name)
    params = call_params(name, case)
    a = strategy(by_rows, case.budget, **params)
    b = strategy(by_columns, case.budget, **params)
    if a.determinism.startswith("clock-limited") or b.determinism.startswith("clock-limited"):
        # a wall clock cut a solve (placement/determinism.py): a rerun of the same state may
        # differ too; the two states must still be the same instance
        assert sorted(by_rows.edges, key=lambda e: (e.src, e.dst)) == list(by_columns.edges)
        assert replace(by_rows, edges=by_columns.edges) == by_columns
        return
    assert dict(a.assignment) == dict(b.assignment)
    assert a.moves == b.moves and a.status is b.status and a.scaling == b.scaling
    assert a.before == b.before and a.after == b.after
    assert _nan_equal(a.facet_metrics) == _nan_equal(b.facet_metrics)


def _nan_equal(metrics: Mapping[str, float]) -> dict[str, float | str]:
    """`metrics` with NaN (a metric undefined on the instance, e.g. Herding's load balance
    with no load) as a marker, so that two NaNs compare equal (two NaN objects do not)."""
    return {k: "nan" if v != v else v for k, v in metrics.items()}


# -- metrics and the strategies' hot paths: the row loops' floats ------------------------------

@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data(), s_f=st.sampled_from([0.5, 1.0, 1.5]))
def test_vectorised_metrics_equal_the_row_loops(data: st.DataObject, s_f: float) -> None:
    case, edges = data.draw(with_edges(frozenset({"communication"}), False))
    state = columns_state(case.state, edges, data.draw(st.randoms(use_true_random=False)))
    ordered = sorted(edges, key=lambda e: (e.src, e.dst))  # comm_of's (src, dst) order
    nodes = [n.id for n in state.nodes]
    after = {k.id: data.draw(st.sampled_from(nodes)) for k in state.keygroups}
    for assignment in (state.assignment, after):
        assert node_loads(state, assignment) == rows_node_loads(state, assignment)
        assert collocation_factor(state, assignment) == rows_collocation(ordered, assignment)
    assert mean_load(state) == rows_mean_load(state)
    assert list(pair_rates(state).items()) == list(rows_pair_rates(ordered).items())
    members = {k.id for k in state.keygroups if data.draw(st.booleans())}
    reference: dict[tuple[str, str], float] = {}
    for (s, d), r in rows_pair_rates(ordered).items():
        if s in members and d in members and r > 0:
            key = (s, d) if s < d else (d, s)
            reference[key] = reference.get(key, 0.0) + r
    assert list(undirected_weights(pair_rates(state), members).items()) == list(reference.items())
    scores = calc_scores(state, after, s_f)
    avg, col, to_be = rows_scores(state, ordered, after, s_f)
    assert dict(scores.avg) == avg
    assert list(scores.col_grps) == col and list(scores.to_be_col_grps) == to_be
    canon = canonical_state(state)
    assert list(canon.edges) == sorted(
        ordered, key=lambda e: (natural_key(e.src), natural_key(e.dst), e.rate))
