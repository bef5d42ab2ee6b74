"""Through the real Airflow scheduler: scheduled runs on the period grid, a late and a missed
landing, a backfill, the docs' recovery recipe and a rollback, the way operators run them.

One Airflow, started as `make up` starts it (reconf.services: api-server, scheduler,
dag-processor, triggerer; SQLite; free ports), shared with tests/e2e/test_scheduler_approval.py
(its own job and DAGs; tests/e2e/scheduler_kit.py SharedAirflow), with five small synthetic jobs:

- `tick`, SPL 30 s, starting at the fixture's clock: a runtime stand-in thread lands each period
  as wall-clock time passes it (applying the newest published version first, as a runtime
  polls), except period 4, never landed. Its runs go one after another (a cycle may take longer
  than 30 s on 2 busy cores; the catch-up policy is wide enough that none is skipped).
- `late`, the same grid with a 5-minute landing timeout and nothing landing it: unpaused, its
  newest ended period runs and waits, deferred, until the test lands it.
- `fill`, SPL 1 day with `catchup_periods = 0` on a grid none of whose period ends falls within
  hours of the Airflow's start (scheduler_kit.quiet_start: an hourly grid would get a scheduled
  run at the next HH:00), so its runs are the backfill's and the recovery's (checked), made with
  the docs' commands run in bash after `eval "$(.venv/bin/python -m reconf.services env)"` with a
  PATH that has no `airflow` on it.
- `mend`, SPL 1 min with healing on (min_gap 90 s): the last tests land its periods by hand and
  kill its nodes in the runtime stand-in; its healing DAG `heal_mend` runs on the health
  reports' asset events (dags/healing.py).
- `demo`, like `fill` with a budget of 2 moves: v1..v4 published by the stages in-process, then
  its manual rollback DAG `rollback_demo` triggered with params (the docs' commands), through
  the scheduler.

The tests run in file order and build on each other (one Airflow, one history: the fill tests
count on the backfill's versions). Every check reads what an operator would: the metadata DB's
runs and task states, the task logs, the published manifests and the asset events.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bench.airflow_runs import log_messages
from reconf.settings import make_source
from runtime.synthetic import SyntheticJob
from schemas.config import Paths, resolve_job
from schemas.landing import format_period_end
from schemas.manifest import read_latest_version, read_manifest

from .docs_recipes import recipe, steps
from .scheduler_kit import (
    BACK,
    DAY,
    FILL,
    LATE,
    MISSED,
    SHARED,
    SPL,
    TICK,
    Airflow,
    Runtime,
    Share,
    SharedAirflow,
    _stamp,
    land_broken,
    quiet_start,
)

pytestmark = [pytest.mark.e2e]

CONFIG = """\
[defaults]
strategy = "milp"
max_migrations = 3
solver_time_limit_s = 2
alpha = 1e-6
shadow_strategies = []
shadow_time_budget_s = 0
source = {{ kind = "synthetic", operators = 2, keygroups_per_operator = 4, nodes = 3, seed = 7, varies = 30 }}

[jobs.tick]
spl = "30s"
start_date = {start}
catchup_periods = 50
landing_timeout = "20s"

[jobs.late]
spl = "30s"
start_date = {start}
landing_timeout = "5m"

[jobs.fill]
spl = "1d"
start_date = {quiet}
catchup_periods = 0
landing_timeout = "10s"

[jobs.mend]
spl = "1m"
start_date = {start}
landing_timeout = "9m"
source = {{ kind = "synthetic", operators = 2, keygroups_per_operator = 4, nodes = 4, seed = 7, varies = 30 }}

[jobs.mend.healing]
enabled = true
budget = 8
min_gap = "{gap}s"
max_nodes_at_once = 1

