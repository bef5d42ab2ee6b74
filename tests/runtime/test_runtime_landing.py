"""Landing a period: exact schemas, `_SUCCESS` last, all-or-nothing, deterministic, follows applies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

import runtime.source as source_module
from runtime.synthetic import (
    STATE_BYTES_PER_TUPLE,
    SyntheticJob,
    SyntheticSpec,
    initial_assignment,
)
from schemas.landing import RUNTIME_REPORT, SCHEMAS, SUCCESS_MARKER, period_dir, read_runtime_report
from schemas.manifest import Manifest, write_latest, write_manifest

END = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
SPEC = SyntheticSpec("demo")
KINDS = ("keygroups", "edges", "nodes")


def read(period: Path, kind: str) -> pd.DataFrame:
    return pq.read_table(period / kind / "part-0.parquet").to_pandas()


@pytest.fixture
def landed(tmp_path: Path) -> Path:
    return SyntheticJob(SPEC, tmp_path / "state").land_period(tmp_path / "landing", END)


def test_layout_and_exact_schemas(landed: Path, tmp_path: Path) -> None:
    assert landed == period_dir(tmp_path / "landing", "demo", END)
    assert landed.name == "period_end=2026-01-01T00:05:00Z"
    assert (landed / SUCCESS_MARKER).is_file()
    files = sorted(str(p.relative_to(landed)) for p in landed.rglob("*") if p.is_file())
    assert files == [
        "_RUNTIME.json",
        "_SUCCESS",
        "edges/part-0.parquet",
        "keygroups/part-0.parquet",
        "nodes/part-0.parquet",
    ]
    for kind in KINDS:
        assert pq.read_schema(landed / kind / "part-0.parquet").equals(SCHEMAS[kind]), kind
    assert [p.name for p in landed.parent.iterdir()] == [landed.name]  # no temp dirs left behind
    # the runtime's report: what it ran at the period's end (nothing applied yet) and its nodes
    report = read_runtime_report(landed)
    assert report is not None and report.version is None
    assert set(report.nodes) == set(read(landed, "nodes")["node"])


def test_the_runtime_report_is_checked_strictly(landed: Path) -> None:
    for text in ('{"format": 1, "version": 0, "nodes": ["n"]}', '{"format": 1, "version": null}',
                 '{"format": 2, "version": null, "nodes": ["n"]}', "not json",
                 '{"format": 1, "version": "3", "nodes": ["n"]}',
                 '{"format": 1, "version": null, "nodes": []}'):
        (landed / RUNTIME_REPORT).write_text(text)
        with pytest.raises(ValueError, match=str(landed / RUNTIME_REPORT)):
            read_runtime_report(landed)


def test_samples_sit_inside_the_period(landed: Path) -> None:
    start, end = pd.Timestamp(END - timedelta(seconds=300)), pd.Timestamp(END)
    for kind in KINDS:
        ts = read(landed, kind)["ts"]
        assert ts.min() >= start and ts.max() < end
        assert ts.nunique() == SPEC.samples_per_period


def test_metrics_are_consistent(landed: Path) -> None:
    kg, edges, nodes = (read(landed, k) for k in KINDS)
    assert len(kg) == 64 * 5 and len(nodes) == 8 * 5 and len(edges) == 3 * 16 * 16 * 5
    assert (kg.groupby("keygroup")["node"].first().to_dict()) == initial_assignment(SPEC)
    load = kg.groupby("keygroup")["cpu_ms"].sum() / (300 * 1000) * 100
    assert load.mean() == pytest.approx(60.0 * 8 / 64, rel=0.02)
    node_cpu = kg.groupby(["ts", "node"])["cpu_ms"].sum()
    landed_node_cpu = nodes.set_index(["ts", "node"])["cpu_ms"]
    pd.testing.assert_series_equal(
        landed_node_cpu.sort_index(), node_cpu.sort_index(), check_names=False
    )
    assert (nodes["capacity"] == 1.0).all()
    # Full partitioning between consecutive operators, with even rates.
    pairs = edges.groupby(["src_keygroup"])["dst_keygroup"].nunique()
    assert set(pairs.index) == {k for k in SPEC.keygroups if not k.startswith("op3")} and set(
        pairs
    ) == {16}
    assert (
        edges["src_keygroup"].str[:3].str[2].astype(int) + 1
        == edges["dst_keygroup"].str[:3].str[2].astype(int)
    ).all()
    spread = edges.groupby(["ts", "src_keygroup"])["tuples"].agg(["min", "max", "sum"])
    assert (spread["max"] - spread["min"] <= 1).all()
    out = kg.set_index(["ts", "keygroup"])["tuples_out"]
    assert (spread["sum"] == out.loc[spread.index]).all()
    incoming = edges.groupby(["ts", "dst_keygroup"])["tuples"].sum()
    tin = kg.set_index(["ts", "keygroup"])["tuples_in"]
    assert (incoming == tin.loc[incoming.index]).all()
    assert (edges["bytes"] == edges["tuples"] * 100).all()
    per_kg_in = kg.groupby("keygroup")["tuples_in"].sum()
    state = kg.groupby("keygroup")["state_bytes"].agg(["min", "max"])
    assert (state["min"] == state["max"]).all()
    assert (state["max"] == per_kg_in * STATE_BYTES_PER_TUPLE).all()


def test_landed_node_loads_show_the_drift(landed: Path) -> None:
    nodes = read(landed, "nodes")
    load = nodes.groupby("node")["cpu_ms"].sum() / (300 * 1000) * 100
    deviating = load[(load - 60.0).abs() > 3.0]
    assert len(deviating) == 2  # 20 % of 8 nodes, one +15, one -15
    assert sorted((deviating - 60.0).round().abs().tolist()) == pytest.approx([15.0, 15.0], abs=3)
    assert (deviating > 60).sum() == 1


def test_deterministic_across_processes_and_order(tmp_path: Path) -> None:
    later = END + timedelta(minutes=5)
    a = SyntheticJob(SPEC, tmp_path / "sa")
    b = SyntheticJob(SPEC, tmp_path / "sb")
    pa_ = a.land_period(tmp_path / "la", END)
    a.land_period(tmp_path / "la", later)
    b.land_period(tmp_path / "lb", later)  # other order
    pb = b.land_period(tmp_path / "lb", END)
    for kind in KINDS:
        assert (pa_ / kind / "part-0.parquet").read_bytes() == (
            pb / kind / "part-0.parquet"
        ).read_bytes()
    other = period_dir(tmp_path / "la", "demo", later)
    assert read(pa_, "keygroups")["cpu_ms"].tolist() != read(other, "keygroups")["cpu_ms"].tolist()


def test_relanding_identical_period_leaves_it_untouched(tmp_path: Path) -> None:
    job = SyntheticJob(SPEC, tmp_path / "state")
    first = job.land_period(tmp_path / "landing", END)
    before = {p: p.read_bytes() for p in first.rglob("*") if p.is_file()}
    inode = first.stat().st_ino
    again = job.land_period(tmp_path / "landing", END)
    assert again == first and again.stat().st_ino == inode
    assert {p: p.read_bytes() for p in again.rglob("*") if p.is_file()} == before


def test_failure_midway_leaves_no_period_and_keeps_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = SyntheticJob(SPEC, tmp_path / "state")
    landing = tmp_path / "landing"
    done = job.land_period(landing, END)
    old = (done / "keygroups" / "part-0.parquet").read_bytes()
    calls: list[Any] = []
    real = pq.write_table

    def flaky(table: Any, where: Any, **kw: Any) -> None:
        calls.append(where)
        if len(calls) == 2:
            raise OSError("disk full")
        real(table, where, **kw)

    monkeypatch.setattr(source_module.pq, "write_table", flaky)
    later = END + timedelta(minutes=5)
    with pytest.raises(OSError, match="disk full"):
        job.land_period(landing, later)
    assert not period_dir(landing, "demo", later).exists()
    assert list(landing.rglob(SUCCESS_MARKER)) == [done / SUCCESS_MARKER]
    assert sorted(p.name for p in (landing / "demo").iterdir()) == [done.name]
    # A failed re-land (after a placement change) keeps the complete old copy in place.
    moved = {**initial_assignment(SPEC), "op0-kg000": "node-05"}
    write_manifest(
        tmp_path / "pub",
        Manifest.create(job_id="demo", version=1, period_end=END, plan_id="p1", assignment=moved),
    )
    write_latest(tmp_path / "pub", "demo", 1)
    assert job.apply_latest(tmp_path / "pub").applied
    calls.clear()
    with pytest.raises(OSError):
        job.land_period(landing, END)
    assert (done / "keygroups" / "part-0.parquet").read_bytes() == old and (
        done / SUCCESS_MARKER
    ).exists()


def test_crash_midway_leaves_only_a_hidden_dir_without_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pq.write_table

    def crash(table: Any, where: Any, **kw: Any) -> None:
        real(table, where, **kw)
        if "edges" in str(where):
            raise KeyboardInterrupt  # the process dies here

    monkeypatch.setattr(source_module.pq, "write_table", crash)
    monkeypatch.setattr(
        source_module.shutil, "rmtree", lambda *a, **k: None
    )  # no cleanup after a kill
    with pytest.raises(KeyboardInterrupt):
        SyntheticJob(SPEC, tmp_path / "state").land_period(tmp_path / "landing", END)
    (leftover,) = list((tmp_path / "landing" / "demo").iterdir())
    assert leftover.name.startswith(".") and (leftover / "edges" / "part-0.parquet").exists()
    assert not (leftover / SUCCESS_MARKER).exists()
    assert not list((tmp_path / "landing" / "demo").glob("period_end=*"))


def test_apply_then_land_shows_the_new_placement(tmp_path: Path) -> None:
    job = SyntheticJob(SPEC, tmp_path / "state")
    pub = tmp_path / "pub"
    new = initial_assignment(SPEC)
    new["op0-kg000"], new["op2-kg005"] = "node-07", "node-03"
    write_manifest(
        pub, Manifest.create(job_id="demo", version=1, period_end=END, plan_id="p1", assignment=new)
    )
    write_latest(pub, "demo", 1)
    assert job.apply_latest(pub).moved == ("op0-kg000", "op2-kg005")
    later = END + timedelta(minutes=5)
    kg = read(job.land_period(tmp_path / "landing", later), "keygroups")
    assert kg.groupby("keygroup")["node"].agg(set).map(len).max() == 1
    assert kg.groupby("keygroup")["node"].first().to_dict() == new
    nodes = read(period_dir(tmp_path / "landing", "demo", later), "nodes")
    counts = kg[kg["ts"] == kg["ts"].min()].groupby("node").size()
    assert counts["node-07"] == 9 and counts["node-00"] == 7 and len(nodes) == 8 * 5
