"""Huge numbers in the config: every field is bounded by a named limit, refused with the file,
the job, the field and the limit, and one bad job never hides the others.

A duration of 1e308 seconds, "99999999999999999999s", "99999999999999d" or an integer of 400
digits once raised OverflowError out of the loader: "unexpected error", no field named, and every
other job of the file unread (the DAG file lost every DAG). The property test writes any number
into any numeric field of one job next to a good one: the good job always loads, and the other
is either a valid job whose DAG timeouts compute or an error naming its field.
"""

from __future__ import annotations

import importlib.util
import math
import os
from datetime import timedelta
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.config import read_jobs

os.environ.setdefault("AIRFLOW_HOME", str(Path(__file__).resolve().parents[2] / ".reconf"
                                          / "test-airflow"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

DAG_FILE = Path(__file__).resolve().parents[2] / "dags" / "reconfigure.py"
BIG = "9" * 400

REPORTED = [
    ("approval_timeout = 1e308", "jobs.bad.approval_timeout", "more than 7 days"),
    ('landing_timeout = "99999999999999999999s"', "jobs.bad.landing_timeout", "at most 366 days"),
    ('spl = "99999999999999d"', "jobs.bad.spl", "at most 366 days"),
    (f"max_migrations = {BIG}", "jobs.bad.max_migrations", "from 0 to 2147483647"),
    (f"alpha = {BIG}", "jobs.bad.alpha", "at most 1e+18"),
    ("solver_time_limit_s = 1e308", "jobs.bad.solver_time_limit_s", "at most 86400"),
    (f"[jobs.bad.execution]\nmax_bytes_per_wave = {BIG}", "jobs.bad.execution.max_bytes_per_wave",
     "at most 1e+18"),
    (f"[jobs.bad.stability]\nwindow_periods = {BIG}", "jobs.bad.stability.window_periods",
     "at most 1000000"),
    ("[jobs.bad.healing]\nmin_gap = 1e308", "jobs.bad.healing.min_gap", "at most 366 days"),
    (f"[jobs.bad.constraints]\nmax_units_per_node = {BIG}",
     "jobs.bad.constraints: max_units_per_node", "at most 1000000"),
    (f"[jobs.bad.strategy_params.milp]\nnode_limit = {BIG}",
     "jobs.bad.strategy_params.milp.node_limit", "at most 1e+18"),
    ("[jobs.bad.strategy_params.milp]\nwork_limit = 99999999999",
     "jobs.bad.strategy_params.milp.work_limit", "2147483647"),
]


def _file(tmp_path: Path, bad: str) -> Path:
    path = tmp_path / "jobs.toml"
    path.write_text(f'[jobs.good]\nstrategy = "milp"\n[jobs.bad]\nstrategy = "milp"\n{bad}\n'
                    '[jobs.after]\nstrategy = "greedy"\n')
    return path


@pytest.mark.parametrize(("line", "field", "limit"), REPORTED, ids=[r[1] for r in REPORTED])
def test_a_huge_value_is_refused_naming_the_job_the_field_and_the_limit(
        tmp_path: Path, line: str, field: str, limit: str) -> None:
    path = _file(tmp_path, line)
    loaded = read_jobs(path)
    assert sorted(loaded.jobs) == ["after", "good"]  # the other jobs load
    message = str(loaded.errors["bad"])
    assert message.startswith(f"{path}: {field}"), message
    assert limit in message, message
    assert BIG not in message, message  # a 400-digit value is shortened, not echoed whole


_dag_module: ModuleType | None = None


def _dag() -> ModuleType:
    """dags/reconfigure.py, loaded once (its DAGs are the repository config's)."""
    global _dag_module
    if _dag_module is None:
        spec = importlib.util.spec_from_file_location("reconfigure_bounds", DAG_FILE)
        assert spec is not None and spec.loader is not None
        _dag_module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_dag_module)
    return _dag_module


#: every numeric field of a job (a table path, the key)
FIELDS = [("", "spl"), ("", "max_migrations"), ("", "max_migration_cost"),
          ("", "solver_time_limit_s"), ("", "alpha"), ("", "shadow_time_budget_s"),
          ("", "catchup_periods"), ("", "landing_timeout"), ("", "approval_timeout"),
          ("scaling", "min_nodes"), ("scaling", "max_nodes"), ("scaling", "target_utilisation"),
          ("scaling", "cooldown_cycles"), ("scaling", "max_ld"), ("stability", "band"),
          ("stability", "cooldown_periods"), ("stability", "window_periods"),
          ("healing", "budget"), ("healing", "min_gap"), ("healing", "max_nodes_at_once"),
          ("healing", "over_capacity_pct"), ("execution", "max_moves_per_node"),
          ("execution", "max_moves_per_wave"), ("execution", "max_bytes_per_wave"),
          ("execution", "ceiling_pct"), ("execution", "max_bytes_per_second"),
          ("constraints", "max_units_per_node"), ("strategy_params.milp", "w_b"),
          ("strategy_params.milp", "node_limit"), ("strategy_params.milp", "work_limit"),
          ("strategy_params.milp", "seed"), ("strategy_params.milp", "lns_steps")]


def _toml(value: int | float | str) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


NUMBERS = st.one_of(
    st.integers(), st.integers(min_value=-(10**400), max_value=10**400),
    st.sampled_from([10**18, 10**18 + 1, 2**31, 2**63, 10**400, -(10**400)]),
    st.floats(), st.sampled_from([1e308, -1e308, 1e18, 1e19, 5e-324, 1e-7]),
    st.builds(lambda n, u: f"{n}{u}", st.integers(0, 10**25), st.sampled_from("smhd")))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(FIELDS), value=NUMBERS)
