"""The what-if input is data: written as JSON, read back by constructing known types only, so a
tampered artifact can never run code (as unpickling one did)."""

from __future__ import annotations

import base64
import json
import math
import pickle
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.whatif.codec import decode, encode
from jobs.whatif.stage import INPUT_ARTIFACT, WhatIfInput, load_input, run_whatif, whatif_input
from placement.facets import Link, Network, Site, Source, Stream
from placement.model import Budget, ClusterState, KeyGroup, Node, Phase
from placement.registry import get_strategy
from placement.workloads.synthetic import synthetic_state
from schemas.config import JobConfig, Paths

STAMP = "2026-01-01T00:05:00Z"
EXTRA = {WhatIfInput.__name__: WhatIfInput}


def _state() -> ClusterState:
    """Every facet at once: sources and subscriptions, streams and a load model, a network with a
    pinned unit and an infinite bandwidth, an arrival, unequal capacities, a node of B."""
    nodes = (Node("n1", 1.0), Node("n2", 2.5), Node("n3", 1.0, marked_for_removal=True))
    units = tuple(KeyGroup(f"u{i}", "op", 10.0 + i, state_bytes=1e6 * i, migration_cost=i,
                           loads={"cpu": 1.0 + i}) for i in range(4))
    return ClusterState(
        nodes=nodes, keygroups=units,
        assignment={"u0": "n1", "u1": "n2", "u2": "n3"},
        sources=(Source("s1", 100.0, 1e3), Source("s2", 0.0)),
        subscriptions={"u0": frozenset({"s1", "s2"}), "u1": frozenset({"s1"})},
        streams=(Stream("in0", 500.0, 400.0),),
        load_model={u.id: {"in0": 0.01 * (i + 1)} for i, u in enumerate(units)},
        network=Network(sites=(Site("n1", "us", True), Site("n2", "eu"), Site("n3", "eu")),
                        links=(Link("n1", "n2", 80.0), Link("n2", "n3", 1.0, 1e9, 0.5))),
        pinned={"u0": "n1"},
        arrivals=frozenset({"u3"}),
    )


def test_the_input_round_trips_exactly_with_every_facet() -> None:
    state = _state()
    ready = ClusterState(nodes=state.nodes, keygroups=state.keygroups[:3],
                         assignment=state.assignment)
    plan = get_strategy("greedy")(ready, Budget(max_migrations=2))
    plan = replace(plan, phases=(Phase("warm start", 0.01), Phase("solve", 0.25, "optimal")))
    job = JobConfig("wi", max_migrations=2, shadow_strategies=("greedy", "milp"))
    data = whatif_input(job, STAMP, "greedy", state, plan, Budget(max_migrations=2))
    assert data is not None
    text = encode(data, EXTRA)
    back = decode(text, EXTRA)
    assert back == data and isinstance(back.state.subscriptions["u0"], frozenset)
    assert math.isinf(back.state.network.links[0].bandwidth)
    assert encode(back, EXTRA) == text  # stable bytes


@pytest.mark.parametrize("document", [
    '{"$type": "system", "fields": {"command": "touch /tmp/x"}}',  # not a known type
    '{"$type": "Node", "fields": {"id": "n", "__class__": "x"}}',  # not one of its fields
    '{"$enum": "Signals", "value": 9}',
    '{"$weird": 1}',
    "[" * 5000 + "]" * 5000,
])
def test_a_document_of_unknown_types_is_refused(document: str) -> None:
    with pytest.raises(ValueError, match="what-if input"):
        decode(document, EXTRA)


