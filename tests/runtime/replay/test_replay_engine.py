"""The engine: deterministic, state survives any migrations, PoTC merges, bad rows skipped."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import COORDS, make_data

from runtime.replay.datasets import Datasets, load_datasets
from runtime.replay.engine import ReplayEngine
from runtime.replay.flights import build_job, rain_bands
from runtime.replay.geohash import encode
from runtime.replay.source import ReplayJob, new_engine
from runtime.replay.spec import ReplaySpec
from schemas.manifest import Manifest, write_latest, write_manifest


def shuffle(engine: ReplayEngine, rng: random.Random, share: float) -> dict[str, str]:
    """A new assignment moving about `share` of the key groups to random nodes."""
    new = dict(engine.assignment)
    for kg in engine.layout.names:
        if rng.random() < share:
            new[kg] = rng.choice(engine.nodes)
    return new


def sink(engine: ReplayEngine, op: str) -> dict[str, float]:
    """Final results of `op` (what its windows emitted), summed per key over windows."""
    out: dict[str, float] = {}
    for (_w, e), (total, _c) in engine.results[op].items():
        key = engine.flow.keys[op][e]
        out[key] = out.get(key, 0.0) + total
    return out


def pandas_sums(data: Datasets, by: pd.Series, mask: pd.Series | None = None) -> dict[str, float]:
    f = data.flights
    ok = f["tailnum"].notna() & f["arr_delay"].notna()
    if mask is not None:
        ok &= mask
    return {str(k): float(v) for k, v in f[ok]["arr_delay"].groupby(by[ok]).sum().items()}


def test_state_survives_any_sequence_of_migrations(tiny: Datasets) -> None:
    spec = ReplaySpec("t3", job=3, nodes=4, keygroups_per_node=2, periods=6)
    engine = new_engine(spec, data=tiny)
    rng = random.Random(11)
    f = tiny.flights
    route = f["origin"] + "-" + f["dest"]
    order = np.argsort(f["event_s"].to_numpy(), kind="stable")
    period = pd.Series((np.arange(len(f)) * 6) // len(f), index=f.index[order]).sort_index()
    moved = 0
    for p in range(6):
        moved += len(engine.migrate(shuffle(engine, rng, 0.4), engine.nodes).moved)
        engine.step()
        if p == 3:  # live state mid-run = a group-by over the periods replayed so far
            assert engine.state_sums("sumdelay") == pytest.approx(
                pandas_sums(tiny, f["tailnum"], period <= 3))
    assert moved > 20
    assert sink(engine, "sumdelay") == pytest.approx(pandas_sums(tiny, f["tailnum"]))
    assert sink(engine, "routedelay") == pytest.approx(pandas_sums(tiny, route))
    assert engine.state_sums("sumdelay") == {}  # the year window closed at the end of the round


def test_real_data_sums_after_migrations() -> None:
    data = load_datasets()
    spec = ReplaySpec("r2", job=2, periods=6)
    engine = new_engine(spec)
    rng = random.Random(5)
    for _ in range(6):
        engine.migrate(shuffle(engine, rng, 0.3), engine.nodes)
        engine.step()
    f = data.flights
    expected = f.dropna(subset=["tailnum", "arr_delay"]).groupby("tailnum")["arr_delay"].sum()
    got = sink(engine, "sumdelay")
    assert len(got) == len(expected) == 4037
    assert got == pytest.approx({str(k): float(v) for k, v in expected.items()})


def test_skipped_rows_are_counted(tiny: Datasets) -> None:
    f = tiny.flights
    flow = build_job(4, tiny, periods=5)
    assert flow.skipped == {
        "flights without tail number": 40,
        "flights without arrival delay": int((f["tailnum"].notna() & f["arr_delay"].isna()).sum()),
        "weather rows without origin or precipitation": 5,
    }
    j1 = build_job(1, tiny, periods=5)
    assert j1.skipped == {"flights without arrival delay": 60}
    no_jfk = Datasets(f, tiny.weather, tiny.airports[tiny.airports["faa"] != "JFK"])
    assert build_job(1, no_jfk, periods=5).skipped[
        "flights without origin coordinates or destination"] == int((f["origin"] == "JFK").sum())
    bad = make_data(missing_tail=400, missing_delay=800, missing_precip=50)
    engine = new_engine(ReplaySpec("bad", job=4, nodes=3, keygroups_per_node=1, periods=4),
                        data=bad)
    for _ in range(4):
        engine.step()
    assert sum(c for _, c in engine.results["sumdelay"].values()) == len(
        bad.flights.dropna(subset=["tailnum", "arr_delay"]))


def test_rain_bands_against_the_running_maximum() -> None:
    w = pd.DataFrame({"origin": ["EWR"] * 5 + ["JFK"], "precip": [0.0, 0.2, 0.1, 0.4, 0.39, 0.0]})
    assert rain_bands(w)["band"].tolist() == [0, 9, 5, 9, 9, 0]


def test_potc_merges_partials_and_matches_key_grouping(tiny: Datasets) -> None:
    results = {}
    for routing in ("key", "potc"):
        spec = ReplaySpec(f"t1{routing}", job=1, nodes=3, keygroups_per_node=2, periods=5,
                          routing=routing, window_hours=48, top_k=3)
        engine = new_engine(spec, data=tiny)
        merges = 0
        for _ in range(5):
            m = engine.step()
            topk = range(engine.layout.offset["topk"], engine.layout.offset["topk"] + 6)
            merges += int(sum(t for s, d, t in zip(m.edge_src, m.edge_dst, m.edge_tuples,
                                                   strict=True) if s in topk and d in topk))
        results[routing] = (dict(engine.results["topk"]), dict(engine.results["global"]), merges)
    assert results["key"][2] == 0 and results["potc"][2] > 0
    assert results["potc"][0] == results["key"][0]  # merged partials = key grouping's sums
    assert results["potc"][1] == results["key"][1]
    # the global top-k of each window is pandas' top-k of the (window, route) delay sums
    f = tiny.flights.dropna(subset=["arr_delay"])
    start = (int(tiny.flights["event_s"].min()) // 86400) * 86400
    cells = {o: encode(*COORDS[o]) for o in ("EWR", "LGA", "JFK")}
    frame = pd.DataFrame({"window": (f["event_s"] - start) // (48 * 3600),
                          "route": f["origin"].map(cells) + ">" + f["dest"],
                          "delay": f["arr_delay"]})
    table = engine.flow.keys["topk"]
    assert set(frame["route"]) == set(table)
    sums = frame.groupby(["window", "route"])["delay"].sum().reset_index()
    sums["code"] = sums["route"].map(table.index)
    expected = {(int(r.window), int(r.code)): float(r.delay) for r in sums.sort_values(
        ["window", "delay", "code"], ascending=[True, False, True]).groupby("window").head(3)
        .itertuples()}
    candidates: dict[int, list[tuple[float, int]]] = {}
    for (w, e), (s, _c) in results["key"][1].items():
        candidates.setdefault(w, []).append((-s, e))
    got = {(w, e): -s for w, c in candidates.items() for s, e in sorted(c)[:3]}
    assert got == pytest.approx(expected)


def run_job(root: Path, data: Datasets, job: int, routing: str = "key") -> list[bytes]:
    spec = ReplaySpec(f"det{job}", job=job, nodes=3, keygroups_per_node=2, periods=5,
                      routing=routing)
    runtime = ReplayJob(spec, root / "runtime", data=data)
    rng = random.Random(2)
    files = []
    for n in range(1, 6):
        end = spec.start + timedelta(seconds=n * spec.period_s)
        where = runtime.land_period(root / "landing", end)
        files += [p.read_bytes() for p in sorted(where.rglob("*.parquet"))]
        new = shuffle(runtime.engine, rng, 0.5)
        write_manifest(root / "pub", Manifest.create(job_id=spec.job_id, version=n,
                                                      period_end=end, plan_id=f"p{n}",
                                                      assignment=new))
        write_latest(root / "pub", spec.job_id, n)
        assert runtime.apply_latest(root / "pub").applied
    return files


@pytest.mark.parametrize(("job", "routing"), [(4, "key"), (1, "potc")])
def test_same_run_twice_gives_identical_metrics(tiny: Datasets, tmp_path: Path, job: int,
                                                routing: str) -> None:
    first = run_job(tmp_path / "a", tiny, job, routing)
    second = run_job(tmp_path / "b", tiny, job, routing)
    assert len(first) == 15 and first == second


def test_restart_from_checkpoint_lands_the_same(tiny: Datasets, tmp_path: Path) -> None:
    spec = ReplaySpec("rs", job=3, nodes=3, keygroups_per_node=2, periods=4)
    ends = [spec.start + timedelta(seconds=n * spec.period_s) for n in (1, 2, 3)]
    straight = ReplayJob(spec, tmp_path / "a", data=tiny)
    for end in ends:
        last = straight.land_period(tmp_path / "la", end)
    for end in ends:  # a new process (a new ReplayJob) per period, as `reconf land` does
        other = ReplayJob(spec, tmp_path / "b", data=tiny).land_period(tmp_path / "lb", end)
    assert [p.read_bytes() for p in sorted(last.rglob("*.parquet"))] == [
        p.read_bytes() for p in sorted(other.rglob("*.parquet"))]
    again = ReplayJob(spec, tmp_path / "b", data=tiny)
    assert again.land_period(tmp_path / "lb", ends[1]) == other.parent / ends[1].strftime(
        "period_end=%Y-%m-%dT%H:%M:%SZ")  # an already replayed period is not replayed again
    assert again.engine.cursor == 3


def test_potc_on_job2_splits_keys_and_still_sums_right(tiny: Datasets) -> None:
    spec = ReplaySpec("p2", job=2, nodes=3, keygroups_per_node=2, periods=4, routing="potc")
    engine = new_engine(spec, data=tiny)
    split = 0
    for _ in range(4):
        m = engine.step()
        base = engine.layout.offset["sumdelay"]
        split += int(sum(t for s, d, t in zip(m.edge_src, m.edge_dst, m.edge_tuples, strict=True)
                         if s >= base and d >= base))  # partial sums merged at the year's end
    assert split > 0
    assert sink(engine, "sumdelay") == pytest.approx(pandas_sums(tiny, tiny.flights["tailnum"]))
