"""Deterministic plans: the same inputs, budget, params and time limit give the same plan.

For every registered strategy on random states with its facets (verifier_lib.states): planning
twice gives identical moves and assignment, and the plan records what made it deterministic
(placement/determinism.py). The MILP's default work budget (HiGHS interrupt checkpoints and
mip_max_nodes, no clock) gives identical plans on repeated solves of random states, also while
another process keeps a core busy, and so does ALBIC, whose maxPL levels stop on their own work
budget; a plan the clock cut says so, naming the fix.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verifier_lib import Case, call_params, states

from placement.albic.core import level_cost
from placement.determinism import DEFAULT_NODE_LIMIT, DEFAULT_WORK_LIMIT
from placement.milp.core import AUTO_MAX_VARS
from placement.model import Budget, ClusterState, Plan
from placement.params import ParamsError
from placement.registry import build_strategy_params, get_spec, get_strategy, strategy_names
from placement.workloads.comm import comm_workload
from placement.workloads.synthetic import heterogeneous, synthetic_state

NAMES = strategy_names()


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_planning_twice_gives_the_same_moves(name: str, data: st.DataObject) -> None:
    spec = get_spec(name)
    case: Case = data.draw(states(frozenset(spec.facets), arrivals=spec.places_arrivals))
    params = {**call_params(name, case), "time_limit_s": 20.0}  # no clock cut on tiny states
    first = get_strategy(name)(case.state, case.budget, **params)
    second = get_strategy(name)(case.state, case.budget, **params)
    assert first.moves == second.moves and dict(first.assignment) == dict(second.assignment)
    assert first.status is second.status
    assert first.determinism == second.determinism
    assert first.determinism.startswith("deterministic: seed 1"), first.determinism


@contextmanager
def busy_core() -> Iterator[None]:
    """Another process spinning on a core while the body runs (CPU contention)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait(timeout=10)


def _fingerprint(plan: Plan) -> tuple[object, ...]:
    solve = plan.phase("solve")
    return (plan.moves, tuple(sorted(plan.assignment.items())), plan.status,
            plan.determinism, solve.outcome if solve else None)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.integers(6, 12), per_node=st.integers(5, 10), varies=st.floats(0.2, 0.8),
       seed=st.integers(0, 10_000), mixed=st.booleans(), migrations=st.integers(2, 12))
def test_the_default_budget_gives_the_same_milp_plan_on_a_busy_machine(
        nodes: int, per_node: int, varies: float, seed: int, mixed: bool,
        migrations: int) -> None:
    state = synthetic_state(nodes=nodes, keygroups=nodes * per_node, operators=4,
                            varies=varies, seed=seed)
    if mixed:
        state = heterogeneous(state, seed)
    budget = Budget(max_migrations=migrations)
    milp = get_strategy("milp")
    quiet = milp(state, budget, time_limit_s=60.0)  # the default work budget, a loose net
    with busy_core():
        busy = milp(state, budget, time_limit_s=60.0)
    again = milp(state, budget, time_limit_s=60.0)
    assert _fingerprint(quiet) == _fingerprint(busy) == _fingerprint(again)
    assert quiet.determinism.startswith(
        f"deterministic: seed 0, work budget {DEFAULT_WORK_LIMIT} HiGHS checkpoints and "
        f"{DEFAULT_NODE_LIMIT} nodes (mip_max_nodes) per solve"), quiet.determinism


def _demo() -> tuple[ClusterState, Budget]:
    """The demo job's size (8 nodes, 4 operators × 16 key groups, 8 migrations)."""
    return synthetic_state(nodes=8, keygroups=64, operators=4, varies=0.3, seed=7), Budget(
        max_migrations=8)


def test_the_work_budget_not_the_clock_stops_the_demo_sized_milp() -> None:
    state, budget = _demo()
    plan = get_strategy("milp")(state, budget, time_limit_s=60.0)
    solve = plan.phase("solve")
    assert solve is not None and solve.outcome in ("work_limit", "node_limit"), solve
    assert plan.determinism.startswith("deterministic: "), plan.determinism
    assert plan.to_dict()["determinism"] == plan.determinism