def test_any_number_in_any_field_is_a_valid_job_or_an_error_naming_the_field(
        tmp_path: Path, where: tuple[str, str], value: int | float | str) -> None:
    table, key = where
    line = (f"{key} = {_toml(value)}" if not table
            else f"[jobs.bad.{table}]\n{key} = {_toml(value)}")
    path = _file(tmp_path, line)
    loaded = read_jobs(path)
    assert sorted(loaded.jobs) in (["after", "good"], ["after", "bad", "good"])
    if "bad" in loaded.errors:
        message = str(loaded.errors["bad"])
        named = f"jobs.bad.{table}" if table else f"jobs.bad.{key}"
        assert message.startswith(f"{path}: {named}") and key in message, message
        assert len(message) < 1000, message
        return
    job = loaded.jobs["bad"]
    dag = _dag()
    timeouts = dag.task_timeouts(job)  # what build_dag computes from the job's numbers
    assert all(timedelta(0) < t < timedelta(days=10_000) for t in timeouts.values())
    assert job.landing_wait + timedelta(minutes=5) > timedelta(0)
    assert job.healing.min_gap + timedelta(minutes=10) > timedelta(0)
    assert job.start_date + 1000 * job.spl > job.start_date
    assert (3 * job.spl) // job.spl == 3  # the period grid divides by it
    dag.run_params(job)


def test_an_unforeseen_error_in_one_job_is_that_jobs_config_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader's net: whatever a job's values raise, the other jobs load and the error
    names the job (never an "unexpected error" that takes the whole file down)."""
    import schemas.config.load as load

    real = load._job

    def fragile(job_id: str, raw: dict[str, object], origin: str) -> object:
        if job_id == "bad":
            raise OverflowError("Python int too large to convert to C int")
        return real(job_id, raw, origin)

    monkeypatch.setattr(load, "_job", fragile)
    path = _file(tmp_path, "")
    loaded = read_jobs(path)
    assert sorted(loaded.jobs) == ["after", "good"]
    message = str(loaded.errors["bad"])
    assert message.startswith(f"{path}: jobs.bad: a value could not be read (OverflowError: "
                              "Python int too large to convert to C int)"), message
