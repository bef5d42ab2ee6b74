"""The helpers of the e2e modules that run a real Airflow (tests/e2e/test_scheduler*.py,
tests/e2e/test_deferral_race.py): the one Airflow start-up (`started_airflow`), the Airflow that
the test_scheduler* modules share (`SHARED`), the `tick` job's runtime stand-in, the quiet grid of
the jobs the tests drive by hand, and the handle through which the tests and the docs' commands
reach a module's Airflow."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.airflow_runs import AirflowRuns
from reconf.services import SERVICES, Ports, down, up
from reconf.settings import make_source
from runtime.procs import free_port
from schemas.config import PROJECT_ROOT, Paths, resolve_job

SPL = timedelta(seconds=30)
TICK, LATE, FILL, BACK = "tick", "late", "fill", "demo"
MISSED = 4  # tick's period (k of start + k*SPL) that never lands

#: The SPL of the jobs whose runs the tests make by hand (backfill, trigger, clear): with
#: `quiet_start`, none of their grid points falls within HORIZON of the Airflow's start.
DAY = timedelta(days=1)
#: Longer than any module sharing an Airflow runs (they take minutes).
HORIZON = timedelta(hours=2)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def quiet_start(now: datetime) -> datetime:
    """The start_date of a job with SPL = DAY whose DAG, unpaused at `now` or in the HORIZON
    after it, gets no scheduled run then, whatever the hour: its period ends fall at
    HH:00 + 12 h of `now`'s hour, so the next one is 11 to 12 h away (an hourly grid from a fixed
    date, catchup_periods = 0, has one at the next HH:00: a scheduled run between the test's
    steps). Periods 1..9 have ended by `now`, the 9th 12 to 13 h before it."""
    hour = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return hour - 10 * DAY + timedelta(hours=12)


@contextmanager
def started_airflow(root: Path, config: str, extra_env: Mapping[str, str] | None = None,
                    names: Sequence[str] = ("api-server", "scheduler", "dag-processor",
                                            "triggerer")) -> Iterator[tuple[Paths, dict[str, str]]]:
    """One Airflow as `make up` starts it (reconf.services: SQLite, free ports) with `config` as
    its jobs.toml, its home under `root`: (paths, the shell's environment). os.environ is that
    shell's while it runs (the stages the tests call in-process read the same config and home)."""
    path = root / "jobs.toml"
    path.write_text(config)
    ports = Ports(airflow=free_port(), mlflow=free_port(), spark_connect=free_port())
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW", "RECONF_SPARK", "PYTHONPATH"))}
    # No RECONF_*_PORT: the shell learns the ports from the env line, as an operator's does
    # after `make up` (the docs' recipes must reach this Airflow, never :8080, through it alone).
    env = {k: v for k, v in env.items() if not (k.startswith("RECONF_") and k.endswith("_PORT"))}
    env.update({"RECONF_HOME": str(root / "home"), "RECONF_CONFIG": str(path),
                "PATH": "/usr/bin:/bin", "AIRFLOW__CORE__PARALLELISM": "3", **(extra_env or {})})
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)  # what `make up` would see in that shell
    paths = Paths.from_env()
    try:
        up(paths, ports, names=[n for n in SERVICES if n in names], timeout_s=600)
        yield paths, dict(env)
    finally:
        down(paths, grace_s=30)
        os.environ.clear()
        os.environ.update(saved)


class Runtime(threading.Thread):
    """The runtime stand-in of `tick`: lands each period once wall-clock time passes its end."""

    def __init__(self, paths: Paths, start: datetime) -> None:
        super().__init__(daemon=True)
        self.paths, self.origin = paths, start
        self.landed: dict[int, float] = {}  # k -> wall time it landed
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def period(self, k: int) -> datetime:
        return self.origin + k * SPL

    def run(self) -> None:
        try:
            source = make_source(resolve_job(TICK), self.paths)
            k = 1
            while not self.stop.is_set():
                if datetime.now(UTC) < self.period(k):
                    time.sleep(0.5)
                    continue
                if k != MISSED:
                    source.apply_latest(self.paths.published)
                    source.land_period(self.paths.landing, self.period(k))
                    self.landed[k] = time.time()
                k += 1
        except BaseException as exc:  # surfaced by the tests
            self.error = exc


