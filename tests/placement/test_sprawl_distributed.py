"""The distributed SPRAWL DP's partition (§4.4.1): border nodes stand for their clusters; and
multi-query sharing's three ways to reuse (§5.2.1, §5.2.4)."""

from __future__ import annotations

import copy
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.sprawl.distributed import Zones, distributed_dp, routes_decompose, zones_of
from placement.sprawl.dp import algorithm1
from placement.sprawl.instance import Instance, evaluate
from placement.sprawl.netgen import clusters, transit_stub
from placement.sprawl.sharing import Deployment, _alternatives, instance_of, place_query
from placement.sprawl.topology import Routing, routing_of
from placement.sprawl.workload import QuerySpec, build, random_spec


@lru_cache(maxsize=16)
def _net(seed: int, domains: int) -> tuple[Routing, Zones]:
    r = routing_of(transit_stub(seed, domains=domains, transit=2, stubs=2, stub_size=3))
    return r, zones_of(r)


@st.composite
def wan_queries(draw: st.DrawFn) -> tuple[Instance, Zones, bool]:
    """A query on a small transit–stub network, either objective, a CPU weight per zone (so a
    zone's borders cost what its cheapest host costs); sources and sink anywhere, or on border
    nodes only (the third value)."""
    r, zones = _net(draw(st.integers(0, 5)), draw(st.integers(2, 3)))
    size, joins = draw(st.sampled_from([(4, 1), (6, 1), (8, 2), (10, 3)]))
    on_borders = draw(st.booleans())
    ends = ([int(s) for z in range(len(zones.names)) for s in zones.members[z][zones.borders[z]]]
            if on_borders else list(range(r.n)))
    spec = random_spec(np.random.default_rng(draw(st.integers(0, 10_000))), "q", size, joins,
                       ends, ends)
    per_zone = [draw(st.floats(0.5, 3.0)) for _ in zones.names]
    inst = instance_of([build(spec)], r, beta=draw(st.sampled_from([0.01, 0.1, 1.0])),
                       objective=draw(st.sampled_from(["resource", "sbon"])),
                       cpu_weight=np.array([per_zone[z] for z in zones.of_site]))
    return inst, zones, on_borders


@settings(max_examples=60, deadline=None)
@given(case=wan_queries())
def test_the_distributed_dp_is_never_above_its_partitions_estimate(
        case: tuple[Instance, Zones, bool]) -> None:
    """Step 2 searches the partition's proxy placement among others and is exact for its
    partition: central ≤ true cost, DP cost ≤ the partition's estimate; every operator in its
    zone; and where routes decompose and the ends sit on border nodes, it is the optimum."""
    inst, zones, on_borders = case
    central = algorithm1(inst)
    dist = distributed_dp(inst, zones)
    part = dist.partition
    assert part is not None
    assert dist.cost <= part.cost + 1e-9 * max(1.0, part.cost)
    assert evaluate(inst, dist.x).total >= central.cost - 1e-9 * max(1.0, central.cost)
    assert np.array_equal(zones.of_site[dist.x], part.zone_of_op)
    assert np.array_equal(zones.of_site[part.proxy], part.zone_of_op)
    if routes_decompose(inst, zones):
        assert evaluate(inst, dist.x).total == pytest.approx(dist.cost, rel=1e-9, abs=1e-9)
        if on_borders:  # the optimum's free operators sit on border nodes (stubs are leaves)
            assert dist.cost == pytest.approx(central.cost, rel=1e-9, abs=1e-9)


