"""A topology file is read as untrusted: bounded in size (schemas/limits.py), checked in linear
time, never echoed, never blocking (no Spark needed)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from jobs.errors import StageError
from jobs.facets.network import attach_network
from placement.model import ClusterState, KeyGroup, Node
from placement.sprawl.topology import TopologyError, load_topology
from schemas.config import JobConfig
from schemas.limits import TOPOLOGY_MAX_SITES


def _chain(path: Path, sites: int) -> Path:
    lines = [f'[[sites]]\nnode = "s{i}"\n' for i in range(sites)]
    lines += [f'[[links]]\na = "s{i}"\nb = "s{i + 1}"\nlatency_ms = 1.0\n'
              for i in range(sites - 1)]
    path.write_text("\n".join(lines))
    return path


def test_a_topology_at_the_limit_loads_and_one_past_it_is_refused(tmp_path: Path) -> None:
    assert len(load_topology(_chain(tmp_path / "ok.toml", TOPOLOGY_MAX_SITES)).network.sites) \
        == TOPOLOGY_MAX_SITES
    with pytest.raises(TopologyError, match=f"{TOPOLOGY_MAX_SITES + 1} sites, over the limit"):
        load_topology(_chain(tmp_path / "big.toml", TOPOLOGY_MAX_SITES + 1))


def test_a_huge_topology_is_refused_at_once(tmp_path: Path) -> None:
    """10^5 sites took 199 s in the quadratic duplicate check, then 74.5 GiB in routing."""
    doc = tmp_path / "huge.json"
    doc.write_text('{"sites": [' + ",".join(f'{{"node": "s{i}"}}' for i in range(100_000))
                   + "]}")
    started = time.perf_counter()
    with pytest.raises(TopologyError, match="100000 sites, over the limit"):
        load_topology(doc)
    assert time.perf_counter() - started < 10


def test_a_credentials_file_as_topology_is_refused_without_printing_it(tmp_path: Path) -> None:
    secret = tmp_path / "credentials.toml"
    secret.write_text('user = "admin"\npassword = "hunter2-s3cret"\n[sites]\nnode = "x"\n')
    with pytest.raises(TopologyError) as caught:
        load_topology(secret)
    assert "hunter2" not in str(caught.value) and "admin" not in str(caught.value)
    assert "password" in str(caught.value)  # the offending key is named, its value is not
    job = JobConfig("wan", strategy="sprawl", topology=str(secret))
    state = ClusterState(nodes=(Node("x"),), keygroups=(KeyGroup("u", "op", 1.0),),
                         assignment={"u": "x"})
    with pytest.raises(StageError) as stage:
        attach_network(job, state, "sprawl", {})
    assert "hunter2" not in str(stage.value) and stage.value.where and stage.value.fix


def test_a_fifo_as_topology_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "topology.toml"
    os.mkfifo(fifo)
    with pytest.raises(TopologyError, match="not a regular file"):
        load_topology(fifo)


def test_a_site_id_mlflow_would_refuse_is_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text('[[sites]]\nnode = "gw#1"\n')
    with pytest.raises(TopologyError, match=r"site id 'gw#1' contains '#'"):
        load_topology(path)