def land_broken(paths: Paths, job_id: str, at: datetime) -> None:
    """The runtime lands the period without one key group's samples: validation fails."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from schemas.landing import KEYGROUPS

    where = make_source(resolve_job(job_id), paths).land_period(paths.landing, at)
    kg = pq.read_table(where / KEYGROUPS / "part-0.parquet")
    pq.write_table(kg.filter(pc.not_equal(kg["keygroup"], kg["keygroup"][0])),
                   where / KEYGROUPS / "part-0.parquet")


class Airflow(AirflowRuns):
    """The module's Airflow: its home, and how the tests and the docs' commands reach it (its
    runs, task states and logs: bench/airflow_runs.py). `started`: the moment its jobs.toml was
    written (the grids of its jobs count from it)."""

    def __init__(self, paths: Paths, env: dict[str, str], runtime: Runtime,
                 started: datetime) -> None:
        super().__init__(paths)
        self.env, self.runtime, self.started = env, runtime, started

    def check(self) -> None:
        assert self.runtime.error is None, self.runtime.error

    def shell(self, commands: str, timeout: float = 300) -> str:
        """`commands` in bash after the docs' env line, with no `airflow` on PATH before it.
        Airflow's CLI connects to the SQLite store as the services do (the env line's
        `[database] sql_alchemy_connect_args`, reconf/airflow_sqlite.py): a write waits for the
        scheduler's lock rather than failing with "database is locked"."""
        done = self.bash(f'set -e\neval "$(.venv/bin/python -m reconf.services env)"\n{commands}\n',
                         timeout)
        assert done.returncode == 0, f"{commands}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    def bash(self, script: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """`script` as printed (no env line added), in the project, in the operator's shell
        before the env line: no `airflow` on PATH and no RECONF_*_PORT."""
        return subprocess.run(["bash", "-c", script], env=self.env, cwd=PROJECT_ROOT,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def assert_quiet(self, dag_id: str) -> None:
        """A DAG whose runs the tests make by hand has only those: no scheduled run, and the
        scheduler's next one (the docs' `dags next-execution`) lies beyond HORIZON."""
        assert not [r for r in self.runs(dag_id) if r[1] == "scheduled"], self.runs(dag_id)
        out = self.shell(f"airflow dags next-execution {dag_id}")
        nxt = datetime.fromisoformat(out.strip().splitlines()[-1].strip()).astimezone(UTC)
        assert nxt >= self.started + HORIZON, (dag_id, out)

    def parked(self, dag_id: str, task_id: str, run_id: str) -> bool:
        """The scheduler has read the exit of the process that deferred (or parked) the task.

        Airflow 3.3 races otherwise: an answer given in the seconds before the scheduler reads
        that exit makes it find the resumed task queued ("finished with state success, but the
        task instance's state attribute is queued") and fail it. The approval's answer resumes
        the task, so the approval tests wait for the scheduler's log line; the landing and
        healing waits end in their triggers and need no such care (reconf/landing_wait.py)."""
        log = (self.paths.home / "logs" / "services" / "scheduler.log").read_text(
            errors="replace")
        return (f"Received executor event with state success for task instance TaskInstanceKey("
                f"dag_id='{dag_id}', task_id='{task_id}', run_id='{run_id}'") in log


@dataclass(frozen=True)
class Share:
    """A test module's part of the shared Airflow: its jobs' sections of jobs.toml, given the
    Airflow's start (the minute it starts in), and the Airflow settings it needs. `clocked`: its
    jobs run on grids that count from that start (its tests must be the Airflow's first)."""

    module: str
    jobs: Callable[[datetime], str]
    env: Mapping[str, str] = field(default_factory=dict)
    clocked: bool = False


class SharedAirflow:
    """One Airflow (all four services) for the test_scheduler* modules of a pytest process.

    Each module registers its `Share` when imported; the first module fixture that asks starts
    Airflow with every registered module's jobs in one jobs.toml (distinct jobs and DAG ids, so
    no module sees another's runs), and tests/e2e/conftest.py stops it once the next test belongs
    to no sharing module (and at the session's end). A clocked share that comes after another
    module has used the Airflow gets a fresh one: its grid must start when its tests do."""

    def __init__(self) -> None:
        self.shares: dict[str, Share] = {}
        self.users: list[str] = []
        self.handle: tuple[Paths, dict[str, str], datetime] | None = None
        self._stack: ExitStack | None = None

    def register(self, share: Share) -> None:
        self.shares[share.module] = share

    def config(self, start: datetime) -> str:
        return "\n".join(share.jobs(start) for share in self.shares.values())

    def acquire(self, module: str, root: Path) -> tuple[Paths, dict[str, str], datetime]:
        """(paths, the shell's environment, the start) of the running Airflow, started when it
        is not (under `root`, a fresh directory per start)."""
        share = self.shares[module]
        if self.handle is not None and share.clocked and any(u != module for u in self.users):
            self.release()
        if self.handle is None:
            env: dict[str, str] = {}
            for other in self.shares.values():
                clash = {k for k, v in other.env.items() if env.get(k, v) != v}
                assert not clash, f"the shared Airflow's modules disagree on {sorted(clash)}"
                env.update(other.env)
            now = datetime.now(UTC)
            start = now.replace(second=0, microsecond=0)
            stack = ExitStack()
            paths, shell = stack.enter_context(started_airflow(root, self.config(start), env))
            self._stack, self.handle, self.users = stack, (paths, shell, start), []
        self.users.append(module)
        return self.handle

    def release(self) -> None:
        """Stop the shared Airflow (nothing when it does not run)."""
        stack, self._stack, self.handle, self.users = self._stack, None, None, []
        if stack is not None:
            stack.close()


SHARED = SharedAirflow()