[jobs.demo]
spl = "1d"
start_date = {quiet}
catchup_periods = 0
max_migrations = 2
"""
MEND, GAP = "mend", timedelta(seconds=90)


SHARED.register(Share(__name__, lambda start: CONFIG.format(
    start=_stamp(start), quiet=_stamp(quiet_start(start)), gap=int(GAP.total_seconds())),
    clocked=True))
DAGS = [f"{kind}_{job}" for job in (TICK, LATE, FILL, MEND, BACK)
        for kind in ("reconfigure", "rollback")] + ["heal_mend"]


@pytest.fixture(scope="module")
def airflow(shared_airflow: SharedAirflow, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Airflow]:
    paths, env, start = shared_airflow.acquire(__name__, tmp_path_factory.mktemp("scheduler"))
    runtime = Runtime(paths, start)
    handle = Airflow(paths, env, runtime, start)
    handle.wait_for_dags(DAGS)
    runtime.start()
    try:
        yield handle
    finally:
        runtime.stop.set()


def test_scheduled_runs_fall_on_the_grid_and_publish_in_order(airflow: Airflow) -> None:
    out = airflow.shell("airflow dags unpause reconfigure_tick\n"
                        "airflow dags next-execution reconfigure_tick")
    start = airflow.runtime.origin
    for k in (1, 2, 3):
        run = airflow.wait_for_run("reconfigure_tick", airflow.runtime.period(k), ("success", "failed"))
        assert run[2] == "success", airflow.log_tails("reconfigure_tick", run[3])
    runs = airflow.runs("reconfigure_tick")[:3]
    assert [r[0] for r in runs] == [
        airflow.runtime.period(k).strftime("%Y-%m-%d %H:%M:%S") for k in (1, 2, 3)]  # on the grid
    assert [r[1] for r in runs] == ["scheduled"] * 3
    nxt = datetime.fromisoformat(out.strip().splitlines()[-1].strip()).astimezone(UTC)
    assert (nxt - start) % SPL == timedelta(0), out  # `dags next-execution`: on the grid too
    for version, k in ((1, 1), (2, 2), (3, 3)):  # versions 1, 2, 3, in the periods' order
        assert read_manifest(airflow.paths.published, TICK, version).period_end == \
            format_period_end(airflow.runtime.period(k))
    # The task logs carry the stages' summaries at INFO, and a link to the MLflow run.
    run_id = runs[2][3]
    assert f"collect tick@{format_period_end(airflow.runtime.period(3))}:" in \
        airflow.log("reconfigure_tick", run_id, "collect")
    assert "validate tick: passed" in airflow.log("reconfigure_tick", run_id, "validate")
    (link,) = airflow.query("SELECT value FROM xcom WHERE dag_id = ? AND run_id = ? AND task_id = "
                            "'plan' AND key = '_link_MlflowRunLink'", "reconfigure_tick", run_id)
    (event,) = [json.loads(e) for (e,) in airflow.query(
        "SELECT extra FROM asset_event WHERE source_run_id = ?", run_id)]
    assert event["version"] == 3 and event["mlflow_run_id"] in json.loads(link[0])
    assert "/#/experiments/" in json.loads(link[0])


def test_a_late_period_is_waited_for_then_published(airflow: Airflow) -> None:
    """Job `late` (landing_timeout 5 min, nothing lands it): unpausing runs its newest ended
    period, which waits in the triggerer until the runtime lands it, then publishes. (Its own job:
    on 2 busy cores tick's runs lag behind their period ends by more than tick's 20 s.)"""
    airflow.shell("airflow dags unpause reconfigure_late")
    deadline = time.monotonic() + 420
    while True:
        runs = [r for r in airflow.runs("reconfigure_late") if r[2] in ("queued", "running")]
        if runs and airflow.task_states("reconfigure_late", runs[0][3]).get(
                "wait_for_landing") == "deferred":
            break
        assert time.monotonic() < deadline, airflow.runs("reconfigure_late")
        time.sleep(1)
    waiting = runs[0]
    at = datetime.fromisoformat(waiting[0]).replace(tzinfo=UTC)
    assert waiting[1] == "scheduled" and (at - airflow.runtime.origin) % SPL == timedelta(0)
    assert airflow.task_states("reconfigure_late", waiting[3]).get("collect") in (None, "None")
    make_source(resolve_job(LATE), airflow.paths).land_period(airflow.paths.landing, at)
    run = airflow.wait_for_run("reconfigure_late", at, ("success", "failed"))
    airflow.shell("airflow dags pause reconfigure_late")
    assert run[2] == "success", airflow.log_tails("reconfigure_late", run[3])
    assert read_manifest(airflow.paths.published, LATE, 1).period_end == format_period_end(at)
    assert "waiting for period" in airflow.log("reconfigure_late", run[3], "wait_for_landing")


def test_a_period_that_never_lands_times_out_and_the_next_one_still_publishes(airflow: Airflow) -> None:
    missed = airflow.runtime.period(MISSED)
    run = airflow.wait_for_run("reconfigure_tick", missed, ("success", "failed"))
    assert run[2] == "failed"
    states = airflow.task_states("reconfigure_tick", run[3])
    assert states["wait_for_landing"] == "skipped" and states["collect"] == "skipped"
    assert states["publish"] == "skipped" and states["missed_period"] == "failed"
    message = airflow.log("reconfigure_tick", run[3], "missed_period")
    assert f"period {format_period_end(missed)} of job 'tick' did not land within 0:00:20" in message
    assert "fix:" in message
    after = airflow.wait_for_run("reconfigure_tick", airflow.runtime.period(MISSED + 1),
                                 ("success", "failed"))
    assert after[2] == "success", airflow.log_tails("reconfigure_tick", after[3])
    assert read_manifest(airflow.paths.published, TICK, 4).period_end == \
        format_period_end(airflow.runtime.period(MISSED + 1))
    airflow.runtime.stop.set()
    airflow.shell("airflow dags pause reconfigure_tick")


def _fill_period(airflow: Airflow, k: int) -> datetime:
    """Period k of `fill` (and of `demo`: the same grid), all ended before the tests began."""
    return quiet_start(airflow.started) + k * DAY


def test_the_docs_backfill_publishes_every_period_in_order(airflow: Airflow) -> None:
    source = make_source(resolve_job(FILL), airflow.paths)
    for k in (1, 2, 3):
        source.land_period(airflow.paths.landing, _fill_period(airflow, k))
    first, last = _fill_period(airflow, 1).isoformat(), _fill_period(airflow, 3).isoformat()
    dry = airflow.shell(
        "airflow dags unpause reconfigure_fill\n"
        f"airflow backfill create --dag-id reconfigure_fill --from-date {first} --to-date {last} "
        "--reprocess-behavior failed --max-active-runs 1 --dry-run")
    assert all(_fill_period(airflow, k).strftime("%Y-%m-%d %H:%M:%S") in dry for k in (1, 2, 3)), dry
    airflow.shell(
        f"airflow backfill create --dag-id reconfigure_fill --from-date {first} --to-date {last} "
        "--reprocess-behavior failed --max-active-runs 1")
    for k in (1, 2, 3):
        run = airflow.wait_for_run("reconfigure_fill", _fill_period(airflow, k), ("success", "failed"))
        assert run[2] == "success", airflow.log_tails("reconfigure_fill", run[3])
        assert run[1] == "backfill"
    for version, k in ((1, 1), (2, 2), (3, 3)):
        assert read_manifest(airflow.paths.published, FILL, version).period_end == \
            format_period_end(_fill_period(airflow, k))
    listed = airflow.shell("airflow dags list-runs reconfigure_fill")
    assert listed.count("success") >= 3
    airflow.assert_quiet("reconfigure_fill")  # unpaused, yet no run of its own between the steps


def test_the_docs_recovery_recipe_clears_and_reruns_a_failed_cycle(airflow: Airflow) -> None:
    paths, at = airflow.paths, _fill_period(airflow, 4)
    source = make_source(resolve_job(FILL), paths)
    _land_broken(paths, at)
    airflow.shell(f"airflow dags trigger reconfigure_fill --logical-date {at.isoformat()}")
    run = airflow.wait_for_run("reconfigure_fill", at, ("success", "failed"))
    assert run[2] == "failed"
    assert airflow.task_states("reconfigure_fill", run[3])["validate"] == "failed"
    assert read_latest_version(paths.published, FILL) == 3
    source.land_period(paths.landing, at)  # the runtime lands the period again, whole
    # docs/operations.md, "When a cycle fails", step 1: clear the cycle; it runs again.
    out = airflow.shell(f"airflow tasks clear reconfigure_fill -s {at.isoformat()} "
                        f"-e {at.isoformat()} -y")
    assert out is not None
    run = airflow.wait_for_run("reconfigure_fill", at, ("success",), timeout_s=420)
    assert airflow.task_states("reconfigure_fill", run[3])["validate"] == "success"
    assert read_manifest(paths.published, FILL, 4).period_end == format_period_end(at)


def _land_broken(paths: Paths, at: datetime) -> None:
    land_broken(paths, FILL, at)


def test_the_docs_recipe_for_a_lost_period_gives_it_up_and_the_next_cycle_runs(
        airflow: Airflow) -> None:
    """docs/operations.md, "When a cycle fails", step 2: `reconf period lost`; the failed run
    stays failed (visibly not published) and the next cycle goes on, with no REST call."""
    at, nxt = _fill_period(airflow, 5), _fill_period(airflow, 6)
    before = read_latest_version(airflow.paths.published, FILL) or 0
    _land_broken(airflow.paths, at)
    airflow.shell("airflow dags unpause reconfigure_fill\n"
                  f"airflow dags trigger reconfigure_fill --logical-date {at.isoformat()}")
    run = airflow.wait_for_run("reconfigure_fill", at, ("success", "failed"))
    assert run[2] == "failed"
    out = airflow.shell(f".venv/bin/reconf period lost --job {FILL} --period-end {_stamp(at)} "
                        "--reason 'the runtime lost its metrics'\n"
                        f".venv/bin/reconf period show --job {FILL}")
    assert f"period {_stamp(at)} of job {FILL} recorded as lost (was failed)" in out
    assert f"{_stamp(at)}  lost" in out and "the runtime lost its metrics" in out
    # the next cycle does not wait on the lost one
    runtime = make_source(resolve_job(FILL), airflow.paths)
    runtime.apply_latest(airflow.paths.published)  # runs the newest version, as a runtime would
    runtime.land_period(airflow.paths.landing, nxt)
    airflow.shell(f"airflow dags trigger reconfigure_fill --logical-date {nxt.isoformat()}")
    after = airflow.wait_for_run("reconfigure_fill", nxt, ("success", "failed"))
    assert after[2] == "success", airflow.log_tails("reconfigure_fill", after[3])
    assert "is lost: given up by" in airflow.log("reconfigure_fill", after[3], "wait_for_landing")
    assert read_latest_version(airflow.paths.published, FILL) == before + 1
    assert read_manifest(airflow.paths.published, FILL, before + 1).period_end == \
        format_period_end(nxt)  # nothing was published for the lost period
    assert airflow.run_of("reconfigure_fill", at)[2] == "failed"  # type: ignore[index]
    airflow.assert_quiet("reconfigure_fill")


# -- healing between periods: job `mend` ---------------------------------------------------------


def _deferred_run(airflow: Airflow, dag_id: str, task_id: str, after: str = "",
                  timeout_s: float = 420) -> tuple[str, str, str, str]:
    """The DAG's newest run (with logical date > `after`, when given) whose `task_id` waits
    deferred in the triggerer. The tests land at once: the landing wait's trigger ends the task
    itself, so no moment is unsafe (reconf/landing_wait.py; tests/e2e/test_deferral_race.py)."""
    deadline = time.monotonic() + timeout_s
    while True:
        for run in reversed(airflow.runs(dag_id)):
            if run[0] > after and run[2] in ("queued", "running") and airflow.task_states(
                    dag_id, run[3]).get(task_id) == "deferred":
                return run
        assert time.monotonic() < deadline, (dag_id, airflow.runs(dag_id))
        time.sleep(1)


def _heal_runs(airflow: Airflow) -> list[tuple[str, str, str]]:
    """(run id, state, run type) of heal_mend's runs, oldest first."""
    return [(r, s, t) for r, s, t in airflow.query(
        "SELECT run_id, state, run_type FROM dag_run WHERE dag_id = 'heal_mend' ORDER BY id")]