class _Planted:
    """What a tampered pickle runs when loaded: here, it creates a file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))  # unpickling opens (creates) the marker


def test_a_tampered_artifact_never_runs_code(tmp_path: Path) -> None:
    from mlflow import MlflowClient

    from jobs.plan.stage import job_budget, plan_to_dict
    from jobs.tracking.store import CycleRecord, log_cycle, tag_run
    from jobs.whatif.stage import keep_input

    paths = Paths(tmp_path / "home")
    job = JobConfig("wi", max_migrations=3, shadow_strategies=("greedy",))
    state = ClusterState(nodes=_state().nodes[:2], keygroups=_state().keygroups[:3],
                         assignment={"u0": "n1", "u1": "n2", "u2": "n1"})
    plan = get_strategy(job.strategy)(state, job_budget(job))
    plan_json = {"job_id": job.job_id, "period_end": STAMP, **plan_to_dict(plan)}
    run_id = log_cycle(paths, CycleRecord(job, STAMP, job.strategy, plan_json, None,
                                          {"reconf.base_version": "None"}), state, plan)
    keep_input(paths, run_id, job, STAMP, job.strategy, state, plan, job_budget(job))
    tag_run(paths, run_id, {"reconf.publish_status": "published",
                            "reconf.assignment_version": "1"})
    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    assert load_input(client, run_id, paths) is not None  # the pipeline's own input reads back

    marker = tmp_path / "pwned"
    tags = client.get_run(run_id).data.tags
    kept = paths.home / tags["reconf.whatif.input"]  # the file the run names, by its plan key
    assert kept.is_file() and INPUT_ARTIFACT not in {
        a.path for a in client.list_artifacts(run_id, "whatif")}  # not an MLflow artifact
    good = kept.read_bytes()
    kept.write_bytes(pickle.dumps(_Planted(marker)))  # the file replaced
    result = run_whatif(job, STAMP, paths=paths)
    assert not marker.exists()
    assert result.status == "skipped" and "is not one the pipeline wrote" in result.reason
    assert "SHA-256 differs" in result.reason
    kept.write_bytes(good.replace(b'"load":[', b'"load":[1e308,', 1))  # one value changed
    assert "SHA-256 differs" in run_whatif(job, STAMP, paths=paths).reason
    kept.unlink()
    assert "cannot be read" in run_whatif(job, STAMP, paths=paths).reason

    # a run of an older release: its input an artifact, which is read, and never unpickled
    old = log_cycle(paths, CycleRecord(job, "2026-01-01T00:10:00Z", job.strategy, plan_json,
                                       None, {"reconf.base_version": "None"}), state, plan)
    tag_run(paths, old, {"reconf.publish_status": "published", "reconf.assignment_version": "2"})
    for name in ("input.pkl", Path(INPUT_ARTIFACT).name):  # both the old and the current name
        planted = tmp_path / "planted" / name
        planted.parent.mkdir(exist_ok=True)
        planted.write_bytes(pickle.dumps(_Planted(marker)))
        client.log_artifact(old, str(planted), "whatif")
    result = run_whatif(job, "2026-01-01T00:10:00Z", paths=paths)
    assert not marker.exists()
    assert result.status == "skipped" and "is not one the pipeline wrote" in result.reason


def test_the_input_file_is_named_by_the_plan_and_stays_under_the_home(tmp_path: Path) -> None:
    """The key is a place under RECONF_HOME whatever the ids hold; a run naming a place
    outside it is refused."""
    from jobs.whatif.input import input_key

    key = input_key("../job x", "../../etc/passwd#1")
    assert key.startswith("whatif/") and ".." not in Path(key).parts and " " not in key
    with pytest.raises(ValueError, match="not a place under RECONF_HOME"):
        load_input(None, "r", Paths(tmp_path), {"reconf.whatif.input": "../outside.json"})


@settings(deadline=None, max_examples=30)
@given(nodes=st.integers(1, 6), units=st.integers(1, 20), seed=st.integers(0, 10_000),
       params=st.dictionaries(st.text(min_size=1, max_size=8),
                              st.one_of(st.floats(allow_nan=False), st.integers(), st.booleans(),
                                        st.none(), st.lists(st.integers(), max_size=3)),
                              max_size=4))
def test_any_state_and_params_round_trip(nodes: int, units: int, seed: int,
                                         params: dict[str, object]) -> None:
    state = synthetic_state(nodes=nodes, keygroups=max(units, nodes), operators=1, varies=30.0,
                            seed=seed)
    plan = get_strategy("greedy")(state, Budget(max_migrations=2))
    data = WhatIfInput("j", STAMP, "greedy", plan, state, Budget(max_migrations=2), None, 10.0,
                       (("milp", params),), {"cg": "no utilisation facet"})
    assert decode(encode(data, EXTRA), EXTRA) == data


def test_a_state_with_communication_columns_round_trips() -> None:
    """ClusterState holds its edges as columns (placement/comm.py `CommEdges`), dropped pairs
    included: the what-if input of any job with traffic (ALBIC, COLA, the replay jobs)."""
    import numpy as np

    from placement.comm import CommEdges

    state = synthetic_state(nodes=3, keygroups=8, operators=2, varies=30.0, seed=5)
    units = tuple(k.id for k in state.keygroups)
    edges = CommEdges(units, np.array([0, 1, 2]), np.array([1, 2, 0]), np.array([5.0, 2.5, 0.0]),
                      np.array([0.0] * (len(units) - 1) + [1.5]))
    state = replace(state, edges=edges)
    plan = get_strategy("greedy")(state, Budget(max_migrations=2))
    data = WhatIfInput("j", STAMP, "greedy", plan, state, Budget(max_migrations=2), None, 10.0,
                       (("albic", {}),), {})
    back = decode(encode(data, EXTRA), EXTRA)
    comm = back.state.comm
    assert isinstance(comm, CommEdges) and comm.units == units
    for name in ("src", "dst", "rate", "dropped"):
        assert np.array_equal(getattr(comm, name), getattr(edges, name)), name
    assert list(back.state.edges) == list(state.edges)
    def column(values: list[float], dtype: str) -> str:
        return base64.b64encode(np.asarray(values, dtype=dtype).tobytes()).decode("ascii")

    negative = {"units": ["a"], "src": column([0], "<i8"), "dst": column([0], "<i8"),
                "rate": column([-1], "<f8"), "dropped": column([0], "<f8")}
    with pytest.raises(ValueError, match=r"communication columns: .*rate -1"):
        decode(json.dumps({"$comm": negative}))
    with pytest.raises(ValueError, match="must be a base64 string"):
        decode(json.dumps({"$comm": {**negative, "rate": [1.0]}}))