def test_a_clock_cut_is_recorded_naming_the_fix() -> None:
    state, budget = _demo()
    milp = get_strategy("milp")
    unbudgeted = milp(state, budget, time_limit_s=0.05, candidates="all", node_limit=None,
                      work_limit=None)
    assert unbudgeted.determinism.startswith("clock-limited: the time limit stopped "), (
        unbudgeted.determinism)
    assert "a HiGHS solve" in unbudgeted.determinism
    assert "no work budget" in unbudgeted.determinism
    assert "set work_limit or node_limit in strategy_params" in unbudgeted.determinism
    # the default budget with a safety net too short for it: the net fires, and says so
    netted = milp(state, budget, time_limit_s=0.05, candidates="all", work_limit=100_000)
    assert netted.determinism.startswith("clock-limited: "), netted.determinism
    assert "raise solver_time_limit_s (the safety net)" in netted.determinism


@pytest.mark.parametrize(("field", "value", "rule"), [
    ("work_limit", 0, "greater than or equal to 1"),
    ("node_limit", -3, "greater than or equal to 1"),
    ("lns_steps", -1, "greater than or equal to 0"),
    ("work_limit", "many", "integer"),
])
def test_a_bad_budget_in_strategy_params_is_refused_naming_the_field(
        field: str, value: object, rule: str) -> None:
    with pytest.raises(ParamsError) as caught:
        build_strategy_params("milp", {field: value})
    message = str(caught.value)
    assert message.startswith("strategy 'milp': ") and field in message, message
    assert rule in message.lower(), message


#: plans every strategy on derandomized drawn states (the same draws in every process) and
#: prints one digest line per plan
_DIGESTS = """
import hashlib
from hypothesis import HealthCheck, given, settings, strategies as st
from verifier_lib import call_params, states
from placement.registry import get_spec, get_strategy, strategy_names

@settings(max_examples=4, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def plan_all(data):
    for name in strategy_names():
        spec = get_spec(name)
        case = data.draw(states(frozenset(spec.facets), arrivals=spec.places_arrivals))
        plan = get_strategy(name)(case.state, case.budget,
                                  **{**call_params(name, case), "time_limit_s": 20.0})
        key = repr((name, plan.moves, sorted(plan.assignment.items())))
        print(name, hashlib.sha256(key.encode()).hexdigest()[:16])

plan_all()
"""


