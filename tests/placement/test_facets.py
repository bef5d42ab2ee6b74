"""The optional facets of ClusterState: each names only what the state knows, and is reported."""

from __future__ import annotations

import math

import pytest

from placement.facets import Link, Network, Site, Source, Stream
from placement.model import ClusterState, KeyGroup, Node, moves_between

NODES = (Node("n1"), Node("n2"))
UNITS = (KeyGroup("q1", "op", 1.0), KeyGroup("q2", "op", 1.0), KeyGroup("q3", "op", 1.0))


def _state(**facets: object) -> ClusterState:
    facets.setdefault("assignment", {"q1": "n1", "q2": "n2", "q3": "n1"})
    return ClusterState(NODES, UNITS, **facets)  # type: ignore[arg-type]


def test_a_core_state_has_only_the_utilisation_facet() -> None:
    assert _state().facets == frozenset({"utilisation"})


def test_every_facet_is_reported_when_present() -> None:
    state = _state(
        assignment={"q1": "n1", "q2": "n2"},
        arrivals=frozenset({"q3"}),
        sources=(Source("s", 2.0),),
        subscriptions={"q1": frozenset({"s"}), "q3": frozenset({"s"})},
        streams=(Stream("r", 10.0, 1.0),),
        load_model={"q1": {"r": 0.5}},
        network=Network((Site("n1", "z1"), Site("n2", "z2")), (Link("n1", "n2", 5.0),)),
        pinned={"q1": "n1"},
    )
    assert state.facets == {"utilisation", "sources", "load_model", "network", "arrivals"}


def test_placing_an_arrival_is_not_a_move() -> None:
    state = _state(assignment={"q1": "n1", "q2": "n2"}, arrivals=frozenset({"q3"}))
    moves = moves_between(state, {"q1": "n2", "q2": "n2", "q3": "n1"})
    assert [m.keygroup for m in moves] == ["q1"]


@pytest.mark.parametrize(
    ("facets", "message"),
    [
        ({"assignment": {"q1": "n1", "q2": "n2"}}, "'q3' has no current node"),
        ({"arrivals": frozenset({"q1"})}, "arrival 'q1' already has a current node"),
        ({"arrivals": frozenset({"qx"})}, "arrival 'qx' is not a key group"),
        ({"sources": (Source("s", 1.0),), "subscriptions": {"q1": frozenset({"t"})}},
         "unknown sources ['t']"),
        ({"sources": (Source("s", 1.0), Source("s", 2.0))}, "source ids must be unique"),
        ({"subscriptions": {"qx": frozenset()}}, "unknown unit 'qx'"),
        ({"streams": (Stream("r", 1.0),), "load_model": {"q1": {"x": 1.0}}},
         "unknown streams ['x']"),
        ({"streams": (Stream("r", 1.0),), "load_model": {"q1": {"r": -1.0}}},
         "finite number >= 0"),
        ({"network": Network((Site("n1"),), ())}, "nodes ['n2'] are not sites"),
        ({"pinned": {"q1": "n9"}}, "pinned to unknown node 'n9'"),
    ],
)
def test_a_facet_naming_what_the_state_does_not_know_is_refused(
    facets: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        _state(**facets)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Source("s", -1.0), "rate must be a finite number >= 0"),
        (lambda: Source("s", math.nan), "rate must be a finite number >= 0"),
        (lambda: Stream("r", 1.0, 2.0), "min_rate 2.0 is above the observed rate"),
        (lambda: Link("a", "b", 0.0), "latency_ms must be a finite number > 0"),
        (lambda: Link("a", "b", -3.0), "latency_ms must be a finite number > 0"),
        (lambda: Link("a", "a", 1.0), "joins two different sites"),
        (lambda: Network((Site("a"),), (Link("a", "b", 1.0),)), "unknown site 'b'"),
    ],
)
def test_bad_facet_values_are_refused_with_what_is_wrong(build: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()  # type: ignore[operator]