def _wait_heal_run(airflow: Airflow, count: int, timeout_s: float = 420) -> tuple[str, str, str]:
    deadline = time.monotonic() + timeout_s
    while True:
        runs = _heal_runs(airflow)
        if len(runs) >= count and runs[count - 1][1] in ("success", "failed"):
            return runs[count - 1]
        assert time.monotonic() < deadline, (runs, airflow.log_tails("heal_mend", runs[-1][0])
                                             if runs else "no heal_mend run")
        time.sleep(2)


def _mend_runtime(paths: Paths) -> SyntheticJob:
    runtime = make_source(resolve_job(MEND), paths)
    assert isinstance(runtime, SyntheticJob)
    return runtime


def _holder(assignment: dict[str, str], avoid: set[str]) -> str:
    """The node holding the most units (ties: the first by name), other than `avoid`."""
    nodes = sorted(set(assignment.values()) - avoid)
    return max(nodes, key=lambda n: sum(1 for m in assignment.values() if m == n))


MENDING: dict[str, Any] = {}  # what the first healing test leaves the second


def test_a_killed_node_is_healed_out_of_schedule_before_the_next_period(airflow: Airflow) -> None:
    """The runtime stand-in kills a node: the health report's asset event runs heal_mend, which
    publishes a version without the node (and terminating it) while the next scheduled period
    still waits for its landing, on its grid."""
    paths = airflow.paths
    runtime = _mend_runtime(paths)
    airflow.shell("airflow dags unpause reconfigure_mend\nairflow dags unpause heal_mend")
    first = _deferred_run(airflow, "reconfigure_mend", "wait_for_landing")
    at = datetime.fromisoformat(first[0]).replace(tzinfo=UTC)
    runtime.land_period(paths.landing, at)
    done = airflow.wait_for_run("reconfigure_mend", at, ("success", "failed"))
    assert done[2] == "success", airflow.log_tails("reconfigure_mend", done[3])
    assert read_latest_version(paths.published, MEND) == 1
    runtime.apply_latest(paths.published)
    v1 = read_manifest(paths.published, MEND, 1)
    dead = _holder(dict(v1.assignment), set())
    report = runtime.kill_node(paths.landing, dead, datetime.now(UTC))

    healed = _wait_heal_run(airflow, 1)
    assert healed[1] == "success" and healed[2] == "asset_triggered", \
        airflow.log_tails("heal_mend", healed[0])
    v2 = read_manifest(paths.published, MEND, 2)
    assert dead not in v2.assignment.values() and v2.scaling.nodes_to_terminate == (dead,)
    assert read_latest_version(paths.published, MEND) == 2
    assert f"report {report.stem} ({dead}): published v2" in airflow.log(
        "heal_mend", healed[0], "heal")
    # before the next scheduled period: its run waits for its landing, on the grid
    nxt = _deferred_run(airflow, "reconfigure_mend", "wait_for_landing", after=first[0])
    end = datetime.fromisoformat(nxt[0]).replace(tzinfo=UTC)
    assert nxt[1] == "scheduled" and (end - at) % timedelta(minutes=1) == timedelta(0)
    (event,) = [json.loads(e) for (e,) in airflow.query(
        "SELECT extra FROM asset_event WHERE source_run_id = ?", healed[0])]
    assert event["healings"][0]["version"] == 2  # the assignment asset: deployers see it
    MENDING.update(dead=dead, healed=v2, next_period=end, runtime=runtime)


