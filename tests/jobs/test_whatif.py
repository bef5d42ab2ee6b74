"""What-if without Spark: which strategies shadow a plan, the isolated runner (a failing and a
slow strategy are recorded as such; side by side it plans as one after the other; no worker is
left behind), and the comparison logged to a real MLflow store, checked against the strategies
run by hand on the same state; `reconf audit --compare` prints it.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.whatif.shadow import (
    GRACE_FRACTION,
    GRACE_S,
    MAX_WORKERS,
    MIN_LIMIT_S,
    SHADOW_FAULT_ENV,
    WORKERS_ENV,
    ShadowOutcome,
    ShadowTask,
    choose_shadows,
    plan_one,
    run_shadows,
    shadow_cap,
    worker_count,
)
from placement.model import Budget, ClusterState
from placement.registry import get_strategy
from placement.workloads.synthetic import synthetic_state
from schemas.config import PROJECT_ROOT, JobConfig, Paths
from schemas.strategies import STRATEGIES
from schemas.tracking import Tag

STAMP = "2026-01-01T00:05:00Z"


def _state(edges: bool = True) -> ClusterState:
    state = synthetic_state(nodes=4, keygroups=16, operators=2, varies=40.0, seed=3)
    return state if edges else replace(state, edges=())


def test_shadows_default_to_every_strategy_the_states_facets_allow() -> None:
    job = JobConfig("j")
    chosen, left_out = choose_shadows(job, _state(edges=False), "milp")
    needs_comm = {n for n, e in STRATEGIES.items() if "communication" in e.facets}
    assert needs_comm and not needs_comm & set(chosen) and left_out == {}
    assert "milp" not in chosen and "greedy" in chosen  # the strategy in force is the first row
    state = _state()
    with_comm, _ = choose_shadows(job, state, "milp")
    assert needs_comm & set(with_comm)
    # exactly the strategies whose facets the state provides, but the one in force
    assert set(with_comm) == {n for n, e in STRATEGIES.items()
                              if set(e.facets) <= state.facets} - {"milp"}
    assert list(with_comm) == [n for n in STRATEGIES if n in with_comm]  # the table's order


def test_named_shadows_say_which_facet_is_missing_and_a_zero_budget_turns_them_off() -> None:
    job = JobConfig("j", shadow_strategies=("albic", "greedy"))
    chosen, left_out = choose_shadows(job, _state(edges=False), "milp")
    assert chosen == ["greedy"] and "communication" in left_out["albic"]
    assert choose_shadows(replace(job, shadow_time_budget_s=0.0), _state(), "milp") == ([], {})
    assert choose_shadows(JobConfig("j", shadow_strategies=()), _state(), "milp") == ([], {})


def test_a_failing_and_a_slow_shadow_are_recorded_and_the_others_still_plan(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SHADOW_FAULT_ENV, "flux:raise,random:hang")
    state, budget = _state(), Budget(max_migrations=3)
    tasks = [ShadowTask(s, {}, state, budget, 1.0) for s in ("greedy", "flux", "random", "milp")]
    outcomes = run_shadows(tasks, budget_s=8.0)
    by = {o.strategy: o for o in outcomes}
    assert [o.strategy for o in outcomes] == ["greedy", "flux", "random", "milp"]
    assert by["greedy"].status == "planned" and by["greedy"].plan is not None
    assert by["flux"].status == "failed" and "fault injected" in by["flux"].message
    assert by["random"].status == "timed_out" and by["random"].plan is None
    cap = by["random"].budget_s  # its share of the budget left when it started (all of what
    assert cap is not None and cap <= 8.0  # was left if greedy and flux were both done)
    assert cap - 0.05 <= by["random"].wall_s < cap + 2.0
    # ran, or the period's budget was used up before it started or while it ran (a loaded machine)
    assert by["milp"].status in ("planned", "skipped") or (
        by["milp"].status == "timed_out" and "shadow time budget" in by["milp"].message)
    assert by["milp"].status == "planned" or "budget" in by["milp"].message


def test_a_shadow_over_its_share_is_stopped_and_the_rest_still_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each shadow gets at most its share of the budget left (shadow_cap): a hanging one no
    longer uses up the period's budget and leaves the others skipped."""
    monkeypatch.setenv(SHADOW_FAULT_ENV, "greedy:hang,flux:hang,random:hang")
    state, budget = _state(), Budget(max_migrations=3)
    t0 = time.perf_counter()
    outcomes = run_shadows([ShadowTask(s, {}, state, budget, 30.0) for s in ("greedy", "cola")],
                           budget_s=4.0, workers=1)  # one after the other
    assert outcomes[0].status == "timed_out" and "per-shadow budget" in outcomes[0].message
    assert outcomes[0].budget_s is not None and outcomes[0].budget_s <= 2.0 + 1e-6
    assert outcomes[1].status != "skipped"  # it started, within what was left
    assert "2 units x 2 nodes" in outcomes[0].message or "units x" in outcomes[0].message
    before = _children()
    names = ("greedy", "flux", "random")
    outcomes = run_shadows([ShadowTask(s, {}, state, budget, 30.0) for s in names],
                           budget_s=3.0, workers=2)  # side by side: all three hang
    assert [o.status for o in outcomes] == ["timed_out"] * 3
    assert all(o.budget_s is not None and o.budget_s <= 2.0 + 1e-6 for o in outcomes)
    assert time.perf_counter() - t0 < 4.0 + 3.0 + 3.0  # within the two budgets (+ slack)
    assert _children() <= before


