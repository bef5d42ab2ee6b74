"""The columnar sources facet gives exactly the state, instance and plans of the row code.

The reference is the row code the columns replaced, kept here: `with_sources` grouping the
subscription rows into a set per unit through a dict, `from_state` building Herding's CSR unit
by unit, and `canonical_state` re-listing S_q by one natural key per entry. On random small
instances (ids chosen so plain and natural order differ, repeated and foreign subscription
rows, arrivals, nodes of unequal capacity), the new path, fed the lake's Arrow tables or rows,
gives the same state, the same canonical order, the same `Instance` arrays and the same
Herding plans; `Subscriptions` is the mapping it was built from, and refuses what the model's
row check refused, with the same message.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.errors import StageError
from jobs.facets.dynamic import with_sources
from jobs.plan.assemble import build_state
from jobs.tracking.placements import _row, placement_rows
from placement.canonical import canonical_state, natural_key
from placement.facets import Source
from placement.herding.instance import Instance, capacities, from_arrays, from_state
from placement.herding.offline import run_offline
from placement.model import (
    ClusterState,
    KeyGroup,
    Node,
    Plan,
    PlanMetrics,
    SolverStatus,
    moves_between,
)
from placement.subscriptions import Subscriptions
from schemas.config import JobConfig

UNITS = ("q1", "q2", "q10", "q02", "a", "b7", "b10", "z")
SOURCES = ("s1", "s2", "s10", "t", "s02")
NODES = ("n1", "n2", "n10", "m")


# -- the row code the columns replaced (the reference) ----------------------------------------

def rows_with_sources(state: ClusterState, job: JobConfig, kg_rows: list[dict[str, Any]],
                      source_rows: list[dict[str, Any]], subscription_rows: list[dict[str, Any]],
                      current: Mapping[str, str], version: int | None) -> ClusterState:
    units = {k["keygroup"] for k in kg_rows}
    reads: dict[str, set[str]] = {}
    for row in subscription_rows:
        if row["keygroup"] in units:
            reads.setdefault(row["keygroup"], set()).add(row["source"])
    sources = tuple(Source(r["source"], float(r["tuples_per_s"]), float(r["bytes_per_s"]))
                    for r in sorted(source_rows, key=lambda r: r["source"]))
    subscriptions = {u: frozenset(s) for u, s in sorted(reads.items())}
    if not job.dynamic:
        return replace(state, sources=sources, subscriptions=subscriptions)
    placed = {u: current[u] for u in sorted(units) if version is not None and u in current}
    return replace(state, assignment=placed, arrivals=frozenset(units - set(placed)),
                   sources=sources, subscriptions=subscriptions)


def rows_from_state(state: ClusterState) -> Instance:
    units = sorted(k.id for k in state.keygroups)
    by_id = {k.id: k for k in state.keygroups}
    nodes = sorted(state.nodes, key=lambda nd: (-nd.capacity, natural_key(nd.id)))
    sources = sorted(state.sources, key=lambda s: natural_key(s.id))
    src_index = {s.id: i for i, s in enumerate(sources)}
    node_index = {nd.id: j for j, nd in enumerate(nodes)}
    indptr = np.zeros(len(units) + 1, dtype=np.int64)
    flat: list[int] = []
    for i, u in enumerate(units):
        flat.extend(sorted(src_index[s] for s in state.subscriptions.get(u, ())))
        indptr[i + 1] = len(flat)
    inst = from_arrays(
        np.array([s.rate for s in sources], dtype=np.float64), indptr,
        np.array(flat, dtype=np.int64), len(nodes),
        capacity=np.array([nd.capacity for nd in nodes]),
        in_a=np.array([not nd.marked_for_removal for nd in nodes]),
        current=np.array([node_index[state.assignment[u]] if u in state.assignment else -1
                          for u in units], dtype=np.int64),
        migration_cost=np.array([by_id[u].migration_cost for u in units], dtype=np.float64),
        unit_ids=tuple(units))
    return Instance(**{**inst.__dict__, "node_ids": tuple(nd.id for nd in nodes),
                       "source_ids": tuple(s.id for s in sources),
                       "load": np.array([by_id[u].load for u in units], dtype=np.float64)})


def rows_placement_rows(state: ClusterState, plan: Plan, ran: Mapping[str, str], rule: str
                        ) -> list[dict[str, Any]]:
    rate = {s.id: s.rate for s in state.sources}
    reads = state.subscriptions
    stays = {u: n for u, n in state.assignment.items() if plan.assignment.get(u) == n}
    shipped: dict[str, set[str]] = {}
    for unit, node in stays.items():
        shipped.setdefault(node, set()).update(reads.get(unit, ()))
    rows = []
    for unit in sorted(state.arrivals):
        node = plan.assignment[unit]
        mine = sorted(reads.get(unit, ()))
        there = [s for s in mine if s in shipped.get(node, set())]
        rows.append(_row(unit, "arrival", ran.get(unit, ""), node, mine, there, rate, rule))
        shipped.setdefault(node, set()).update(mine)
    final: dict[str, dict[str, int]] = {}
    for unit, node in plan.assignment.items():
        for source in reads.get(unit, ()):
            final.setdefault(node, {}).setdefault(source, 0)
            final[node][source] += 1
    for move in plan.moves:
        mine = sorted(reads.get(move.keygroup, ()))
        there = [s for s in mine if final.get(move.dst, {}).get(s, 0) > 1]
        rows.append(_row(move.keygroup, "moved", move.src, move.dst, mine, there, rate,
                         f"moved by {plan.strategy} within the migration budget"))
    return rows


def rows_canonical_order(state: ClusterState) -> dict[str, list[Any]]:
    """What the old `canonical_state` listed, in order: units, assignment keys, S_q rows."""
    return {"keygroups": sorted((k.id for k in state.keygroups), key=natural_key),
            "assignment": sorted(state.assignment, key=natural_key),
            "subscriptions": [(u, state.subscriptions[u])
                              for u in sorted(state.subscriptions, key=natural_key)]}


# -- random periods ---------------------------------------------------------------------------

@st.composite
def periods(draw: st.DrawFn) -> dict[str, Any]:
    units = draw(st.lists(st.sampled_from(UNITS), min_size=1, max_size=len(UNITS), unique=True))
    nodes = draw(st.lists(st.sampled_from(NODES), min_size=1, max_size=len(NODES), unique=True))
    kg_rows = [{"keygroup": u, "operator": "query", "node": draw(st.sampled_from(nodes)),
                "load_pct": draw(st.floats(0, 50)), "state_bytes": draw(st.integers(0, 4096))}
               for u in units]
    node_rows = [{"node": n, "capacity": draw(st.sampled_from((1.0, 2.0, 0.5)))} for n in nodes]
    sources = draw(st.lists(st.sampled_from(SOURCES), min_size=1, unique=True))
    source_rows = [{"source": s, "tuples_per_s": draw(st.floats(0, 100)),
                    "bytes_per_s": draw(st.floats(0, 1e4))} for s in sources]
    # repeats, and rows of units the period does not have (a unit that left): both allowed
    sub_rows = [{"keygroup": draw(st.sampled_from((*units, "gone"))),
                 "source": draw(st.sampled_from(sources)), "node": nodes[0]}
                for _ in range(draw(st.integers(0, 20)))]
    current = {u: draw(st.sampled_from(nodes)) for u in draw(st.lists(
        st.sampled_from((*units, "gone")), unique=True))}
    return {"kg": kg_rows, "nodes": node_rows, "sources": source_rows, "subs": sub_rows,
            "current": current, "version": draw(st.sampled_from((None, 3))),
            "dynamic": draw(st.booleans())}


def _arrow(rows: list[dict[str, Any]], types: dict[str, pa.DataType]) -> pa.Table:
    """The lake's read of a facet table: its columns, in another row order than given."""
    return pa.table({c: pa.array([r[c] for r in reversed(rows)], t) for c, t in types.items()})


