"""The job table declared with pydantic: each field's rule, worded as the config error shows it.

The messages below are the contract operators read (docs/operations.md, "Bad input"): the file,
`jobs.<id>.<field>`, the rule and the value given. Tests elsewhere check single fields through
the CLI, the DAG file and the stages; this module pins the wording of every rule at once.
"""

from __future__ import annotations

import dataclasses
import pickle
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.config import MAX_MIGRATIONS, ConfigError, JobConfig, ScalingConfig, read_jobs

CASES = [
    ('spl = "0m"', "jobs.j.spl: must be a positive duration, got '0m'"),
    ("spl = true", "jobs.j.spl: must be a duration like '5m' or '300s', got True"),
    ('strategy = "nope"', "jobs.j.strategy: unknown strategy 'nope'; known: "),
    ("strategy = 3", "jobs.j.strategy: must be a strategy name, got 3"),
    ("max_migrations = 1.5", "jobs.j.max_migrations: must be a whole number, got 1.5"),
    ("max_migrations = -1", "jobs.j.max_migrations: must be >= 0, got -1"),
    ("max_migrations = 3000000000", f"jobs.j.max_migrations: must be a whole number from 0 to "
     f"{MAX_MIGRATIONS} (a budget above the job's key-group count moves any), got 3000000000.0"),
    ("max_migration_cost = -1.0", "jobs.j.max_migration_cost: must be >= 0, got -1.0"),
    ("solver_time_limit_s = 0", "jobs.j.solver_time_limit_s: must be > 0, got 0.0"),
    ("alpha = nan", "jobs.j.alpha: must be >= 0, got nan"),
    ("start_date = 2026-01-01", "jobs.j.start_date: must be a TOML date-time, got "
     "datetime.date(2026, 1, 1)"),
    ("source = 3", "jobs.j.source: must be a table, got 3"),
    ('units = "x"', "jobs.j.units: must be \"fixed\" (every key group present every period) or "
     "\"dynamic\" (units arrive and leave between periods), got 'x'"),
    ("load_model = {streams = []}", "jobs.j.load_model: streams: must be a non-empty list"),
    ("strategy_params = 3", "jobs.j.strategy_params: must be a table of per-strategy tables, "
     "e.g. [jobs.j.strategy_params.albic] with max_pl = 20; got 3"),
    ("strategy_params = {albic = 1}", "jobs.j.strategy_params.albic: must be a table of "
     "parameters (e.g. { s_f = 1.5 }), got 1"),
    ("strategy_params = {albic = {max_pl = [1]}}", "jobs.j.strategy_params.albic.max_pl: must be "
     "a number, string or boolean, got [1]"),
    ("strategy_params = {nope = {}}", "jobs.j.strategy_params.nope: unknown strategy 'nope'"),
    ("strategy_params = {milp = {time_limit_s = 3}}", "jobs.j.strategy_params.milp.time_limit_s: "
     "set by the job's 'solver_time_limit_s', not as a strategy parameter"),
    ("topology = 3", "jobs.j.topology: must be the path of a topology file, got 3"),
    ('shadow_strategies = ["nope"]', "jobs.j.shadow_strategies: unknown strategy 'nope'; known: "),
    ("shadow_time_budget_s = 200", "jobs.j.shadow_time_budget_s: 200 s is more than half the "
     "period (0:05:00); shadow plans run after publish"),
    ("catchup_periods = 1001", "jobs.j.catchup_periods: must be a whole number of periods from 0 "
     "to 1000"),
    ('landing_timeout = "1h"', "jobs.j.landing_timeout: '1h' is more than 10 periods (0:50:00)"),
    ('approval = "yes"', "jobs.j.approval: must be true or false, got 'yes'"),
    ("approval = 1", "jobs.j.approval: must be true or false, got 1"),
    ('approval_timeout = "0s"', "jobs.j.approval_timeout: must be a positive duration"),
    ('approval_timeout = "8d"', "jobs.j.approval_timeout: '8d' is more than 7 days"),
    ("scaling = 3", "jobs.j.scaling: must be a table, got 3"),
    ("scaling = {targets = 1}", "jobs.j.scaling: unknown field(s) targets; known: "
     "cooldown_cycles, max_ld, max_nodes, min_nodes, target_utilisation"),
    ("scaling = {min_nodes = 5, max_nodes = 3}", "jobs.j.scaling: min_nodes (5) must be <= "
     "max_nodes (3), and max_nodes >= 1"),
    ("scaling = {cooldown_cycles = -1}", "jobs.j.scaling.cooldown_cycles: must be >= 0 cycles, "
     "got -1"),
    ("bogus = 1", "jobs.j: unknown field(s) bogus; known: alpha, approval, approval_timeout, catchup_periods, "),
    ('job_id = "k"', "jobs.j: unknown field(s) job_id; known: "),  # the id is the table's name
]


