"""The live runtime: a stand-in engine run in real time, as a stream job's runtime runs.

`reconf runtime run --job J` (and `make up` for the jobs of RECONF_LIVE_JOBS) drives one job's
metrics source (runtime/source.py `MetricsSource`) on the wall clock, so that the job's
scheduled DAG runs find their periods landed and publish on their own:

- **Landing.** Each period lands once wall-clock time passes its end, on the job's grid
  (start_date + k·SPL). The first period is the newest one that has ended when the runtime
  starts, unless it is already landed (then the next one): the DAG's default catch-up runs
  exactly that period when it is unpaused, and its landing wait gives it one SPL from its end,
  so a runtime started with the scheduler makes the first scheduled run publish without
  waiting a whole period. Periods that ended while no runtime ran stay unlanded (their runs
  say the period did not land), as for a real engine that was down. Once running, the runtime
  lands every period in order, catching up at once if it fell behind (a busy machine, a
  suspended laptop). A period whose ``_SUCCESS`` marker exists is never landed again, whoever
  landed it (`reconf land`, an earlier run of this runtime). A landing that fails on the file
  system (OSError: a full disk) is tried again at the next poll; any other error ends the run.
- **Applying.** LATEST is polled every `poll_s`; a new version is applied at once through the
  source's own apply path (runtime/execution.py: wave by wave, stop flag, progress file), and
  once more right before each landing, so a period reports the newest version it could run.
  One line per wave comes from the execution record the apply leaves.
- **Health.** `kill_node` makes the runtime lose a node after its n-th landing: it writes a
  dead-node report (schemas/health.py) for the healing DAG. With `over_capacity` (the job's
  healing threshold, a fraction), a node whose measured utilisation in a landed period rises
  above it gets an over-capacity report, once per crossing (not every period it stays above).
- **Stopping.** `stop` (set by SIGTERM/SIGINT in the CLI) is looked at between steps only: a
  landing or a wave in progress finishes (and a landing is all-or-nothing anyway:
  runtime/source.py `write_period` renames a complete directory into place), so a stop never
  leaves a half-landed period.

One runtime per job: a lock on ``<state_root>/<job_id>/live.lock`` (released by the kernel
when the process dies) refuses a second one, which would land and apply twice; `reconf demo` and
`reconf apply` of the job hold it too, so they never land or apply beside a live runtime.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol

import pyarrow.parquet as pq

from runtime.execution import load_execution
from runtime.source import ApplyResult, MetricsSource, RuntimeState
from schemas.errors import ReconfError
from schemas.health import HealthReport, write_report
from schemas.landing import NODES, SUCCESS_MARKER, format_period_end, period_dir
from schemas.manifest import ManifestError, read_latest_version

__all__ = ["LiveRuntime", "LiveRuntimeError", "LiveSettings", "LiveSource", "Summary",
           "first_period", "newest_ended", "runtime_lock"]

LOCK_FILE = "live.lock"

#: Where the live runtime's lines go (print to stdout, or a list in tests).
Emit = Callable[[str], None]


class LiveRuntimeError(ReconfError):
    """The live runtime cannot start (what, where, fix)."""


class LiveSource(MetricsSource, Protocol):
    """A metrics source the live runtime can drive: it also says what it runs now."""

    @property
    def state(self) -> RuntimeState: ...


@dataclass(frozen=True)
class LiveSettings:
    """What the loop needs of the job and the stores (the CLI builds it from the job config)."""

    job_id: str
    start_date: datetime
    spl: timedelta
    landing: Path
    published: Path
    state_root: Path
    poll_s: float = 1.0
    kill_node: str | None = None
    kill_after: int = 1  # periods landed by this runtime before `kill_node` dies
    over_capacity: float | None = None  # utilisation (1.0 = full) that makes a health report


@dataclass(frozen=True)
class Summary:
    """What one run of the loop did (the CLI prints it on stop; the tests read it)."""

    landed: tuple[datetime, ...]
    applied: tuple[int, ...]
    reports: tuple[str, ...]


def newest_ended(start: datetime, spl: timedelta, now: datetime) -> datetime | None:
    """The newest period end of the grid at or before `now` (None before the first one)."""
    k = (now - start) // spl
    return start + k * spl if k >= 1 else None


def first_period(settings: LiveSettings, now: datetime) -> datetime:
    """The first period this runtime lands (the module docstring says why this one)."""
    newest = newest_ended(settings.start_date, settings.spl, now)
    if newest is None:
        return settings.start_date + settings.spl
    landed = _landed(settings, newest)
    return newest + settings.spl if landed else newest


def _landed(settings: LiveSettings, period_end: datetime) -> bool:
    return (period_dir(settings.landing, settings.job_id, period_end) / SUCCESS_MARKER).is_file()


@contextmanager
def runtime_lock(state_root: Path, job_id: str) -> Iterator[Path]:
    """Hold the job's live-runtime lock, or refuse: another live runtime of the job runs."""
    path = Path(state_root) / job_id / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise LiveRuntimeError(
                f"a live runtime of job {job_id!r} already runs (pid {holder}: `reconf runtime "
                "run`, `make up`'s, or a `reconf demo` / `reconf apply` of the job); side by "
                "side they would land and apply the job's periods twice", where=str(path),
                fix="stop that one first (`make down`, or SIGTERM to its pid), or leave it "
                "running: it applies each published version itself; `make status` lists it"
                ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)  # releases the lock