def _both(p: dict[str, Any]) -> tuple[ClusterState, ClusterState, ClusterState]:
    job = JobConfig("q", units="dynamic") if p["dynamic"] else JobConfig("f")
    base = build_state(job, p["kg"], p["nodes"], [], p["current"])
    old = rows_with_sources(base, job, p["kg"], p["sources"], p["subs"], p["current"],
                            p["version"])
    by_rows = with_sources(base, job, p["kg"], p["sources"], p["subs"], p["current"],
                           p["version"])
    by_arrow = with_sources(
        base, job, p["kg"],
        _arrow(p["sources"], {"source": pa.string(), "tuples_per_s": pa.float64(),
                              "bytes_per_s": pa.float64()}),
        _arrow(p["subs"], {"keygroup": pa.string(), "node": pa.string(), "source": pa.string()}),
        p["current"], p["version"])
    return old, by_rows, by_arrow


def _same_instance(a: Instance, b: Instance) -> None:
    for name, value in a.__dict__.items():
        other = b.__dict__[name]
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and np.array_equal(value, other), name
        else:
            assert value == other, name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(periods())
def test_the_columnar_sources_facet_builds_exactly_the_row_state(p: dict[str, Any]) -> None:
    old, by_rows, by_arrow = _both(p)
    for new in (by_rows, by_arrow):
        assert isinstance(new.subscriptions, Subscriptions)
        assert list(new.subscriptions.items()) == list(old.subscriptions.items())
        assert new.sources == old.sources
        assert list(new.assignment.items()) == list(old.assignment.items())
        assert new.arrivals == old.arrivals and new.facets == old.facets
        assert new == old  # the whole state, the mapping compared as a mapping


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(periods())
def test_canonical_order_instance_and_herding_plan_equal_the_row_code(p: dict[str, Any]) -> None:
    old, _, new = _both(p)
    canon = canonical_state(new)
    want = rows_canonical_order(old)
    assert [k.id for k in canon.keygroups] == want["keygroups"]
    assert list(canon.assignment) == want["assignment"]
    assert list(canon.subscriptions.items()) == want["subscriptions"]
    for state in (new, canon):
        _same_instance(from_state(state), rows_from_state(old))
    if "sources" in new.facets:  # Herding's offline rules place the same instance the same
        inst, ref = from_state(canon), rows_from_state(old)
        for algo in ("ic", "mms", "mqp"):
            assert np.array_equal(run_offline(inst, capacities(inst, 0.05), algo),
                                  run_offline(ref, capacities(ref, 0.05), algo))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(periods(), st.data())