@given(st.one_of(st.none(), st.floats(0.01, 600)), st.floats(0, 600), st.integers(1, 4),
       st.integers(1, 16))
def test_a_shadows_share_fits_the_budget_and_its_limit_fits_its_share(
        limit: float | None, remaining: float, slots: int, pending: int) -> None:
    cap, fitted = shadow_cap(limit, remaining, slots, pending)
    # the cap is the share itself (the operator's budget), never past the budget left
    assert math.isclose(cap, min(remaining, remaining * slots / pending), abs_tol=1e-9)
    if limit is None:
        assert fitted is None
        return
    assert fitted is not None and fitted <= limit
    if limit + max(GRACE_S, GRACE_FRACTION * limit) <= cap:  # it fits: its own limit
        assert fitted == limit
    elif MIN_LIMIT_S < fitted < limit:  # shrunk: its limit plus grace is its share
        assert math.isclose(fitted + max(GRACE_S, GRACE_FRACTION * fitted), cap, rel_tol=1e-9)


def _children() -> set[int]:
    """This process's child processes, zombies included (from /proc: no psutil needed)."""
    return _children_of(os.getpid())


def _children_of(pid: int) -> set[int]:
    return {int(s.parent.name) for s in Path("/proc").glob("[0-9]*/stat") if _ppid(s) == pid}


def _same(outcome: ShadowOutcome) -> tuple[object, ...]:
    plan = outcome.plan and replace(outcome.plan, wall_s=0.0, phases=tuple(
        replace(phase, seconds=0.0) for phase in outcome.plan.phases))  # timings differ, not plans
    return outcome.strategy, outcome.status, plan


def test_side_by_side_shadows_plan_what_one_after_the_other_plans_in_the_tasks_order() -> None:
    state, budget = _state(), Budget(max_migrations=3)
    tasks = [ShadowTask(s, {}, state, budget, 5.0) for s in ("greedy", "albic", "flux", "cola")]
    before = _children()
    one = run_shadows(tasks, budget_s=120.0, workers=1)
    three = run_shadows(tasks, budget_s=120.0, workers=3)
    assert [o.strategy for o in three] == ["greedy", "albic", "flux", "cola"]
    assert all(o.status == "planned" for o in one)
    assert [_same(o) for o in three] == [_same(o) for o in one]
    assert _children() <= before  # every worker exited, and was reaped


