"""The distributed SPRAWL DP's partition (§4.4.1): border nodes stand for their clusters."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.sprawl.distributed import Zones, distributed_dp, routes_decompose, zones_of
from placement.sprawl.dp import algorithm1
from placement.sprawl.instance import Instance, evaluate
from placement.sprawl.netgen import transit_stub
from placement.sprawl.sharing import instance_of
from placement.sprawl.topology import Routing, routing_of
from placement.sprawl.workload import build, random_spec


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