def test_placements_csv_rows_equal_the_row_code(p: dict[str, Any], data: st.DataObject) -> None:
    _, _, state = _both(p)
    nodes = [n.id for n in state.nodes]
    units = [k.id for k in state.keygroups]
    assignment = {u: data.draw(st.sampled_from(nodes)) for u in units}
    dropped = data.draw(st.lists(st.sampled_from(units), unique=True))  # units the plan omits
    for u in dropped:
        if u not in state.arrivals:
            del assignment[u]
    metrics = PlanMetrics(0.0, 0.0, 0.0, 0.0)
    plan = Plan("herding_offline", assignment, moves_between(state, assignment), metrics,
                metrics, SolverStatus.HEURISTIC, None, 0.0)
    ran = {u: nodes[0] for u in units}
    assert placement_rows(state, plan, ran, "rule") == rows_placement_rows(state, plan, ran,
                                                                           "rule")


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(UNITS), st.frozensets(st.sampled_from(SOURCES)),
                       max_size=6),
       st.lists(st.sampled_from(UNITS), unique=True), st.lists(st.sampled_from(SOURCES)))
def test_subscriptions_are_the_mapping_and_refuse_what_the_row_check_refused(
        mapping: dict[str, frozenset[str]], known_units: list[str],
        known_sources: list[str]) -> None:
    subs = Subscriptions.of(mapping)
    assert dict(subs) == mapping and list(subs) == list(mapping)
    pairs = [(u, s) for u, read in mapping.items() for s in read]
    grouped = Subscriptions.from_pairs([u for u, _ in pairs], [s for _, s in pairs])
    assert dict(grouped) == {u: r for u, r in mapping.items() if r}
    assert list(grouped) == sorted(u for u, r in mapping.items() if r)
    state: dict[str, Any] = dict(
        nodes=(Node("n1"),), assignment={u: "n1" for u in known_units},
        keygroups=tuple(KeyGroup(u, "o", 1.0) for u in known_units),
        sources=tuple(Source(s, 1.0) for s in sorted(set(known_sources))))
    row_error = _row_check(mapping, set(known_units), set(known_sources))
    if row_error is None:
        assert ClusterState(**state, subscriptions=subs).subscriptions == mapping
    else:
        with pytest.raises(ValueError) as caught:
            ClusterState(**state, subscriptions=subs)
        assert str(caught.value) == row_error