def test_a_hanging_shadow_is_stopped_at_its_cap_while_the_others_plan_beside_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A hung shadow runs until its cap, its share of the budget left when it started (not its
    time limit plus grace), is stopped there, and its row records that cap."""
    monkeypatch.setenv(SHADOW_FAULT_ENV, "random:hang,flux:hang")
    state, budget = _state(), Budget(max_migrations=3)
    tasks = [ShadowTask(s, {}, state, budget, 1.0) for s in ("random", "greedy", "flux")]
    before, t0 = _children(), time.perf_counter()
    outcomes = run_shadows(tasks, budget_s=12.0, workers=2)
    took = time.perf_counter() - t0
    assert [(o.strategy, o.status) for o in outcomes] == [
        ("random", "timed_out"), ("greedy", "planned"), ("flux", "timed_out")]
    random_, greedy, flux = outcomes
    assert "per-shadow budget" in random_.message
    # flux, the last, shares what was left with random only: 2 workers, all of it
    assert "the period's shadow time budget (12 s)" in flux.message
    # random started first: 12 s x 2 workers / 3 shadows unfinished = 8 s, past its 1 s
    # limit + 5 s grace: the share is its cap, recorded on its row
    assert random_.budget_s is not None and math.isclose(random_.budget_s, 8.0, abs_tol=0.1)
    assert random_.time_limit_s == 1.0 and greedy.time_limit_s == 1.0
    # flux started once greedy was done: the share of what was left between two shadows
    assert flux.budget_s is not None and random_.budget_s < flux.budget_s <= 12.0
    for o in (random_, flux):
        assert o.budget_s is not None and o.budget_s - 0.05 <= o.wall_s < o.budget_s + 2.0
        assert f"stopped after {o.budget_s:.1f} s" in o.message
    assert took < 12.0 + 3.0  # within the budget (+ slack)
    assert _children() <= before  # the killed workers and greedy's, all gone


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_an_interrupt_or_an_error_mid_run_leaves_no_worker_behind(
        monkeypatch: pytest.MonkeyPatch, error: type[BaseException]) -> None:
    monkeypatch.setenv(SHADOW_FAULT_ENV, "greedy:hang,flux:hang")
    state, budget = _state(), Budget(max_migrations=3)
    tasks = [ShadowTask(s, {}, state, budget, 30.0) for s in ("greedy", "flux", "cola")]
    before, during = _children(), set()

    def interrupt(signum: int, frame: object) -> None:
        during.update(_children() - before)
        raise error("stop")

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.5)
        with pytest.raises(error):
            run_shadows(tasks, budget_s=60.0, workers=2)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert len(during) == 2  # both workers were running, hanging, when it came
    assert not during & _children() and _children() <= before


def test_a_worker_dies_with_its_parent_even_killed(tmp_path: Path) -> None:
    """SIGKILL leaves the parent no clean-up; the kernel ends its hanging worker all the same."""
    script = tmp_path / "parent.py"
    script.write_text(
        "from jobs.whatif.shadow import ShadowTask, run_shadows\n"
        "from placement.model import Budget\n"
        "from placement.workloads.synthetic import synthetic_state\n"
        "state = synthetic_state(nodes=4, keygroups=16, operators=2, varies=40.0, seed=3)\n"
        "run_shadows([ShadowTask('greedy', {}, state, Budget(3), 60.0)], 120.0)\n")
    env = {**os.environ, SHADOW_FAULT_ENV: "greedy:hang", "PYTHONPATH": str(PROJECT_ROOT)}
    parent = subprocess.Popen([sys.executable, str(script)], env=env)
    try:
        worker = None
        for _ in range(300):  # until the worker has started
            kids = _children_of(parent.pid)
            if kids:
                worker = kids.pop()
                break
            time.sleep(0.1)
        assert worker is not None, "the parent never started its shadow worker"
        # killed at once, maybe mid-imports, before it asked to die with its parent: the worker
        # must still see its parent gone and exit (it knows the pid that started it)
    finally:
        parent.kill()
        parent.wait()
    for _ in range(600):  # its imports may take seconds on a loaded machine
        if _state_of(worker) in ("gone", "Z"):
            break
        time.sleep(0.1)
    left = _state_of(worker) not in ("gone", "Z")
    if left:  # do not leave it to hang after the test
        os.kill(worker, signal.SIGKILL)
    assert not left, "the shadow worker outlived its killed parent"


def _ppid(stat: Path) -> int:
    try:
        return int(stat.read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1  # it ended while we looked


def _state_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def test_how_many_workers_by_default_by_setting_and_a_bad_setting(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    cores = os.cpu_count() or 1
    assert worker_count(20) == min(cores, MAX_WORKERS)
    assert worker_count(1) == 1 and worker_count(0) == 1 and worker_count(20, 3) == 3
    monkeypatch.setenv(WORKERS_ENV, "3")
    assert worker_count(20) == 3 and worker_count(2) == 2
    for bad in ("0", "two"):
        monkeypatch.setenv(WORKERS_ENV, bad)
        with pytest.raises(ValueError, match=f"{WORKERS_ENV}='{bad}' is not a number"):
            worker_count(5)


def _logged_period(paths: Paths, job: JobConfig) -> tuple[str, ClusterState]:
    """A period's run as the plan and publish stages leave it (MLflow only, no Spark)."""
    from jobs.plan.stage import job_budget, plan_to_dict
    from jobs.tracking.store import CycleRecord, log_cycle, tag_run
    from jobs.whatif.stage import keep_input

    state = _state()
    plan = get_strategy(job.strategy)(state, job_budget(job), time_limit_s=job.solver_time_limit_s)
    plan_json = {"job_id": job.job_id, "period_end": STAMP, **plan_to_dict(plan)}
    run_id = log_cycle(paths, CycleRecord(job, STAMP, job.strategy, plan_json, None,
                                          {"reconf.base_version": "None"}), state, plan)
    keep_input(paths, run_id, job, STAMP, job.strategy, state, plan, job_budget(job))
    tag_run(paths, run_id, {"reconf.publish_status": "published",
                            "reconf.assignment_version": "1"})
    return run_id, state