def test_a_second_failure_inside_the_minimum_gap_waits_for_it(airflow: Airflow) -> None:
    """A second node dies right after the first healing: its healing run waits in the
    triggerer until min_gap has passed, then publishes; the next scheduled period plans from
    the healed versions."""
    paths, runtime = airflow.paths, MENDING["runtime"]
    healed_at = datetime.fromisoformat(MENDING["healed"].created_at.replace("Z", "+00:00"))
    victim = _holder(dict(MENDING["healed"].assignment), set())
    killed_at = datetime.now(UTC)
    runtime.kill_node(paths.landing, victim, killed_at)
    assert killed_at < healed_at + GAP - timedelta(seconds=20), (killed_at, healed_at)
    deadline = time.monotonic() + 60
    while True:  # the second healing run waits out the gap, deferred in the triggerer
        runs = _heal_runs(airflow)
        if len(runs) >= 2 and airflow.task_states("heal_mend", runs[1][0]).get(
                "wait_for_gap") == "deferred":
            break
        assert time.monotonic() < deadline, runs
        time.sleep(1)
    assert read_latest_version(paths.published, MEND) == 2  # nothing healed inside the gap
    assert "waiting until" in airflow.log("heal_mend", runs[1][0], "wait_for_gap")
    healed = _wait_heal_run(airflow, 2)
    assert healed[1] == "success", airflow.log_tails("heal_mend", healed[0])
    v3 = read_manifest(paths.published, MEND, 3)
    # the first dead node stays out (the period's stats still list it) and is terminated again,
    # for a runtime that skipped v2
    assert set(v3.scaling.nodes_to_terminate) == {MENDING["dead"], victim}
    assert not {MENDING["dead"], victim} & set(v3.assignment.values())
    published_at = datetime.fromisoformat(v3.created_at.replace("Z", "+00:00"))
    assert published_at >= healed_at + GAP  # never inside the gap

    applied = runtime.apply_latest(paths.published)  # the runtime runs the healed version
    assert applied.version == 3 and not {MENDING["dead"], victim} & set(runtime.state.nodes)
    end = MENDING["next_period"]
    runtime.land_period(paths.landing, end)
    after = airflow.wait_for_run("reconfigure_mend", end, ("success", "failed"))
    assert after[2] == "success", airflow.log_tails("reconfigure_mend", after[3])
    v4 = read_manifest(paths.published, MEND, 4)  # the scheduled period, planned from v3
    assert v4.period_end == format_period_end(end)
    assert not {MENDING["dead"], victim} & set(v4.assignment.values())
    airflow.shell("airflow dags pause reconfigure_mend\nairflow dags pause heal_mend")