def _row_check(mapping: Mapping[str, frozenset[str]], units: set[str], sources: set[str]
               ) -> str | None:
    """The model's row check of S_q before the columns (placement/facets.py)."""
    for unit, read in mapping.items():
        if unit not in units:
            return f"cluster state: subscriptions name unknown unit {unit!r}"
        bad = sorted(s for s in read if s not in sources)
        if bad:
            return f"cluster state: unit {unit!r} subscribes to unknown sources {bad}"
    return None


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(UNITS), min_size=1, unique=True),
       st.dictionaries(st.sampled_from((*UNITS, "x")), st.sampled_from((*NODES, "nx"))),
       st.frozensets(st.sampled_from((*UNITS, "x"))))
def test_the_models_set_checks_refuse_what_its_row_loops_refused(
        units: list[str], assignment: dict[str, str], arrivals: frozenset[str]) -> None:
    want = _row_units_check(units, assignment, arrivals)
    make = lambda: ClusterState(  # noqa: E731
        nodes=tuple(Node(n) for n in NODES), keygroups=tuple(KeyGroup(u, "o", 1.0) for u in units),
        assignment=assignment, arrivals=arrivals)
    if want is None:
        assert make().assignment == assignment
    else:
        with pytest.raises(ValueError) as caught:
            make()
        assert str(caught.value) == want


def _row_units_check(units: list[str], assignment: Mapping[str, str],
                     arrivals: frozenset[str]) -> str | None:
    """The model's unit checks before the set arithmetic (placement/model.py)."""
    known = set(units)
    for kg in units:
        if kg not in assignment and kg not in arrivals:
            return f"cluster state: key group {kg!r} has no current node"
    for kg in arrivals:
        if kg not in known:
            return f"cluster state: arrival {kg!r} is not a key group"
        if kg in assignment:
            return f"cluster state: arrival {kg!r} already has a current node"
    for kg, node in assignment.items():
        if kg not in known:
            return f"cluster state: assignment names unknown key group {kg!r}"
        if node not in NODES:
            return f"cluster state: key group {kg!r} is on unknown node {node!r}"
    return None


_BAD = st.sampled_from((None, math.nan, math.inf, -math.inf))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(periods(), st.data())
def test_the_state_from_arrow_units_is_the_state_from_rows(p: dict[str, Any],
                                                           data: st.DataObject) -> None:
    """keygroup_stats read as Arrow columns (the plan stage) builds the state the rows built,
    and a missing or non-finite load is refused with the same message, naming the same row."""
    rows = [dict(r) for r in p["kg"]]
    for r in rows:
        if data.draw(st.integers(0, 9), label="spoil") == 0:
            r[data.draw(st.sampled_from(("load_pct", "state_bytes")))] = data.draw(_BAD)
    table = pa.table({"keygroup": pa.array([r["keygroup"] for r in rows], pa.string()),
                      "operator": pa.array([r["operator"] for r in rows], pa.string()),
                      "node": pa.array([r["node"] for r in rows], pa.string()),
                      "load_pct": pa.array([r["load_pct"] for r in rows], pa.float64()),
                      "state_bytes": pa.array([r["state_bytes"] for r in rows], pa.float64())})
    job = JobConfig("q", units="dynamic") if p["dynamic"] else JobConfig("f")
    outcomes: list[tuple[str, Any, Any]] = []
    for keygroups in (rows, table):
        try:
            state = build_state(job, keygroups, p["nodes"], [], p["current"])
            outcomes.append(("state", state, list(state.assignment.items())))
        except StageError as exc:
            outcomes.append(("refused", str(exc), None))
    assert outcomes[0] == outcomes[1]
    if outcomes[0][0] == "state":  # and the facets and strategy inputs attach the same
        a, b = (with_sources(build_state(job, k, p["nodes"], [], p["current"]), job, k,
                             p["sources"], p["subs"], p["current"], p["version"])
                for k in (rows, table))
        assert a == b and list(a.assignment.items()) == list(b.assignment.items())