def test_the_comparison_matches_the_strategies_run_by_hand_on_the_same_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from mlflow import MlflowClient

    from jobs.whatif.stage import load_input, read_comparison, run_whatif
    from reconf.cli import main

    paths = Paths(tmp_path / "home")
    # a time limit no solve of this small state reaches even on a loaded machine: every plan
    # stops on its work budget, so a shadow and the same strategy by hand must agree
    job = JobConfig("wi", max_migrations=3, solver_time_limit_s=120.0,
                    shadow_strategies=("greedy", "albic", "cola", "flux"))
    run_id, state = _logged_period(paths, job)
    result = run_whatif(job, STAMP, paths=paths)
    assert result.status == "done" and result.run_id == run_id

    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    data = load_input(client, run_id, paths)
    assert data is not None and data.state == state and data.budget == Budget(max_migrations=3)
    rows = read_comparison(client, run_id)
    # the plan in force first, then the shadows ranked by its objective (LD, fewer migrations)
    assert rows[0]["strategy"] == "milp" and rows[0]["role"] == "in force"
    assert sorted(r["strategy"] for r in rows[1:]) == ["albic", "cola", "flux", "greedy"]
    ranked = sorted(rows, key=lambda r: (float(r["load_distance_after"]), int(r["migrations"])))
    assert [int(r["rank"]) for r in ranked] == list(range(1, 6))
    shadows = [(float(r["load_distance_after"]), int(r["migrations"])) for r in rows[1:]]
    assert shadows == sorted(shadows)
    tags = client.get_run(run_id).data.tags
    assert tags["reconf.whatif.best"] == ranked[0]["strategy"]
    assert tags["reconf.whatif.best.load_distance"] == ranked[0]["strategy"]
    assert "reconf.whatif.best.collocation_factor" in tags  # the job has traffic
    for row in rows[1:]:  # each shadow row = the strategy run by hand on the stored input
        by_hand = plan_one(ShadowTask(row["strategy"], {}, data.state, data.budget,
                                      data.time_limit_s))
        assert row["status"] == "planned" and by_hand.plan is not None
        child = client.search_runs([client.get_run(run_id).info.experiment_id], filter_string=(
            f"tags.`{Tag.PARENT_RUN}` = '{run_id}' AND tags.`{Tag.SHADOW_PREFIX}strategy` = "
            f"'{row['strategy']}'"))[0]
        assert child.data.tags[Tag.DETERMINISM] == by_hand.plan.determinism
        assert by_hand.plan.determinism.startswith("deterministic"), by_hand.plan.determinism
        assert math.isclose(float(row["load_distance_after"]),
                            by_hand.plan.after.load_distance, rel_tol=1e-5, abs_tol=1e-6)
        assert int(row["migrations"]) == by_hand.plan.migrations
        assert math.isclose(float(row["collocation_factor_after"]),
                            by_hand.plan.after.collocation_factor, rel_tol=1e-5, abs_tol=1e-6)
    assert int(rows[0]["migrations"]) <= 3 and rows[0]["status"] == "published"

    children = client.search_runs([client.get_run(run_id).info.experiment_id],
                                  filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'")
    assert sorted(c.data.tags["reconf.shadow.strategy"] for c in children) == [
        "albic", "cola", "flux", "greedy"]
    for child in children:
        row = next(r for r in rows if r["strategy"] == child.data.tags["reconf.shadow.strategy"])
        assert child.data.metrics["load_distance_after"] == pytest.approx(
            float(row["load_distance_after"]), rel=1e-5)  # the CSV keeps 6 digits
        assert {a.path for a in client.list_artifacts(child.info.run_id)} >= {"moves.csv",
                                                                            "plan.json"}
        note = child.data.tags["mlflow.note.content"]  # one line: which shadow, its LD
        assert "\n" not in note and len(note) <= 500
        assert note.startswith(f"What-if {row['strategy']} for wi, period ending {STAMP}")
        assert (f"load distance {float(rows[0]['load_distance_before']):.3f} → "
                f"{float(row['load_distance_after']):.3f} (min)") in note
        assert f"; {row['migrations']} migration(s); planned" in note
        # its per-shadow budget (a share of the period's 60 s), and the job's 120 s limit shrunk
        # to fit inside it
        budget_s = float(child.data.tags["reconf.shadow.budget_s"])
        assert 0 < budget_s <= 60.0
        assert 0 < float(child.data.tags["reconf.shadow.time_limit_s"]) <= min(budget_s, 120.0)
    parent = client.get_run(run_id)
    artifacts = {a.path for a in client.list_artifacts(run_id, "whatif")}
    assert {"whatif/comparison.csv", "whatif/comparison.png"} <= artifacts
    note = parent.data.tags["mlflow.note.content"]
    assert note.startswith("**load distance ") and "published v1" in note.splitlines()[0]
    assert "## What-if" in note
    for child in children:  # each shadow's name links to its child run, in the classic view
        name, child_id = child.data.tags["reconf.shadow.strategy"], child.info.run_id
        assert f"| [{name}](#/runs/{child_id}?workflowType=machine_learning) |" in note
        assert next(r for r in rows if r["strategy"] == name)["run_id"] == child_id

    again = run_whatif(job, STAMP, paths=paths)  # a rerun updates, never duplicates
    assert again.status == "done" and len(client.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'")) == 4

    # `reconf audit --compare` and `reconf compare` print the same rows, from MLflow only
    monkeypatch.setenv("RECONF_HOME", str(paths.home))
    monkeypatch.delenv("RECONF_MLFLOW_URL", raising=False)
    capsys.readouterr()
    assert main(["audit", "--job", "wi", "--period-end", STAMP, "--compare"]) == 0
    out = capsys.readouterr().out
    experiment = parent.info.experiment_id  # the links open the classic view
    assert (f"open: http://127.0.0.1:5000/#/experiments/{experiment}/runs/{run_id}"
            "?workflowType=machine_learning") in out
    assert (f"runs table (key metrics): http://127.0.0.1:5000/#/experiments/{experiment}/runs"
            "?viewStateShareKey=reconf-key-metrics&workflowType=machine_learning") in out
    table = out[out.index("what-if:"):].splitlines()
    assert table[1].split()[:3] == ["strategy", "role", "status"]
    for row, line in zip(rows, table[2:], strict=True):
        cells = line.replace("in force", "in-force").split()
        assert cells[0] == row["strategy"] and cells[2] == row["status"]
        assert cells[3] == row["rank"]  # ranked by the in-force objective (LD for the MILP)
        assert cells[4] == f"{float(row['load_distance_after']):.3f}"
    assert max(len(line) for line in table) < 300  # the objectives only, not every metric
    plot = tmp_path / "compare.png"
    assert main(["compare", "--job", "wi", "--since", STAMP, "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "1 period(s)" in out and plot.read_bytes()[:4] == b"\x89PNG"
    greedy = next(line for line in out.splitlines() if line.strip().startswith("greedy "))
    greedy_row = next(r for r in rows if r["strategy"] == "greedy")
    assert greedy.split()[1:4] == ["1", "1", f"{float(greedy_row['load_distance_after']):.3f}"]



def test_an_unpublished_period_gets_no_shadows(tmp_path: Path) -> None:
    from jobs.tracking.store import tag_run
    from jobs.whatif.stage import run_whatif

    paths = Paths(tmp_path / "home")
    job = JobConfig("wi", shadow_strategies=("greedy",))
    run_id, _ = _logged_period(paths, job)
    tag_run(paths, run_id, {"reconf.publish_status": "stale"})
    result = run_whatif(job, STAMP, paths=paths)
    assert result.status == "skipped" and "stale" in result.reason


def test_the_shadow_fields_are_checked_when_the_config_loads(tmp_path: Path) -> None:
    from schemas.config import read_jobs

    config = tmp_path / "jobs.toml"
    config.write_text("""
[defaults]
spl = "2m"
[jobs.auto]
[jobs.off]
shadow_strategies = []
[jobs.named]
shadow_strategies = ["albic", "greedy", "albic"]
shadow_time_budget_s = 30
[jobs.typo]
shadow_strategies = ["greedy", "albik"]
[jobs.notalist]
shadow_strategies = "greedy"
[jobs.toolong]
shadow_time_budget_s = 61
""")
    loaded = read_jobs(config)
    assert loaded.jobs["auto"].shadow_strategies is None
    assert loaded.jobs["auto"].shadow_time_budget_s == 60.0
    assert loaded.jobs["off"].shadow_strategies == ()
    assert loaded.jobs["named"].shadow_strategies == ("albic", "greedy")
    assert "jobs.typo.shadow_strategies: unknown strategy 'albik'" in str(loaded.errors["typo"])
    assert "must be a list of strategy names" in str(loaded.errors["notalist"])
    assert "more than half the period" in str(loaded.errors["toolong"])
    assert set(loaded.errors) == {"typo", "notalist", "toolong"}


def test_a_failed_shadow_is_a_failed_child_run_and_an_empty_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow import MlflowClient

    from jobs.whatif.stage import read_comparison, run_whatif

    monkeypatch.setenv(SHADOW_FAULT_ENV, "flux:raise")
    paths = Paths(tmp_path / "home")
    job = JobConfig("wi", shadow_strategies=("flux", "greedy"))
    run_id, _ = _logged_period(paths, job)
    assert "1 failed, 1 planned" in run_whatif(job, STAMP, paths=paths).summary()
    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    flux = next(r for r in read_comparison(client, run_id) if r["strategy"] == "flux")
    assert flux["status"] == "failed" and flux["load_distance_after"] == ""
    assert "fault injected" in flux["message"]
    (child,) = client.search_runs([client.get_run(run_id).info.experiment_id], filter_string=(
        f"tags.`mlflow.parentRunId` = '{run_id}' AND tags.`reconf.shadow.status` = 'failed'"))
    assert child.info.status == "FAILED" and "load_distance_after" not in child.data.metrics
    assert client.get_run(run_id).data.tags["reconf.whatif.best"] in ("milp", "greedy")