def test_plans_do_not_depend_on_the_process_string_hash_seed(tmp_path) -> None:
    """A dry run and the real plan run in different processes (Airflow tasks): a set or dict
    of strings iterated in hash order would make their plans differ. Two processes with
    different PYTHONHASHSEED plan the same drawn states with every strategy."""
    import os
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{root / 'tests' / 'placement'}"}
    out = []
    for hash_seed in ("1", "2"):
        done = subprocess.run([sys.executable, "-c", _DIGESTS], env={
            **env, "PYTHONHASHSEED": hash_seed}, cwd=tmp_path, capture_output=True, text=True,
            timeout=500, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        out.append(done.stdout.splitlines())
    assert len(out[0]) == 4 * len(NAMES) and out[0] == out[1]


def test_a_clock_cut_plan_is_said_in_capitals_where_an_operator_reads_first() -> None:
    from jobs.tracking.audit_trail import summary_line
    from placement.determinism import alarm
    from schemas.tracking import Tag

    state, budget = _demo()
    cut = get_strategy("milp")(state, budget, time_limit_s=0.05, candidates="all",
                               node_limit=None, work_limit=None)
    loud = alarm(cut.determinism)
    assert loud.startswith("CLOCK-LIMITED: the time limit (the safety net) cut this plan, so "
                           "a dry run of it is no binding preview; set work_limit"), loud
    tags = {Tag.DETERMINISM: cut.determinism, f"{Tag.PARAM_PREFIX}strategy": "milp"}
    line = summary_line(tags, {"load_distance_before": 1.0, "load_distance_after": 0.5}, 2)
    assert line.splitlines()[0].endswith(f"**{loud}**"), line
    calm = get_strategy("milp")(state, budget, time_limit_s=60.0)
    assert alarm(calm.determinism) == ""
    assert "CLOCK" not in summary_line({**tags, Tag.DETERMINISM: calm.determinism}, {}, 0)


def test_a_bad_work_budget_in_the_job_config_is_refused_when_it_loads(tmp_path) -> None:
    from schemas.config import resolve_job
    from schemas.errors import ReconfError

    config = tmp_path / "jobs.toml"
    config.write_text('[jobs.j]\nstrategy = "milp"\nmax_migrations = 3\n'
                      'source = { kind = "synthetic", operators = 2, keygroups_per_operator = 2, '
                      'nodes = 2, seed = 1 }\n\n[jobs.j.strategy_params.milp]\nwork_limit = 0\n')
    with pytest.raises(ReconfError) as caught:
        resolve_job("j", config)
    message = str(caught.value)
    assert "strategy_params" in message and "work_limit" in message, message
    assert str(config) in message, message


def test_reconf_plan_prints_the_alarm_of_a_clock_cut_plan(capsys) -> None:
    from types import SimpleNamespace

    from reconf.cli.stages import print_plan

    state, budget = _demo()
    for plan, loud in ((get_strategy("milp")(state, budget, time_limit_s=0.05, candidates="all",
                                             node_limit=None, work_limit=None), True),
                       (get_strategy("milp")(state, budget, time_limit_s=60.0), False)):
        print_plan(SimpleNamespace(plan=plan, plan_id="j@p", base_version=None,
                                    mlflow_run_id=None, published_as=None), show_moves=False)
        out = capsys.readouterr().out
        assert ("  CLOCK-LIMITED: the time limit (the safety net) cut this plan" in out) is loud
        # a work-budgeted plan says why its dry run binds, as `reconf audit` does
        assert ("\n  reproducible: deterministic: seed 0, work budget" in out) is not loud


def test_albic_s_levels_stop_on_work_so_its_plan_is_the_same_on_a_busy_machine() -> None:
    """A mid-size ALBIC instance (3,000 key groups, 30 nodes, stepPL 0.25: 100 maxPL levels)
    whose levels the clock cuts (on the clock, with a 3 s limit, as the levels were before
    their work budget): on the work budget the levels that run are the ones `level_work` pays
    for, so the plan is the same with a core busy and says it is deterministic (the 30 s limit
    is only the safety net, as in the MILP's test above)."""
    w = comm_workload(30, 3000, 30, 90.0, 3)
    state, budget = w.state(w.initial), Budget(max_migrations=20)
    albic = get_strategy("albic")
    params = {"max_ld": 1.0, "step_pl": 0.25}
    paid = {**params, "time_limit_s": 30.0, "level_work": 3 * level_cost(state)}

    def levels(plan: Plan) -> list[str]:
        return [p.name for p in plan.phases]

    quiet = albic(state, budget, **paid)
    with busy_core():
        busy = albic(state, budget, **paid)
    assert _fingerprint(quiet) == _fingerprint(busy), (quiet.determinism, busy.determinism)
    assert levels(quiet) == levels(busy) == ["maxPL 25", "maxPL 24.75", "maxPL 24.5",
                                             "plain MILP"]
    assert quiet.determinism.startswith("deterministic: "), quiet.determinism
    assert "the levels' work budget is spent" in quiet.message
    clocked = albic(state, budget, **params, time_limit_s=3.0, work_limit=None,
                    node_limit=None)
    assert "ALBIC's maxPL levels" in clocked.determinism, clocked.determinism
    assert 2 <= len(levels(clocked)) < 101, levels(clocked)  # the first level, then the clock


def test_the_milp_status_paragraph_states_the_work_budget_rule() -> None:
    """docs/algorithms.md's MILP "Status" says what the determinism section decided: a
    TIME_LIMITED plan stopped on its work budget (reproducible) or, rarely, on the clock, and
    the full model runs by a size rule, not by the time left."""
    text = (Path(__file__).parents[2] / "docs" / "algorithms.md").read_text()
    start = text.index("**Status.** OPTIMAL = the full model")
    paragraph = " ".join(text[start:text.index("\n\n", start)].split())
    for stale in ("when time ran out", "fits in the time left", "only attempted when"):
        assert stale not in paragraph, stale
    for rule in ("work_limit", "node_limit", "CLOCK-LIMITED", f"{AUTO_MAX_VARS:,}".replace(",", " "),
                 '"Deterministic plans"'):
        assert rule in paragraph, rule