def _errors(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "jobs.toml"
    path.write_text(text)
    return {job: str(error) for job, error in read_jobs(path).errors.items()}


@pytest.mark.parametrize(("line", "message"), CASES, ids=[c[0] for c in CASES])
def test_each_rule_names_the_file_the_field_and_the_rule(tmp_path: Path, line: str,
                                                         message: str) -> None:
    errors = _errors(tmp_path, f"[jobs.j]\n{line}\n")
    assert list(errors) == ["j"]
    assert errors["j"].startswith(f"{tmp_path / 'jobs.toml'}: {message}"), errors["j"]


def test_a_bad_job_id_is_the_jobs_error_not_a_fields(tmp_path: Path) -> None:
    errors = _errors(tmp_path, '[jobs.Bad]\nbogus = 1\n[jobs.good]\n')
    assert errors == {"Bad": f"{tmp_path / 'jobs.toml'}: jobs.Bad: job id must be lower-case "
                             "letters, digits, '-' or '_' (at most 63)"}


def test_every_broken_rule_of_a_job_is_listed(tmp_path: Path) -> None:
    (error,) = _errors(tmp_path, '[jobs.j]\nspl = "0m"\nalpha = -1\n').values()
    assert error.count("; ") == 1 and "jobs.j.spl:" in error and "jobs.j.alpha:" in error


@given(st.integers(1, 86_400), st.integers(0, MAX_MIGRATIONS), st.sampled_from(["fixed", "dynamic"]))
def test_a_table_and_the_same_values_in_code_are_one_job(spl_s: int, budget: int, units: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "jobs.toml"
        path.write_text(f'[jobs.j]\nspl = {spl_s}\nmax_migrations = {budget}\nunits = "{units}"\n')
        loaded = read_jobs(path).jobs["j"]
    assert loaded == JobConfig("j", spl=timedelta(seconds=spl_s), max_migrations=budget, units=units)


def test_a_job_built_in_code_is_taken_as_given() -> None:
    """The rules are the file's: a benchmark's job without a planner, a CLI override out of range
    reach the code that uses them (the plan stage refuses that budget with its own message)."""
    job = JobConfig("x", spl=timedelta(seconds=30))  # shadow budget 60 s > SPL/2: a file's rule
    assert dataclasses.replace(job, max_migrations=10**20).max_migrations == 10**20
    assert JobConfig("x", strategy="potc").strategy == "potc"
    assert ScalingConfig(min_nodes=2, max_nodes=1).max_nodes == 1
    assert pickle.loads(pickle.dumps(job)) == job
    assert job.start_date == datetime(2026, 1, 1, tzinfo=UTC) and job.landing_wait == job.spl
    with pytest.raises(ValueError, match="bogus"):  # a field it does not have is still refused
        JobConfig("x", bogus=1)  # type: ignore[call-arg]


def test_an_unreadable_file_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "jobs.toml"
    path.write_text("[jobs.j\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_jobs(path)


def test_a_source_or_defaults_that_is_no_table_is_a_config_error(tmp_path: Path) -> None:
    """Not a TypeError from merging the tables: the field's rule answers."""
    errors = _errors(tmp_path, "[defaults]\nsource = 3\n[jobs.j]\n[jobs.k]\nsource = 4\n")
    assert errors["j"].endswith("jobs.j.source: must be a table, got 3")
    assert errors["k"].endswith("jobs.k.source: must be a table, got 4")
    path = tmp_path / "jobs.toml"
    path.write_text("defaults = 3\n[jobs.j]\n")
    with pytest.raises(ConfigError, match=r"defaults: must be a table \[defaults\]"):
        read_jobs(path)


def test_checking_every_strategys_params_loads_only_their_params_modules(tmp_path: Path) -> None:
    """schemas names no planner module in its code; to check `strategy_params` it loads the params
    class each strategy's line names (schemas/params.py): pydantic only, no solver, no numpy."""
    import json
    import subprocess
    import sys

    from test_import_graph import ROOT

    from schemas.strategies import STRATEGIES

    path = tmp_path / "jobs.toml"
    path.write_text("[jobs.j]\n" + "".join(f"[jobs.j.strategy_params.{name}]\nseed = 1\n"
                                           for name in STRATEGIES))
    probe = ("import json, sys; from schemas.config import load_jobs; "
             f"load_jobs({str(path)!r}); print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    loaded = json.loads(done.stdout)
    ours = [m for m in loaded if m.split(".")[0] in ("placement", "jobs", "runtime", "reconf")]

    def light(module: str) -> bool:  # a package's __init__, its params, the lazy-name helper
        package = (ROOT / module.replace(".", "/") / "__init__.py").is_file()
        return package or module.endswith(".params") or module == "placement.exports"

    assert ours and [m for m in ours if not light(m)] == [], ours
    assert not {"numpy", "pulp", "highspy", "scipy"} & set(loaded)


def test_approval_is_off_by_default_and_its_timeout_an_hour(tmp_path: Path) -> None:
    path = tmp_path / "jobs.toml"
    path.write_text('[jobs.j]\n\n[jobs.k]\napproval = true\napproval_timeout = "90s"\n')
    jobs = read_jobs(path).jobs
    assert (jobs["j"].approval, jobs["j"].approval_timeout) == (False, timedelta(hours=1))
    assert (jobs["k"].approval, jobs["k"].approval_timeout) == (True, timedelta(seconds=90))
