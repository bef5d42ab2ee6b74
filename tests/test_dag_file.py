"""The DAG files: one DAG per valid job with the operators' semantics (depends on the previous
cycle, retries with back-off, timeouts, validated params, the assignment Asset), per-job config
errors as an import error of their own file, optional cluster-mode collect, and no heavy imports."""

from __future__ import annotations

import copy
import importlib.util
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from types import ModuleType

import pytest

# Airflow reads its home when first imported; never let a test touch ~/airflow.
os.environ.setdefault("AIRFLOW_HOME", str(Path(__file__).resolve().parents[1] / ".reconf" / "test-airflow"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

ROOT = Path(__file__).resolve().parents[1]
DAG_DIR = ROOT / "dags"
DAG_FILE = DAG_DIR / "reconfigure.py"
CHECK_FILE = DAG_DIR / "reconfigure_config_check.py"

TWO_JOBS = """
[defaults]
spl = "10m"
[jobs.alpha]
source = { kind = "synthetic", nodes = 2, operators = 1, keygroups_per_operator = 4 }
[jobs.beta]
spl = "1h"
max_migrations = 2
source = { kind = "synthetic" }
"""
# Four bad jobs next to a good one: a non-positive SPL, an unknown strategy, a strategy parameter
# out of its choices, and an id that duplicates another once '-' and '_' count as the same (TOML
# itself rejects equal keys).
BAD_JOBS = """
[defaults]
spl = "5m"
[jobs.good]
[jobs.zero]
spl = "0m"
[jobs.typo]
strategy = "milpp"
[jobs.knob.strategy_params.milp]
solver = "gurobi"
[jobs.good_2]
[jobs.good-2]
"""


# One job per registered strategy, each with a parameter of its own (the shared `seed` where it
# has none): loading it imports every strategy's params class, so the config check's import
# budget below holds for every strategy (a herding job once made the check import numpy).
STRATEGY_PARAMS: dict[str, str] = {
    "milp": "w_b = 0.001", "albic": "max_ld = 5.0", "albic_many": "pair_share = 0.25",
    "flux": "seed = 1", "greedy": "seed = 1", "random": "moves = 2", "cola": "max_ld = 5.0",
    "drain_then_balance": 'balancer = "greedy"', "rod": 'class2 = "min"', "llf": "seed = 1",
    "connected_lb": "seed = 1", "sprawl": "beta = 0.5", "herding_offline": 'algorithm = "mms"',
    "herding_online": 'metric = "least_source"', "herding_exact": "max_units = 50",
    "cg": "rounds = 2",
}
EVERY_STRATEGY = '[defaults]\nspl = "10m"\n' + "".join(
    f'[jobs.{name}]\nstrategy = "{name}"\n[jobs.{name}.strategy_params.{name}]\n{param}\n'
    for name, param in STRATEGY_PARAMS.items())


def _jobs_file(text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`text` as the config file the DAG files read, in local (not cluster) mode."""
    config = tmp_path / "jobs.toml"
    config.write_text(text)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.delenv("RECONF_SPARK_SUBMIT", raising=False)
    return config


@pytest.fixture()
def every_strategy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return _jobs_file(EVERY_STRATEGY, tmp_path, monkeypatch)


@pytest.fixture()
def two_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return _jobs_file(TWO_JOBS, tmp_path, monkeypatch)


@pytest.fixture()
def bad_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "jobs.toml"
    config.write_text(BAD_JOBS)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    return config


def _bag(folder: Path):  # the DagBag (typed lazily: Airflow imports late)
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(folder))


def _dag_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reconfigure_under_test", DAG_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_dag_per_job_with_schedule_and_order(two_jobs: Path) -> None:
    bag = _bag(DAG_DIR)
    assert bag.import_errors == {}
    assert sorted(bag.dag_ids) == ["reconfigure_alpha", "reconfigure_beta",
                                   "rollback_alpha", "rollback_beta"]  # dags/rollback.py
    alpha, beta = bag.dags["reconfigure_alpha"], bag.dags["reconfigure_beta"]
    assert alpha.max_active_runs == 1 and beta.max_active_runs == 1
    from reconf.timetable import PeriodGridTimetable

    # The job's period grid (start_date + k*SPL), not Airflow's unaligned timedelta schedule.
    assert isinstance(alpha.timetable, PeriodGridTimetable)
    assert alpha.timetable.spl == timedelta(minutes=10)
    assert beta.timetable.spl == timedelta(hours=1) and beta.timetable.catchup_periods == 1
    assert alpha.catchup is False  # the timetable's catch-up policy decides
    order = {t.task_id: sorted(t.downstream_task_ids) for t in alpha.tasks}
    assert order == {"wait_for_landing": ["collect", "missed_period"], "collect": ["validate"],
                     "validate": ["plan"], "plan": ["publish"], "publish": ["whatif"],
                     "whatif": [], "missed_period": []}
    assert alpha.get_task("missed_period").trigger_rule == "all_skipped"
    whatif = alpha.get_task("whatif")  # a teardown: its failure never fails the run
    assert whatif.is_teardown and not whatif.on_failure_fail_dagrun
    assert whatif.trigger_rule == "all_done_setup_success"


def test_no_task_waits_on_the_previous_run_and_stages_retry_with_backoff(two_jobs: Path) -> None:
    """The cycle gate (reconf/cycle_gate.py) orders the cycles: no task depends on the past, so
    a cleared run never waits on a run holding the slot, nor a new task on a run without it."""
    beta = _bag(DAG_FILE).dags["reconfigure_beta"]
    for t in beta.tasks:
        assert t.depends_on_past is False and t.wait_for_downstream is False, t.task_id
        # shadows, the landing wait (and the gate) and its verdict: no retry, end at once
        if t.task_id in ("whatif", "wait_for_landing", "missed_period"):
            assert t.retries == 0
            continue
        assert t.retries == 3 and t.retry_delay == timedelta(seconds=30)
        assert t.retry_exponential_backoff == 2.0 and t.max_retry_delay == timedelta(minutes=10)
    timeouts = {t.task_id: t.execution_timeout for t in beta.tasks}
    # 2 SPL per stage (SPL 1h); plan adds twice the longest solver time a run may ask for; the
    # what-if its shadow budget (default 60 s) and 5 minutes for logging.
    assert timeouts == {"collect": timedelta(hours=2), "validate": timedelta(hours=2),
                        "plan": timedelta(hours=2, minutes=20), "publish": timedelta(hours=2),
                        "whatif": timedelta(minutes=6), "missed_period": timedelta(hours=2),
                        # the landing wait: landing_timeout (one SPL) + 5 minutes
                        "wait_for_landing": timedelta(hours=1, minutes=5)}


def test_publish_updates_the_jobs_assignment_asset(two_jobs: Path) -> None:
    alpha = _bag(DAG_FILE).dags["reconfigure_alpha"]
    (asset,) = alpha.get_task("publish").outlets
    assert asset.uri == "reconf://alpha/assignment" and asset.name == "reconf_alpha_assignment"
    assert all(not alpha.get_task(t).outlets for t in ("collect", "validate", "plan"))


def test_params_default_to_the_job_config_and_are_validated(two_jobs: Path) -> None:
    from airflow.sdk.exceptions import ParamValidationError

    beta = _bag(DAG_FILE).dags["reconfigure_beta"]
    assert beta.params.validate() == {"strategy": "milp", "max_migrations": 2,
                                      "time_limit_s": 10.0, "dry_run": False}

    def check(conf: dict[str, object]) -> dict[str, object]:
        params = copy.deepcopy(beta.params)
        params.update(conf)
        return dict(params.validate())

    ok = check({"strategy": "greedy", "max_migrations": 0, "time_limit_s": 0.5, "dry_run": True})
    assert ok == {"strategy": "greedy", "max_migrations": 0, "time_limit_s": 0.5, "dry_run": True}
    assert check({"max_migrations": None})["max_migrations"] is None  # budget by cost only
    bads: list[dict[str, object]] = [
        {"strategy": "nope"}, {"max_migrations": -1}, {"max_migrations": 1.5},
        {"time_limit_s": 0}, {"time_limit_s": 601}, {"dry_run": "yes"}]
    for bad in bads:
        with pytest.raises(ParamValidationError):
            check(bad)


def test_bad_jobs_get_no_dag_and_one_import_error_naming_file_and_fields(bad_jobs: Path) -> None:
    bag = _bag(DAG_DIR)
    assert sorted(bag.dag_ids) == ["reconfigure_good", "reconfigure_good_2", "rollback_good",
                                   "rollback_good_2"]
    (path, message), = bag.import_errors.items()
    assert Path(path).name == CHECK_FILE.name  # not reconfigure.py: its DAGs stay schedulable
    assert f"{bad_jobs}: jobs.zero.spl: must be a positive duration" in message
    assert f"{bad_jobs}: jobs.typo.strategy: unknown strategy 'milpp'" in message
    assert f"{bad_jobs}: jobs.knob.strategy_params.milp.solver" in message and "'gurobi'" in message
    assert f"{bad_jobs}: jobs.good-2: duplicate job id" in message and "jobs.good_2" in message


def test_huge_numbers_in_bad_jobs_keep_the_good_jobs_dags(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Values past Python's timedelta and float (once OverflowError out of the loader, which
    took every DAG of the file with it) are import errors of the bad jobs alone."""
    config = _jobs_file('[jobs.good]\n[jobs.wait]\napproval_timeout = 1e308\n'
                        '[jobs.land]\nlanding_timeout = "99999999999999999999s"\n'
                        '[jobs.period]\nspl = "99999999999999d"\n'
                        f'[jobs.budget]\nmax_migrations = {"9" * 400}\n', tmp_path, monkeypatch)
    bag = _bag(DAG_DIR)
    assert sorted(bag.dag_ids) == ["reconfigure_good", "rollback_good"]
    (path, message), = bag.import_errors.items()
    assert Path(path).name == CHECK_FILE.name
    for field in ("wait.approval_timeout", "land.landing_timeout", "period.spl",
                  "budget.max_migrations"):
        assert f"{config}: jobs.{field}: " in message, message


def test_an_unreadable_config_gives_no_dag_and_an_import_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "jobs.toml"
    config.write_text('[jobs.a]\nspl = "5m"\n[jobs.a]\n')  # TOML: a table defined twice
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    bag = _bag(DAG_DIR)
    assert bag.dag_ids == []
    (message,) = bag.import_errors.values()
    assert f"{config}: not valid TOML" in message


def test_a_valid_job_resolves_next_to_an_invalid_one(bad_jobs: Path) -> None:
    from schemas.config import ConfigError, load_jobs, resolve_job

    assert resolve_job("good").job_id == "good"  # its stages run although jobs.zero is bad
    with pytest.raises(ConfigError, match=r"jobs\.zero\.spl"):
        resolve_job("zero")
    with pytest.raises(ConfigError, match=r"jobs\.zero\.spl"):  # the strict reader still refuses
        load_jobs()


def test_the_config_knows_the_planners_strategy_names() -> None:
    from placement.registry import strategy_names
    from schemas.config import STRATEGY_NAMES

    assert set(strategy_names()) == STRATEGY_NAMES


def test_bad_input_fails_fast_and_other_errors_are_retried(two_jobs: Path) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    from jobs.errors import StageError

    module = _dag_module()
    with (pytest.raises(AirflowFailException, match=r"(?s)stats bad.*where: here.*fix:   land"),
          module._fail_fast("validate")):
        raise StageError("stats bad", where="here", fix="land it again")
    # Not AirflowFailException: Airflow retries it.
    with pytest.raises(RuntimeError), module._fail_fast("collect"):
        raise RuntimeError("executor lost")


def test_every_kind_of_refused_input_fails_fast(two_jobs: Path) -> None:
    """The DAG catches the one error base: a period, manifest, parameter, topology or load-model
    refusal fails at once like a stage's, never retried."""
    from airflow.sdk.exceptions import AirflowFailException

    from placement.params import ParamsError
    from placement.rod.model import LoadModelError
    from placement.sprawl.topology import TopologyError
    from schemas.manifest import ManifestError
    from schemas.periods import PeriodError

    module = _dag_module()
    for kind in (PeriodError, ManifestError, ParamsError, TopologyError, LoadModelError):
        with (pytest.raises(AirflowFailException, match=f"{kind.__name__} said no"),
              module._fail_fast("plan")):
            raise kind(f"{kind.__name__} said no")


def test_cluster_mode_collects_with_spark_submit(two_jobs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONF_SPARK_MASTER", "spark://127.0.0.1:7077")
    assert type(_bag(DAG_FILE).dags["reconfigure_alpha"].get_task("collect")).__name__ != \
        "SparkSubmitOperator"  # the master alone does not switch: RECONF_SPARK_SUBMIT=1 does
    monkeypatch.setenv("RECONF_SPARK_SUBMIT", "1")
    alpha = _bag(DAG_FILE).dags["reconfigure_alpha"]
    collect = alpha.get_task("collect")
    assert type(collect).__name__ == "SparkSubmitOperator"
    assert collect.application == str(ROOT / "jobs" / "submit.py")
    assert collect.application_args == ["collect", "--job", "alpha", "--period-end", "{{ ts }}"]
    assert collect._conn_id == "reconf_spark" and ".jar" in collect.jars
    assert collect.retries == 3 and collect.depends_on_past is False
    assert sorted(collect.downstream_task_ids) == ["validate"]

    module = _dag_module()
    monkeypatch.setenv("AIRFLOW_CONN_RECONF_SPARK", "")  # restored (unset) after the test
    monkeypatch.delenv("AIRFLOW_CONN_RECONF_SPARK")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no spark-submit there: the task adds PySpark's
    module._spark_connection({})
    import json
    import shutil

    assert Path(str(shutil.which("spark-submit"))).parent == Path(sys.executable).parent

    conn = json.loads(os.environ["AIRFLOW_CONN_RECONF_SPARK"])
    assert (conn["conn_type"], conn["host"], conn["port"]) == ("spark", "spark://127.0.0.1", 7077)
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    hook = SparkSubmitHook(conn_id="reconf_spark")  # the provider resolves it to our master
    assert hook._connection["master"] == "spark://127.0.0.1:7077"
    assert hook._build_spark_submit_command("jobs/submit.py")[:3] == [
        "spark-submit", "--master", "spark://127.0.0.1:7077"]


def test_the_fixture_covers_every_registered_strategy(every_strategy: Path) -> None:
    from placement.registry import get_spec, strategy_names
    from schemas.config import load_jobs

    assert set(STRATEGY_PARAMS) == set(strategy_names())
    jobs = load_jobs(every_strategy)
    for name in strategy_names():  # each job's table is its strategy's, and not the defaults
        params = get_spec(name).params.model_validate(dict(jobs[name].strategy_params[name]))
        assert params != get_spec(name).params(), name


@pytest.mark.parametrize("dag_file", [DAG_FILE, CHECK_FILE, DAG_DIR / "rollback.py"])
def test_dag_files_import_nothing_heavy(every_strategy: Path, dag_file: Path) -> None:
    # The config check imports the strategies' params classes (pydantic only) and the package
    # `__init__`s they sit in (lazy), nothing else of the planner: no solver, METIS or numpy,
    # for a job of every registered strategy.
    heavy = ("pyspark", "mlflow", "great_expectations", "pulp", "highspy", "pymetis", "numpy",
             "pandas", "jobs", "airflow.providers.apache.spark.operators")
    families = sorted(p.name for p in (ROOT / "placement").iterdir() if (p / "__init__.py").exists())
    light = ("placement", "placement.exports", *(f"placement.{f}" for f in families))
    probe = "\n".join([
        "import runpy, sys",
        "runpy.run_path(sys.argv[1])",
        f"heavy, light = {heavy!r}, {light!r}",
        "def bad(m):",
        "    if m in heavy or m.split('.')[0] in heavy:",
        "        return True",
        "    return m.split('.')[0] == 'placement' and not (m.endswith('.params') or m in light)",
        "print(','.join(m for m in sys.modules if bad(m)))",
    ])
    done = subprocess.run([sys.executable, "-c", probe, str(dag_file)],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


APPROVAL_JOBS = TWO_JOBS + """
[jobs.gated]
approval = true
approval_timeout = "2h"
source = { kind = "synthetic" }
"""


def test_a_job_with_approval_asks_a_human_between_plan_and_publish(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.standard.operators.hitl import ApprovalOperator

    _jobs_file(APPROVAL_JOBS, tmp_path, monkeypatch)
    bag = _bag(DAG_DIR)
    assert bag.import_errors == {}
    gated, alpha = bag.dags["reconfigure_gated"], bag.dags["reconfigure_alpha"]
    order = {t.task_id: sorted(t.downstream_task_ids) for t in gated.tasks}
    assert order == {"wait_for_landing": ["collect", "missed_period"], "collect": ["validate"],
                     "validate": ["plan"], "plan": ["publish", "whatif"], "whatif": ["approve"],
                     "approve": ["publish"], "publish": [], "missed_period": []}
    approve = gated.get_task("approve")
    assert isinstance(approve, ApprovalOperator)
    assert approve.options == ["Approve", "Reject"] and approve.defaults == ["Reject"]
    assert approve.response_timeout == timedelta(hours=2) and approve.retries == 0
    assert list(approve.params) == ["reason"]  # the form: only the reason, not the run's params
    assert not gated.get_task("whatif").is_teardown  # before the question, for the approver
    # a job without approval keeps its shape: publish, then the what-if teardown
    assert {t.task_id: sorted(t.downstream_task_ids) for t in alpha.tasks}["publish"] == ["whatif"]
    assert "approve" not in alpha.task_ids
    # turning approval on for a job with history adds a task: none may wait on a previous run
    # that never had it (the cycle gate orders the cycles instead), in any DAG of ours
    assert [(d, t.task_id) for d, dag in bag.dags.items() for t in dag.tasks
            if t.depends_on_past or t.wait_for_downstream] == []
    probe = ("import runpy, sys\nrunpy.run_path(sys.argv[1])\n"
             "print(','.join(m for m in sys.modules if m.split('.')[0] in "
             "('jobs', 'mlflow', 'pyspark', 'pandas', 'numpy')))")
    done = subprocess.run([sys.executable, "-c", probe, str(DAG_FILE)],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""  # the approval step imports nothing heavy at parse time