def _newest_run(airflow: Airflow, dag_id: str, after: int, timeout_s: float = 300
                ) -> tuple[int, str, str]:
    """(id, run id, state) of the DAG's first run with id > `after`, once it has ended."""
    deadline = time.monotonic() + timeout_s
    while True:
        runs = airflow.query("SELECT id, run_id, state FROM dag_run WHERE dag_id = ? AND id > ? "
                             "ORDER BY id LIMIT 1", dag_id, after)
        if runs and runs[0][2] in ("success", "failed"):
            return runs[0]
        assert time.monotonic() < deadline, f"{dag_id}: {runs} after {timeout_s} s"
        time.sleep(2)


def _last_run_id(airflow: Airflow, dag_id: str) -> int:
    return int(airflow.query("SELECT coalesce(max(id), 0) FROM dag_run WHERE dag_id = ?",
                             dag_id)[0][0])


def test_the_docs_rollback_triggers_publish_and_a_broken_budget_names_the_dags_param(
        airflow: Airflow) -> None:
    """docs/operations.md, "Rollback through Airflow": its two triggers, verbatim, on the
    history a runtime makes (v1..v4, each planned from the one before, under a budget of 2
    moves): one version back publishes v5 = v3 within the budget; v1 without the override,
    over the budget, is refused and the run's fix is the trigger with this DAG's
    `override_budget`; the docs' trigger with it publishes v6 = v1. Bad input fails the run
    and publishes nothing."""
    from jobs.run import run_collect, run_plan, run_publish, run_validate

    paths, dag = airflow.paths, "rollback_demo"
    source = make_source(resolve_job(BACK), paths)
    for k in (1, 2, 3, 4):  # v1..v4, by the stages in this process (the DAG is the rollback's)
        source.land_period(paths.landing, _fill_period(airflow, k))
        for stage in (run_collect, run_validate, run_plan, run_publish):
            stage(BACK, _fill_period(airflow, k))
        source.apply_latest(paths.published)
    assert read_latest_version(paths.published, BACK) == 4
    v1, v3 = (read_manifest(paths.published, BACK, v) for v in (1, 3))
    unpause, back_one, further = [c for _, c in steps(recipe("rollback-dag"))]
    assert unpause == "airflow dags unpause rollback_demo\n"
    assert '"to_version": 3' in back_one and '"override_budget"' in further

    before = _last_run_id(airflow, dag)
    airflow.shell(unpause + back_one)
    _, run_id, state = _newest_run(airflow, dag, before)
    assert state == "success", airflow.log_tails(dag, run_id)
    v5 = read_manifest(paths.published, BACK, 5)
    assert dict(v5.assignment) == dict(v3.assignment) and v5.schedule is not None
    assert "published v5 = v3's assignment" in airflow.log(dag, run_id, "rollback")
    (event,) = [json.loads(e) for (e,) in airflow.query(
        "SELECT extra FROM asset_event WHERE source_run_id = ?", run_id)]
    assert event["version"] == 5 and event["rollback_to"] == 3
    shown = airflow.shell(f".venv/bin/reconf audit --job {BACK} --period-end "
                          f"{_stamp(_fill_period(airflow, 4))} --plan-id {v5.plan_id}")
    assert "rollback to v3: v4 overloads node-01" in shown and "schedule:" in shown
    assert f"run {run_id}" in shown  # the audit names the Airflow run that made it

    # the docs' second trigger without its override, under a budget it breaks (v1 is 1 to 4
    # moves from v5 = v3 here, by the data: the job's budget is lowered to 0 moves for this
    # run, in the job config the task reads when it runs): refused; the fix is the trigger with
    # this DAG's param, never the CLI's flag
    assert sum(v1.assignment[k] != v3.assignment[k] for k in v1.assignment) > 0
    bare = further.replace(further[further.index(', "override_budget"'):further.index("}'")], "")
    assert bare.endswith('--conf \'{"to_version": 1, "reason": "v4 overloads node-01"}\'\n'), bare
    config = Path(airflow.env["RECONF_CONFIG"])
    jobs_toml = config.read_text()
    budget = "catchup_periods = 0\nmax_migrations = 2\n"
    assert jobs_toml.count(budget) == 1, jobs_toml  # the demo job's, nothing else's
    config.write_text(jobs_toml.replace(budget, "catchup_periods = 0\nmax_migrations = 0\n"))
    try:
        before = _last_run_id(airflow, dag)
        airflow.shell(bare)
        _, run_id, state = _newest_run(airflow, dag, before)
    finally:
        config.write_text(jobs_toml)
    log = log_messages(airflow.log(dag, run_id, "rollback"))
    assert state == "failed" and "over the job's budget (0 moves" in log, log[-3000:]
    assert ("fix:   publish it anyway with a reason for breaking the budget (kept on its MLflow "
            "run): airflow dags trigger rollback_demo --conf '{\"to_version\": 1, \"reason\": "
            "\"<why>\", \"override_budget\": \"<why the budget may break>\"}'") in log, log[-3000:]
    assert "--override-budget" not in log
    assert read_latest_version(paths.published, BACK) == 5

    before = _last_run_id(airflow, dag)
    airflow.shell(further)  # as printed: with the override
    _, run_id, state = _newest_run(airflow, dag, before)
    assert state == "success", airflow.log_tails(dag, run_id)
    assert dict(read_manifest(paths.published, BACK, 6).assignment) == dict(v1.assignment)
    assert "budget overridden: back to v1, the last good one" in airflow.log(dag, run_id, "rollback")

    # bad input fails the run with the CLI's message and publishes nothing (a missing reason
    # takes the same path: tests/test_rollback_dag_file.py)
    before = _last_run_id(airflow, dag)
    airflow.shell("airflow dags trigger rollback_demo --conf '{\"to_version\": 9, \"reason\": "
                  "\"typo\"}'")
    _, run_id, state = _newest_run(airflow, dag, before)
    log = airflow.log(dag, run_id, "rollback")
    assert state == "failed" and "fix:" in log, log[-3000:]
    assert "v9 is not an earlier version: the newest is v6" in log
    assert airflow.task_states(dag, run_id)["rollback"] == "failed"
    assert read_latest_version(paths.published, BACK) == 6
    assert not (paths.published / BACK / "v7.json").exists()
    airflow.shell("airflow dags pause rollback_demo")