def test_the_border_partition_beats_the_literal_formula_4_7() -> None:
    """The first reading (wide-area bandwidth only, no latency) puts operators in the wrong
    zone where the border nodes' routes say otherwise; the border partition finds the optimum."""
    worse = 0
    for seed in range(6):
        r, zones = _net(seed, 3)
        ends = [int(s) for z in range(3) for s in zones.members[z][zones.borders[z]]]
        rng = np.random.default_rng(seed)
        for _ in range(4):
            inst = instance_of([build(random_spec(rng, "q", 10, 3, ends, ends))], r,
                               objective="sbon")
            if not routes_decompose(inst, zones):
                break
            central = algorithm1(inst).cost
            assert distributed_dp(inst, zones).cost == pytest.approx(central, rel=1e-9)
            literal = distributed_dp(inst, zones, how="formula47")
            assert literal.partition is not None and (literal.partition.proxy == -1).all()
            worse += literal.cost > central * (1 + 1e-9)
    assert worse >= 5  # 11 of 24 queries


def _deployment() -> Deployment:
    r = routing_of(clusters(5, zones=3, size=5))
    return Deployment(r, np.full(r.n, 1e4), np.ones(r.n))


def test_an_equivalent_operator_is_reused_not_placed_again() -> None:
    """Definition 2 (§5.2.1): the same join over the same streams, for a second client, reads
    the deployed join's output; its own sources, filter and join are not placed."""
    dep = _deployment()
    first = QuerySpec("q1", ((0, (0.0, 50.0)), (6, None)), ((0, 1),), (), 12)
    place_query(first, dep, sharing=True)
    again = QuerySpec("q2", first.leaves, first.merges, (), 3)
    alone = place_query(again, copy.deepcopy(dep), sharing=False)
    shared = place_query(again, dep, sharing=True)
    kinds = [op.kind for op in shared.plan.ops]
    assert all(shared.x[i] < 0 for i, k in enumerate(kinds) if k != "sink")
    assert shared.cost < alone.cost


def test_a_covered_filter_reads_the_wider_deployed_filter() -> None:
    """Definition 1: a filter [20, 40) over a stream already filtered by [0, 80) may take the
    wider filter's output (0.8 of the stream's rate) instead of the stream itself; a filter
    wider than any deployed one [10, 90) may not."""
    dep = _deployment()
    place_query(QuerySpec("q1", ((0, (0.0, 80.0)), (6, None)), ((0, 1),), (), 12), dep,
                sharing=True)
    no_filters = copy.deepcopy(dep)
    no_filters.filters.clear()
    for lo, hi, covered in ((20.0, 40.0, True), (10.0, 90.0, False)):
        plan = build(QuerySpec("q2", ((0, (lo, hi)), (11, None)), ((0, 1),), (), 13))
        inst = instance_of([plan], dep.routing)
        e = next(i for i, (u, v, _) in enumerate(plan.edges)
                 if plan.ops[u].key == "S0" and plan.ops[v].kind == "filter")
        with_cover = _alternatives(plan, inst, dep)[e]
        stream_only = _alternatives(plan, inst, no_filters)[e]
        assert bool((with_cover < stream_only - 1e-9).any()) is covered
        assert (with_cover <= stream_only + 1e-9).all()
    narrow = place_query(QuerySpec("q2", ((0, (20.0, 40.0)), (11, None)), ((0, 1),), (), 13),
                         dep, sharing=True)
    src = next(i for i, op in enumerate(narrow.plan.ops) if op.key == "S0")
    filt = next(i for i, op in enumerate(narrow.plan.ops) if op.kind == "filter")
    assert narrow.x[src] < 0 <= narrow.x[filt]


def test_reordering_joins_first_what_a_deployed_join_already_joins() -> None:
    """§5.2.4: q2 joins A with C, then B; A ⋈ B is deployed, so p' (A ⋈ B first, reused) is
    placed when it is cheaper, and it is cheaper than q2 as written."""
    dep = _deployment()
    place_query(QuerySpec("q1", ((0, None), (6, None)), ((0, 1),), (), 12), dep, sharing=True)
    spec = QuerySpec("q2", ((0, None), (11, None), (6, None)), ((0, 1), (0, 1)), (), 13)
    as_written = place_query(spec, copy.deepcopy(dep), sharing=False)
    placed = place_query(spec, dep, sharing=True)
    assert placed.reordered
    assert "J(S0|S6)" in {op.key for op in placed.plan.ops}
    assert placed.cost < as_written.cost
