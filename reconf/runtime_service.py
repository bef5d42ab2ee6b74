"""The live runtimes as local services: `make up` runs `reconf runtime run --job J` for the jobs
of RECONF_LIVE_JOBS (default: demo), each with its pid file `run/runtime-<J>.pid` and its log
`logs/services/runtime-<J>.log`, like the other services (reconf/services.py); `make down`
stops them first (SIGTERM: each finishes its step, so no period is half-landed).

Why a service per job and not one process for all: a job's runtime holds the job's lock and
state, and one job's bad config or crash must not stop another's periods.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from jobs.errors import StageError
from reconf.settings import prepend_path
from runtime.procs import PidRecord
from schemas.config import PROJECT_ROOT, ConfigError, JobConfig

__all__ = ["DEFAULT_JOBS", "ENV", "LIVE_KINDS", "PREFIX", "READY_LINE", "argv", "broker_line",
           "env", "is_runtime", "job_of", "live_capable", "live_jobs", "name", "names", "ready",
           "status_line"]

PREFIX = "runtime-"
ENV = "RECONF_LIVE_JOBS"
DEFAULT_JOBS = ("demo",)
#: The line runtime/live.py prints once it holds the job's lock and has its source.
READY_LINE = "live runtime started"


#: The source kinds the live runtime drives (`reconf runtime run`, and `up` for each live job).
#: The replay engine and the query platform replay a fixed data set period by period from the
#: job's start_date (landing today's period would first replay every period since); the Kafka
#: Streams job is a real engine the demo drives.
LIVE_KINDS = frozenset({"synthetic"})
_WHY_NOT = {
    "replay": "the replay engine replays its data set period by period from the job's "
              "start_date, so landing the current period would first replay every period since",
    "queries": "the query platform replays its data set period by period from the job's "
               "start_date, so landing the current period would first replay every period since",
    "kafka-streams": "it is a real Kafka Streams engine whose periods `reconf demo --job "
                     "<job>` drives one at a time, not a stand-in the live runtime runs",
}


def live_capable(job: JobConfig) -> None:
    """Refuse, with what/where/fix, a job whose source the live runtime cannot drive."""
    kind = str(job.source.get("kind", "synthetic"))
    if kind in LIVE_KINDS:
        return
    why = _WHY_NOT.get(kind, f"its source kind {kind!r} has no stand-in")
    config = os.environ.get("RECONF_CONFIG") or "config/jobs.toml"
    raise StageError(
        f"job {job.job_id!r} has no live stand-in: {why}",
        where=f"{config}: jobs.{job.job_id}.source (kind = {kind!r})",
        fix=f"run a job with a synthetic source live (`reconf runtime run --job demo`; kinds: "
            f"{', '.join(sorted(LIVE_KINDS))}), or land this job's periods one at a time: "
            f"`reconf land --job {job.job_id} --period-end T`")


def name(job_id: str) -> str:
    return f"{PREFIX}{job_id}"


def is_runtime(service: str) -> bool:
    return service.startswith(PREFIX)


def job_of(service: str) -> str:
    return service.removeprefix(PREFIX)


def argv(job_id: str) -> tuple[str, ...]:
    """The service's command: this interpreter, unbuffered, the project's CLI."""
    return (sys.executable, "-u", "-m", "reconf.cli", "runtime", "run", "--job", job_id)


def env(home: Path) -> dict[str, str]:
    """The shell's environment with the project first on PYTHONPATH and its RECONF_HOME."""
    return {**os.environ, "RECONF_HOME": str(home),
            "PYTHONPATH": prepend_path(str(PROJECT_ROOT), os.environ.get("PYTHONPATH", ""))}


def live_jobs(given: str | None, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The jobs `up` runs a runtime for: `--runtime-jobs`, else RECONF_LIVE_JOBS, else demo (if
    the config has it and it can run live; a named job that cannot is refused: what/where/fix).
    An empty list (`--runtime-jobs ''`, `RECONF_LIVE_JOBS=`) runs none."""
    from schemas.config import resolve_job

    explicit = given if given is not None else environ.get(ENV)
    jobs = tuple(j.strip() for j in (explicit if explicit is not None
                                     else ",".join(DEFAULT_JOBS)).split(",") if j.strip())
    chosen = []
    for job_id in jobs:
        try:
            live_capable(resolve_job(job_id))
        except (ConfigError, StageError) as exc:
            if explicit is not None:
                raise StageError(f"make up: no live runtime for job {job_id!r} (named by "
                                 f"--runtime-jobs / {ENV}={explicit!r}): {exc.what}",
                                 where=exc.where or f"{ENV}={explicit!r}",
                                 fix=exc.fix or f"name jobs of the config that can run live, "
                                 f"or set {ENV}= (empty) to run none") from None
            print(f"{name(job_id):13} not started: {exc.what.splitlines()[0]} (set {ENV} to "
                  "choose the jobs)")
            continue
        chosen.append(job_id)
    return tuple(chosen)


def ready(record: PidRecord) -> bool:
    """The runtime has started: its log shows the start line after its latest header."""
    try:
        text = Path(record.log).read_text(errors="replace")
    except OSError:
        return False
    return READY_LINE in text.rsplit("\n==== ", 1)[-1]


def status_line(record: PidRecord) -> str:
    """The runtime's line in `status`: its pid and newest event."""
    try:
        lines = Path(record.log).read_text(errors="replace").rstrip().splitlines()
    except OSError:
        lines = []
    return f"{record.name:13} running, pid {record.pid}, last: " + \
        (lines[-1][:160] if lines else "(nothing yet)")


def broker_line(home: Path) -> str:
    """The Kafka broker's line in `status`: `make up` starts it after the services, with its own
    pid file (runtime/kafka_streams/broker.py), so it is read from there."""
    from runtime.kafka_streams.broker import running

    record = running(home / "kafka" / "run")
    return f"{'kafka':13} " + (f"running, pid {record.pid}  {record.url}" if record is not None
                               else "stopped")


def names(jobs: Sequence[str]) -> list[str]:
    return [name(j) for j in jobs]
