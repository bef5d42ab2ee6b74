"""The soak's scheduled slice: periods through the real Airflow scheduler, one of its services
killed (kill -9) in the middle of each period's run and restarted as an operator restarts it.

Why: the rest of the soak forks the stages as the DAG's tasks run them, but no scheduler hands
them over, and a scheduler, triggerer or dag-processor can die at any moment of a run (the OOM
killer, a host's restart). docs/operations.md ("Services") says `reconf up` then starts only the
dead one, first stopping what it left behind; the DAG's retries and a new triggerer's takeover
of a dead one's triggers must carry the run on. Here: Airflow as `make up` starts it
(bench/live/kit.py `started_airflow`), a small job on a 30 s grid, and per period one seeded kill
at a seeded moment of its run (`Kill`), then the docs' env line and `reconf up --only <service>`.
Checked: the run ends success or failed cleanly (what/where/fix, no exception of our code in a
task log), the next period's run publishes, the invariant checker (invariants.py) holds after
every period. The stand-in lands a period once its run waits for it: the checker reads the
stores while the next run waits for its landing, the one moment a live scheduler leaves them
still.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.airflow_runs import AirflowRuns, log_messages
from bench.soak.faults import Injected
from bench.soak.schedule import SCHEDULER_KILLS as KINDS
from bench.soak.schedule import STAGES, Kill, draw_kill
from bench.soak.world import Run, stamp
from jobs.errors import StageError
from schemas.config import PROJECT_ROOT, Paths

__all__ = ["AIRFLOW_ENV", "DAG_ID", "JOB", "Stand", "config_text", "run_periods", "run_scheduled"]

JOB = "soak-sched"
DAG_ID = f"reconfigure_{JOB}"
#: a run may take this long, kills, restarts and the DAG's 30 s retry delay included
RUN_TIMEOUT_S = 600.0
#: Airflow's settings for the slice: a restarted scheduler looks for a dead one's tasks every
#: 15 s, not every 300 s (Airflow's default, which `make up` keeps): a stage whose scheduler was
#: killed and restarted at once (its process stopped by `reconf up`) then waited 5 min 42 s for
#: its retry; with 15 s the dead scheduler was found 23-35 s after its kill (it counts as dead
#: after `scheduler_health_check_threshold`, 30 s without a heartbeat). Measured.
AIRFLOW_ENV = {"AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "15"}
#: exceptions a task log may show: a refusal (what/where/fix), a skip, a task stopped from outside
_EXPECTED = ("AirflowFailException", "AirflowSkipException", "AirflowTaskTerminated")


def config_text(start: datetime) -> str:
    """The slice's job: the synthetic job, small (a cycle in seconds), no what-if. A period
    lands once its run waits for it, and the run of the newest ended period may start over a
    period after its end (62 s at a load of 24: a killed stage's retry waits 30 s), so the
    landing timeout is four periods."""
    return f"""[jobs.{JOB}]
spl = "30s"
start_date = {stamp(start)}
catchup_periods = 1
landing_timeout = "120s"
strategy = "milp"
max_migrations = 3
solver_time_limit_s = 2
alpha = 1e-6
shadow_strategies = []
shadow_time_budget_s = 0
source = {{ kind = "synthetic", operators = 2, keygroups_per_operator = 8, nodes = 4, seed = 7, varies = 30 }}
"""


class Stand(AirflowRuns):
    """The slice's running Airflow, its runtime stand-in, and the operator's hands on them."""

    def __init__(self, root: Path, paths: Paths, shell_env: dict[str, str]) -> None:
        from reconf.settings import make_source
        from schemas.config import resolve_job

        super().__init__(paths)
        self.root, self.shell_env = root, shell_env
        self.source = make_source(resolve_job(JOB), paths)
        self.runs_path, self.logs = root / "runs.jsonl", root / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self._seq = 0
        self.down: str | None = None  # a service `reconf up` did not start again

    def land(self, end: str) -> None:
        """The runtime stand-in applies the newest version and lands the period ending at
        `end` (a run's logical date)."""
        from bench.live.kit import land_now

        land_now(self.source, self.paths, _at(end), JOB)

    def kill(self, service: str) -> bool:
        """kill -9 of the service's own process (its workers and tasks live on, as after a
        crash of it alone); False when it does not run."""
        from runtime.procs import alive, read_record

        record = read_record(self.paths.home / "run" / f"{service}.pid")
        if record is None or not alive(record):
            return False
        os.kill(record.pid, signal.SIGKILL)
        while alive(record):
            with suppress(ChildProcessError):  # this process's child when it started it
                os.waitpid(record.pid, os.WNOHANG)
            time.sleep(0.05)
        return True

    def restart(self, period: int, service: str) -> Run:
        """The operator's restart: the docs' env line, then `reconf up --only <service>` (it
        removes the dead one's pid file, stops what it left, starts it); recorded in runs.jsonl
        for the checker (exit 0, or a refusal with where and fix; never a traceback)."""
        self._seq += 1
        stem = self.logs / f"{self._seq:04d}-restart-{service}"
        python = sys.executable
        script = (f'eval "$({python} -m reconf.services env)" && '
                  f"{python} -m reconf.cli up --only {service}")
        started = time.monotonic()
        with open(f"{stem}.out", "w") as out, open(f"{stem}.err", "w") as err:
            rc = subprocess.run(["bash", "-c", script], env=self.shell_env, cwd=PROJECT_ROOT,
                                stdout=out, stderr=err, timeout=600, check=False).returncode
        run = Run(period, f"restart {service}", ("up", "--only", service), "ok", rc,
                  round(time.monotonic() - started, 2), f"{stem}.err")
        with self.runs_path.open("a") as log:
            log.write(json.dumps(asdict(run)) + "\n")
        self.down = service if rc != 0 else None
        return run

    def unclean(self, run_id: str) -> list[str]:
        """What makes the run's end unclean: a task log showing an exception of another kind
        than `_EXPECTED` (a traceback of our code), a failed task without what/where/fix."""
        problems = []
        for task, state in sorted(self.task_states(DAG_ID, run_id).items()):
            problems += [f"{task}: {kind}: {text[:200]}"
                         for kind, text in self.errors(DAG_ID, run_id, task)
                         if kind not in _EXPECTED]
            text = log_messages(self.log(DAG_ID, run_id, task))
            if state == "failed" and not ("where:" in text and "fix:" in text):
                problems.append(f"{task} failed without what/where/fix: {text[-300:]!r}")
        return problems

    def published(self, end: str) -> bool:
        """A manifest of the period ending at `end` (a run's logical date) exists."""
        want = stamp(_at(end))
        return any(json.loads(p.read_text()).get("period_end") == want
                   for p in (self.paths.published / JOB).glob("v*.json"))


def _at(end: str) -> datetime:
    return datetime.fromisoformat(end).replace(tzinfo=UTC)


@contextmanager
def started(root: Path) -> Iterator[Stand]:
    """Airflow (its four services) with the slice's job under `root`, the DAG parsed and
    unpaused; stopped on exit. A failed start is a StageError (what, where, fix)."""
    from bench.live.kit import started_airflow

    root.mkdir(parents=True, exist_ok=True)
    start = datetime.now(UTC).replace(microsecond=0)
    stack = ExitStack()
    try:
        paths = stack.enter_context(started_airflow(root, config_text(start), AIRFLOW_ENV))
    except StageError as exc:  # `up`'s: the service, the last lines of its log
        raise StageError(f"bench soak --scheduled: Airflow did not start: {exc.what}",
                         where=exc.where, fix="fix what the log names, then run the soak "
                                              "again") from None
    except OSError as exc:  # a program missing
        raise StageError(f"bench soak --scheduled: Airflow did not start: {exc}",
                         where=str(root / "home" / "logs" / "services"),
                         fix="install the project (`make install`: Airflow in .venv), then run "
                             "the soak again") from None
    with stack:
        stand = Stand(root, paths, {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
        _wait_for_dag(stand)
        yield stand


def _wait_for_dag(stand: Stand, timeout_s: float = 300.0) -> None:
    try:
        stand.wait_for_dags([DAG_ID], timeout_s)
    except TimeoutError as exc:
        raise StageError(f"bench soak --scheduled: {exc} within {timeout_s:.0f} s",
                         where=str(stand.paths.home / "logs" / "services" / "dag-processor.log"),
                         fix="read that log (an import error of dags/reconfigure.py is named "
                             "there), fix it, and run the soak again") from None


def _inject(stand: Stand, period: int, kill: Kill, run: tuple[str, ...]) -> Injected:
    """The kill at its moment of the run and the restart; the period lands first (a stage's
    kill) or around the restart (the triggerer's: the run waits for it meanwhile)."""
    triggerer = kill.service == "triggerer"
    if not triggerer:
        stand.land(run[0])
        if stand.reached(DAG_ID, run[3], STAGES[STAGES.index(kill.task):], "running") is None:
            return Injected(kill.kind, f"no stage from {kill.task} on ran: the run had ended",
                            applied=False)
    time.sleep(kill.pause_s)
    running = sorted(t for t, s in stand.task_states(DAG_ID, run[3]).items()
                     if s in ("running", "deferred", "queued", "scheduled"))
    if not stand.active(DAG_ID, run[3]):
        return Injected(kill.kind, f"the run had ended {kill.pause_s} s after {kill.task}",
                        applied=False)
    if not stand.kill(kill.service):
        return Injected(kill.kind, f"{kill.service} was not running", applied=False,
                        problem=f"{kill.service} was not running before its kill")
    time.sleep(kill.down_s)
    if triggerer and kill.land_first:
        stand.land(run[0])
    restart = stand.restart(period, kill.service)
    if triggerer and not kill.land_first:
        stand.land(run[0])
    landed = f", landed {'before' if kill.land_first else 'after'} it" if triggerer else ""
    return Injected(kill.kind, f"{kill.pause_s} s after {kill.task} (tasks: "
                    f"{', '.join(running) or 'none'}), dead {kill.down_s} s, then `reconf up "
                    f"--only {kill.service}` (exit {restart.rc}, {restart.seconds:.1f} s){landed}")


def _outcome(stand: Stand, run: tuple[str, ...]) -> tuple[str, list[str]]:
    """The run's final state and what is wrong with its end."""
    try:
        final = stand.wait_for_run(DAG_ID, _at(run[0]), ("success", "failed"), RUN_TIMEOUT_S)
    except TimeoutError as exc:
        return "running", [f"the run of {run[0]} did not end: {str(exc)[:300]}"]
    return final[2], stand.unclean(run[3])


def run_scheduled(root: Path, periods: int, seed: int, kinds: tuple[str, ...] | None = None,
                  echo: bool = True) -> list[dict[str, Any]]:
    """The slice on an Airflow of its own under `root` (`started`); its rows (`run_periods`)."""
    with started(root) as stand:
        return run_periods(stand, periods, seed, kinds, echo)


def run_periods(stand: Stand, periods: int, seed: int, kinds: tuple[str, ...] | None = None,
                echo: bool = True) -> list[dict[str, Any]]:
    """`periods` periods with a kill each, then one more (the last kill's next period), from
    the DAG's first run that has not ended on; one row per period as the soak's, `scheduled`."""
    from bench.soak.invariants import Checker
    from bench.soak.report import echo_row

    names = tuple(k for k in KINDS if kinds is None or k in kinds)
    kills = [draw_kill(seed, p, names) for p in range(1, periods + 1)] + [None]
    rows: list[dict[str, Any]] = []
    checker = Checker(stand.paths.home, JOB, stand.runs_path)
    after = max((r[0] for r in stand.runs(DAG_ID) if r[2] in ("success", "failed")),
                default=None)  # the first period: the DAG's run that has not ended
    for period, kill in enumerate(kills, start=1):
        began = time.monotonic()
        run = stand.next_run(DAG_ID, after, RUN_TIMEOUT_S)
        faults, problems = [], []
        if stand.reached(DAG_ID, run[3], ("wait_for_landing",), "deferred") is None:
            problems.append(f"the run of {run[0]} did not wait for its landing: "
                            f"{stand.task_states(DAG_ID, run[3])}")
            if kill is not None:
                faults.append({"kind": kill.kind, "step": kill.task, **asdict(Injected(
                    kill.kind, "the run did not wait for its landing", applied=False))})
        elif kill is None:
            stand.land(run[0])
        else:
            injected = _inject(stand, period, kill, run)
            faults.append({"kind": kill.kind, "step": kill.task, **asdict(injected)})
        state, more = _outcome(stand, run)
        checked = time.monotonic()  # the next run waits for its landing: the stores are still
        violations = [asdict(v) for v in checker.check(period)]
        check_s = time.monotonic() - checked
        problems += [f"{f['kind']}: {f['problem']}" for f in faults if f["problem"]]
        violations += [{"period": period, "invariant": "fault outcome", "detail": p,
                        "known": None} for p in problems + more]
        published = state == "success" and stand.published(run[0])
        if rows and rows[-1]["faults"] and not published:
            rows[-1]["violations"].append({
                "period": period - 1, "invariant": "fault outcome", "known": None,
                "detail": f"the next period's run ({run[0]}) ended {state}"
                          f"{', nothing published' if state == 'success' else ''}"})
        rows.append({"kind": "period", "seed": seed, "period": period, "scheduled": True,
                     "end": stamp(_at(run[0])), "run": state, "published": published,
                     "faults": faults, "violations": violations,
                     "seconds": round(time.monotonic() - began, 2), "check_s": round(check_s, 2),
                     "home_mib": round((checker.size or 0) / 2**20, 2)})
        after = run[0]
        if echo and len(rows) > 1:
            echo_row(rows[-2])
        if stand.down:
            break  # a service did not start again: the checker has its message
    if echo and rows:
        echo_row(rows[-1])
    return rows

