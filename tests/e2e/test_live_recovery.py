"""A live job through the real scheduler: a failed period and its recovery while the next
period's run already exists, a period given up, and approval turned on mid-life, with periods
landing as wall-clock time passes and no REST surgery.

Its own Airflow, started as `make up` starts it (tests/e2e/scheduler_kit.py `started_airflow`:
api-server, scheduler, dag-processor, triggerer; SQLite; free ports; its own xdist group, so it
runs beside the modules that share one), with one job, `mid` (SPL 30 s on the grid of the
Airflow's start; a catch-up policy wide enough that no period is skipped when a cycle lags
behind on 2 busy cores): a runtime stand-in thread lands each period once it has ended (the newest ended one first, when it starts), applying the newest
published version before each landing, as a runtime polls; a period the test marks broken is
landed without one key group, so its validation fails.

The tests run in file order and build on each other (one history). Each acts the way
docs/operations.md, "When a cycle fails" and "Approval", tell an operator to, and checks what an
operator would see: the runs list, the task logs, the published manifests, `reconf period show`.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from reconf.settings import make_source
from schemas.config import Paths, resolve_job
from schemas.landing import format_period_end
from schemas.manifest import read_latest_version, read_manifest

from .scheduler_kit import SPL, Airflow, Runtime, _stamp, land_broken, started_airflow

pytestmark = [pytest.mark.e2e]

JOB, DAG_ID = "mid", "reconfigure_mid"
CONFIG = """\
[jobs.mid]
spl = "30s"
start_date = {start}
catchup_periods = 50
landing_timeout = "25s"
strategy = "milp"
max_migrations = 3
solver_time_limit_s = 2
alpha = 1e-6
shadow_strategies = []
shadow_time_budget_s = 0
source = {{ kind = "synthetic", operators = 2, keygroups_per_operator = 4, nodes = 3, seed = 7, varies = 30 }}
"""


class LiveRuntime(threading.Thread):
    """Lands `mid`'s periods as they end (the newest ended one first); `broken` ones without a
    key group. `landed`: period end -> how many times it was landed."""

    def __init__(self, paths: Paths, origin: datetime) -> None:
        super().__init__(daemon=True)
        self.paths, self.origin = paths, origin
        self.broken: set[datetime] = set()
        self.landed: dict[datetime, int] = {}
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.lock = threading.Lock()

    def newest_ended(self) -> datetime:
        return self.origin + ((datetime.now(UTC) - self.origin) // SPL) * SPL

    def land(self, at: datetime, broken: bool = False) -> None:
        with self.lock:
            source = make_source(resolve_job(JOB), self.paths)
            source.apply_latest(self.paths.published)
            if broken:
                land_broken(self.paths, JOB, at)
            else:
                source.land_period(self.paths.landing, at)
            self.landed[at] = self.landed.get(at, 0) + 1

    def run(self) -> None:
        try:
            at = self.newest_ended()
            while not self.stop.is_set():
                if datetime.now(UTC) < at:
                    time.sleep(0.2)
                    continue
                self.land(at, broken=at in self.broken)
                at += SPL
        except BaseException as exc:  # surfaced by the tests
            self.error = exc


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Airflow, LiveRuntime]]:
    start = datetime.now(UTC).replace(second=0, microsecond=0)
    root = tmp_path_factory.mktemp("live")
    with started_airflow(root, CONFIG.format(start=_stamp(start))) as (paths, env):
        runtime = LiveRuntime(paths, start)
        handle = Airflow(paths, env, Runtime(paths, start), start)  # its own thread stays unused
        handle.wait_for_dags([DAG_ID])
        runtime.start()
        handle.shell(f"airflow dags unpause {DAG_ID}")
        try:
            yield handle, runtime
        finally:
            runtime.stop.set()


def _ended(airflow: Airflow, at: datetime, runtime: LiveRuntime, timeout_s: float = 600
           ) -> tuple[str, str, str, str]:
    assert runtime.error is None, runtime.error
    return airflow.wait_for_run(DAG_ID, at, ("success", "failed"), timeout_s=timeout_s)


def _version_of(paths: Paths, at: datetime) -> int:
    """The version published for period `at` (asserting there is exactly one)."""
    newest = read_latest_version(paths.published, JOB) or 0
    found = [v for v in range(1, newest + 1)
             if read_manifest(paths.published, JOB, v).period_end == format_period_end(at)]
    assert len(found) == 1, (at, found)
    return found[0]


def _first_success_after(airflow: Airflow, runtime: LiveRuntime, after: datetime,
                         timeout_s: float = 600) -> datetime:
    """The first period after `after` whose scheduled run succeeded (the job keeps running)."""
    deadline = time.monotonic() + timeout_s
    while True:
        assert runtime.error is None, runtime.error
        for day, kind, state, _ in airflow.runs(DAG_ID):
            at = datetime.fromisoformat(day).replace(tzinfo=UTC)
            if at > after and kind == "scheduled" and state == "success":
                return at
        assert time.monotonic() < deadline, airflow.runs(DAG_ID)
        time.sleep(2)


def test_recipe_one_on_a_live_job_reruns_the_failed_and_the_held_period_in_order(
        live: tuple[Airflow, LiveRuntime]) -> None:
    """A period lands broken and fails validation; the next period's run, created on schedule,
    is held (it ends at once, naming the failed period and the command to run). The runtime
    lands the failed period again, whole, and the operator runs the command the held run's log
    gives: both periods publish, in order, and the job goes on by itself."""
    airflow, runtime = live
    bad = runtime.newest_ended() + 2 * SPL
    runtime.broken.add(bad)
    failed = _ended(airflow, bad, runtime)
    assert failed[2] == "failed" and failed[1] == "scheduled"
    assert airflow.task_states(DAG_ID, failed[3])["validate"] == "failed"
    held = _ended(airflow, bad + SPL, runtime)
    assert held[2] == "failed", airflow.log_tails(DAG_ID, held[3])
    states = airflow.task_states(DAG_ID, held[3])
    assert states["wait_for_landing"] == "failed" and states["collect"] == "upstream_failed"
    log = airflow.log(DAG_ID, held[3], "wait_for_landing")
    assert f"held: period {format_period_end(bad + SPL)} of job 'mid' is not run because " \
        f"period {format_period_end(bad)}: validate failed" in log, log[-3000:]
    (command,) = re.findall(r"`(airflow tasks clear \S+ -s \S+ -e \S+ -y)`", log)[:1]
    assert command == (f"airflow tasks clear {DAG_ID} -s {bad.isoformat()} "
                       f"-e {(bad + SPL).isoformat()} -y")
    before = read_latest_version(airflow.paths.published, JOB) or 0

    runtime.broken.discard(bad)
    runtime.land(bad)  # the runtime lands the period again, whole
    airflow.shell(command)
    for at in (bad, bad + SPL):
        run = airflow.wait_for_run(DAG_ID, at, ("success",), timeout_s=420)
        assert airflow.task_states(DAG_ID, run[3])["publish"] == "success"
    first, second = _version_of(airflow.paths, bad), _version_of(airflow.paths, bad + SPL)
    assert first == before + 1 and second == first + 1  # both published, in the periods' order
    # and the job keeps running: a later period publishes on its own
    later = _first_success_after(airflow, runtime, bad + SPL)
    assert _version_of(airflow.paths, later) > second


def test_a_period_given_up_lets_the_next_live_period_publish(
        live: tuple[Airflow, LiveRuntime]) -> None:
    """docs/operations.md, "When a cycle fails", step 2: `reconf period lost`, no REST call; the
    failed run stays failed (visibly not published) and the next period goes on by itself."""
    airflow, runtime = live
    bad = runtime.newest_ended() + 2 * SPL
    runtime.broken.add(bad)
    assert _ended(airflow, bad, runtime)[2] == "failed"
    held = _ended(airflow, bad + SPL, runtime)
    assert held[2] == "failed"
    out = airflow.shell(f".venv/bin/reconf period lost --job {JOB} --period-end {_stamp(bad)} "
                        "--reason 'the runtime lost its metrics'")
    assert "recorded as lost (was failed)" in out
    later = _first_success_after(airflow, runtime, bad + SPL)
    assert "is lost: given up by" in airflow.log(
        DAG_ID, airflow.run_of(DAG_ID, later)[3], "wait_for_landing")  # type: ignore[index]
    published = {read_manifest(airflow.paths.published, JOB, v).period_end
                 for v in range(1, (read_latest_version(airflow.paths.published, JOB) or 0) + 1)}
    assert format_period_end(bad) not in published and format_period_end(later) in published
    assert airflow.run_of(DAG_ID, bad)[2] == "failed"  # type: ignore[index]
    shown = airflow.shell(f".venv/bin/reconf period show --job {JOB} --last 50")
    assert f"{_stamp(bad)}  lost" in shown
    assert f"{_stamp(bad + SPL)}  held" in shown and f"behind {_stamp(bad)}" in shown
    assert f"{_stamp(later)}  published" in shown


def test_approval_turned_on_mid_life_asks_and_publishes_nothing_without_an_answer(
        live: tuple[Airflow, LiveRuntime]) -> None:
    """docs/operations.md, "Approval": `approval = true` added to a job with history. The next
    run's approve task asks (it waits on no earlier run that never had it) and nothing is
    published until someone answers; the answer publishes it."""
    from .test_scheduler_approval import ANSWER, TOKEN

    airflow, runtime = live
    config = airflow.paths.home.parent / "jobs.toml"
    text = config.read_text()
    assert "[jobs.mid]\n" in text
    config.write_text(text.replace("[jobs.mid]\n", "[jobs.mid]\napproval = true\n"
                                   "approval_timeout = \"10m\"\n"))
    deadline = time.monotonic() + 420
    asking = None
    while asking is None:  # the dag-processor re-parses the config, then a run asks
        assert runtime.error is None and time.monotonic() < deadline, airflow.runs(DAG_ID)
        for day, _, _state, run_id in reversed(airflow.runs(DAG_ID)):
            if airflow.task_states(DAG_ID, run_id).get("approve") == "awaiting_input" \
                    and airflow.parked(DAG_ID, "approve", run_id):
                asking = (datetime.fromisoformat(day).replace(tzinfo=UTC), run_id)
                break
        time.sleep(2)
    at, run_id = asking
    latest = read_latest_version(airflow.paths.published, JOB)
    time.sleep(SPL.total_seconds() * 1.5)  # later periods end and land meanwhile
    assert read_latest_version(airflow.paths.published, JOB) == latest  # nothing without an answer
    assert airflow.run_of(DAG_ID, at)[2] == "running"  # type: ignore[index]
    answer = ANSWER.replace("reconfigure_gate", DAG_ID)  # the docs' command, for this job
    out = airflow.shell(TOKEN + answer.format(run_id=run_id,
                                              payload='{"chosen_options": ["Approve"]}'))
    assert '"chosen_options":["Approve"]' in out.replace(" ", ""), out
    done = airflow.wait_for_run(DAG_ID, at, ("success", "failed"))
    assert done[2] == "success", airflow.log_tails(DAG_ID, run_id)
    assert read_latest_version(airflow.paths.published, JOB) == (latest or 0) + 1
    assert _version_of(airflow.paths, at) == (latest or 0) + 1
