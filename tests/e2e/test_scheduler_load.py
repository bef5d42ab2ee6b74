"""The docs' backfill (docs/operations.md, "Backfills", the recipe's step 2), verbatim, while the scheduler is busy, on the default SQLite store:
created the first time, every time.

`airflow backfill create` used to fail about one time in two on 2 busy cores with
`sqlite3.OperationalError: database is locked`, at once, whatever the busy timeout: Airflow
creates each backfill run in a savepoint that reads before it writes, and SQLite refuses that
upgrade without waiting while the scheduler holds the write lock (reconf/airflow_sqlite.py says
why, and how the connections now take the lock first). Here, in the Airflow of the
test_scheduler* modules (tests/e2e/scheduler_kit.py SharedAirflow: SQLite, free ports), job
`churn` backfills eight landed periods, one run after another, so the scheduler, its task
processes and the api-server write the store throughout; meanwhile the docs' command (the job
and the dates put in) creates the backfill of four landed
periods of each of five jobs, after the env line, in bash: each must succeed on its first try.
The jobs' grids (SPL 1 day, scheduler_kit.quiet_start) get no scheduled run meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime

import pytest

from reconf.settings import make_source
from schemas.config import resolve_job

from .docs_recipes import recipe, steps
from .scheduler_kit import DAY, SHARED, Airflow, Runtime, Share, SharedAirflow, _stamp, quiet_start

pytestmark = [pytest.mark.e2e]

BUSY, JOBS = "churn", tuple(f"load{i}" for i in range(1, 6))
DAGS = [f"reconfigure_{job}" for job in (BUSY, *JOBS)]
# Every setting of the shared jobs.toml's [defaults] (tests/e2e/test_scheduler.py) is set here.
JOB = """\
[jobs.{job}]
spl = "1d"
start_date = {quiet}
catchup_periods = 0
landing_timeout = "10s"
strategy = "milp"
max_migrations = 3
solver_time_limit_s = 2
alpha = 1e-6
shadow_strategies = []
shadow_time_budget_s = 0
source = {{ kind = "synthetic", operators = 2, keygroups_per_operator = 4, nodes = 3, seed = 7, varies = 30 }}
"""

SHARED.register(Share(__name__, lambda start: "".join(
    JOB.format(job=job, quiet=_stamp(quiet_start(start))) for job in (BUSY, *JOBS))))

#: docs/operations.md, "Backfills": the recipe's step 2, as printed (job `demo`, four periods)
DOCS_BACKFILL = dict(steps(recipe("backfill")))[
    "2. Create it; the scheduler works through the dates, oldest first."]
DOCS_RANGE = ("2026-01-01T00:05:00+00:00", "2026-01-01T00:20:00+00:00")


def _period(airflow: Airflow, k: int) -> datetime:
    return quiet_start(airflow.started) + k * DAY


def _backfill(job: str, first: datetime, last: datetime) -> str:
    """The docs' command for `job` and the range [first, last], nothing else changed."""
    assert "--dag-id reconfigure_demo " in DOCS_BACKFILL and all(
        f" {d}" in DOCS_BACKFILL for d in DOCS_RANGE), DOCS_BACKFILL
    return (DOCS_BACKFILL.replace("reconfigure_demo", f"reconfigure_{job}")
            .replace(DOCS_RANGE[0], first.isoformat()).replace(DOCS_RANGE[1], last.isoformat()))


@pytest.fixture(scope="module")
def airflow(shared_airflow: SharedAirflow, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Airflow]:
    paths, env, start = shared_airflow.acquire(__name__, tmp_path_factory.mktemp("load"))
    handle = Airflow(paths, env, Runtime(paths, quiet_start(start)), start)  # no runtime thread
    handle.wait_for_dags(DAGS)
    try:
        yield handle
    finally:  # the Airflow is shared: leave it idle
        handle.shell("".join(f"airflow dags pause {dag}\n" for dag in DAGS))


def _busy(airflow: Airflow) -> list[tuple[str, str, str]]:
    """(dag, task, state) of the task instances that run or wait for a slot right now."""
    return [(str(d), str(t), str(s)) for d, t, s in airflow.query(
        "SELECT dag_id, task_id, state FROM task_instance WHERE state IN "
        "('running', 'queued', 'scheduled', 'deferred')")]


def test_the_docs_backfill_succeeds_first_time_while_the_scheduler_is_busy(
        airflow: Airflow) -> None:
    for job, periods in ((BUSY, range(1, 9)), *((job, range(1, 5)) for job in JOBS)):
        source = make_source(resolve_job(job), airflow.paths)
        for k in periods:
            source.land_period(airflow.paths.landing, _period(airflow, k))
    airflow.shell("".join(f"airflow dags unpause {dag}\n" for dag in DAGS)
                  + _backfill(BUSY, _period(airflow, 1), _period(airflow, 8)))
    deadline = time.monotonic() + 300
    while not [t for t in _busy(airflow) if t[0] == f"reconfigure_{BUSY}" and t[2] == "running"]:
        assert time.monotonic() < deadline, airflow.runs(f"reconfigure_{BUSY}")
        time.sleep(1)

    outcomes: dict[str, tuple[int, str, list[tuple[str, str, str]]]] = {}
    for job in JOBS:
        busy = _busy(airflow)
        done = airflow.bash('eval "$(.venv/bin/python -m reconf.services env)"\n'
                            + _backfill(job, _period(airflow, 1), _period(airflow, 4)))
        outcomes[job] = (done.returncode, done.stderr[-2500:], busy)
    failed = {job: o for job, o in outcomes.items() if o[0] != 0}
    assert not failed, "\n".join(f"{job} (busy: {o[2]}):\n{o[1]}" for job, o in failed.items())
    assert all(o[2] for o in outcomes.values()), outcomes  # each ran beside the scheduler's work
    assert sum(1 for o in outcomes.values() if any(t[2] == "running" for t in o[2])) >= 3, outcomes

    for job in JOBS:  # each created its four runs, one per landed period, oldest first
        runs = [r for r in airflow.runs(f"reconfigure_{job}") if r[1] == "backfill"]
        assert [r[0] for r in runs] == [
            _period(airflow, k).strftime("%Y-%m-%d %H:%M:%S") for k in range(1, 5)], runs
        (backfills,) = airflow.query("SELECT count(*) FROM backfill WHERE dag_id = ?",
                                     f"reconfigure_{job}")
        assert backfills == (1,)  # one try, one backfill
    airflow.assert_quiet(f"reconfigure_{JOBS[0]}")  # no scheduled run came between


def test_the_docs_command_is_the_one_this_module_runs() -> None:
    assert DOCS_BACKFILL == (
        "airflow backfill create --dag-id reconfigure_demo \\\n"
        "    --from-date 2026-01-01T00:05:00+00:00 --to-date 2026-01-01T00:20:00+00:00 \\\n"
        "    --reprocess-behavior failed --max-active-runs 1\n")
    assert _backfill("x", datetime.fromisoformat("2026-02-01T00:00:00+00:00"),
                     datetime.fromisoformat("2026-02-04T00:00:00+00:00")).startswith(
        "airflow backfill create --dag-id reconfigure_x \\\n"
        "    --from-date 2026-02-01T00:00:00+00:00 --to-date 2026-02-04T00:00:00+00:00")