def _stamp(at: datetime) -> str:
    return format_period_end(at)


def _utilisation(period: Path, period_s: float) -> dict[str, float]:
    """Each node's measured load over its capacity in a landed period (1.0 = full): its CPU
    time over the period's length, from the nodes table the period landed."""
    table = pq.read_table(period / NODES).to_pydict()
    cpu: dict[str, float] = {}
    capacity: dict[str, float] = {}
    for node, cap, ms in zip(table["node"], table["capacity"], table["cpu_ms"], strict=True):
        cpu[node] = cpu.get(node, 0.0) + float(ms)
        capacity[node] = float(cap)
    return {n: cpu[n] / (period_s * 1000.0 * capacity[n]) for n in cpu if capacity[n] > 0}


class LiveRuntime:
    """The loop of the module docstring, over one job's source."""

    def __init__(self, settings: LiveSettings, source: LiveSource, emit: Emit) -> None:
        self.settings, self.source, self.emit = settings, source, emit
        self._latest_seen: int | None = None
        self._over: set[str] = set()
        self._landed: list[datetime] = []
        self._applied: list[int] = []
        self._reports: list[str] = []

    def say(self, line: str) -> None:
        self.emit(f"{_stamp(datetime.now(UTC))} {self.settings.job_id}: {line}")

    def run(self, stop: threading.Event) -> Summary:
        """Land, apply and report until `stop` is set; what it did."""
        s = self.settings
        nxt = first_period(s, datetime.now(UTC))
        self.say(f"live runtime started (pid {os.getpid()}): SPL {s.spl}, grid from "
                 f"{_stamp(s.start_date)}; first period {_stamp(nxt)}, then one every "
                 f"{s.spl}; applies each published version as it appears")
        self.poll_latest(first=True)
        while not stop.is_set():
            now = datetime.now(UTC)
            if now >= nxt:
                if _landed(s, nxt):
                    self.say(f"period {_stamp(nxt)} is already landed; not landing it again")
                else:
                    self.poll_latest()
                    try:
                        self.land(nxt)
                    except OSError as exc:  # a full disk, a lost mount: the period is not lost
                        self.say(f"could not land period {_stamp(nxt)} ({exc}); trying again "
                                 f"in {s.poll_s:g} s")
                        stop.wait(s.poll_s)
                        continue
                nxt += s.spl
                continue
            self.poll_latest()
            stop.wait(min(s.poll_s, max((nxt - datetime.now(UTC)).total_seconds(), 0.0)))
        self.say(f"stopped: {len(self._landed)} period(s) landed, none half-landed; the next, "
                 f"{_stamp(nxt)}, was not landed")
        return Summary(tuple(self._landed), tuple(self._applied), tuple(self._reports))

    def land(self, period_end: datetime) -> None:
        s = self.settings
        t0 = time.monotonic()
        where = self.source.land_period(s.landing, period_end)
        running = self.source.state.version
        self._landed.append(period_end)
        self.say(f"landed period {_stamp(period_end)} in {time.monotonic() - t0:.2f} s "
                 f"(running {'v' + str(running) if running else 'the initial allocation'})")
        if s.kill_node is not None and len(self._landed) == s.kill_after:
            self.report(HealthReport(s.job_id, f"{s.kill_node}-dead-{_id_stamp(period_end)}",
                                     _now(), (s.kill_node,)), "dead")
        if s.over_capacity is not None:
            self.check_capacity(where, period_end)

    def check_capacity(self, period: Path, period_end: datetime) -> None:
        """An over-capacity report for each node that crossed the threshold this period."""
        threshold = self.settings.over_capacity
        assert threshold is not None
        util = _utilisation(period, self.settings.spl.total_seconds())
        over = {n for n, u in util.items() if u > threshold}
        for node in sorted(over - self._over):
            self.report(HealthReport(self.settings.job_id,
                                     f"{node}-over-{_id_stamp(period_end)}", _now(),
                                     (), {node: round(util[node], 4)}), "over capacity")
        self._over = over

    def report(self, report: HealthReport, what: str) -> None:
        nodes = report.dead or tuple(report.utilisation)
        if not set(nodes) <= set(self.source.state.nodes):
            self.say(f"no health report for {', '.join(nodes)}: not a node the job runs "
                     f"({', '.join(self.source.state.nodes)})")
            return
        path = write_report(self.settings.landing, report)
        self._reports.append(report.report_id)
        self.say(f"health report {report.report_id} written ({what}: {', '.join(nodes)}): {path}")

    def poll_latest(self, first: bool = False) -> None:
        """Apply the newest version if LATEST names one this loop has not handled yet
        (`first`: at start, also to say which version runs)."""
        s = self.settings
        try:
            latest = read_latest_version(s.published, s.job_id)
        except ManifestError as exc:
            if self._latest_seen != -1:
                self.say(f"keeps {self._running()}: {exc}")
            self._latest_seen = -1
            return
        if latest is None or latest == self._latest_seen:
            return
        self._latest_seen = latest
        t0 = time.monotonic()
        result = self.source.apply_latest(s.published)
        self.applied(result, time.monotonic() - t0, first)

    def applied(self, result: ApplyResult, seconds: float, first: bool = False) -> None:
        if result.status == "unchanged":
            if first and result.version is not None:
                self.say(f"runs v{result.version} (applied before this start)")
            return
        if result.status == "refused":
            self.say(f"refused the newest version, keeps {self._running()}: {result.reason}")
            return
        execution = load_execution(self.settings.state_root, self.settings.job_id)
        if execution is not None:
            total = execution.waves
            for run in execution.runs:
                self.say(f"applied v{execution.version} wave {run.wave}/{total}: "
                         f"{len(run.moved)} unit(s) moved, {run.state_bytes:.0f} state bytes"
                         + (f", {len(run.failed)} failed" if run.failed else ""))
        if result.version is not None and result.status == "applied":
            self._applied.append(result.version)
            self.say(f"{result.reason}; took {seconds:.2f} s")
        else:
            self.say(f"{result.status} after {seconds:.2f} s: {result.reason}")

    def _running(self) -> str:
        version = self.source.state.version
        return f"v{version}" if version else "the initial allocation"


def _now() -> datetime:
    """Now in whole seconds, as a health report's `at` is written (and read back)."""
    return datetime.now(UTC).replace(microsecond=0)


def _id_stamp(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
