"""dags/rollback.py: one manual rollback DAG per valid job, with a trigger form that says what to
enter, the job's assignment Asset, and bad input that fails the run at once (no retries)."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("AIRFLOW_HOME", str(Path(__file__).resolve().parents[1] / ".reconf" / "test-airflow"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

ROLLBACK_FILE = Path(__file__).resolve().parents[1] / "dags" / "rollback.py"
JOBS = """
[defaults]
spl = "10m"
[jobs.alpha]
source = { kind = "synthetic", nodes = 2, operators = 1, keygroups_per_operator = 4 }
[jobs.bad]
spl = "0m"
"""


@pytest.fixture()
def bag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # a DagBag (Airflow imports late)
    from airflow.dag_processing.dagbag import DagBag

    config = tmp_path / "jobs.toml"
    config.write_text(JOBS)
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    return DagBag(dag_folder=str(ROLLBACK_FILE))


def test_one_manual_rollback_dag_per_valid_job(bag) -> None:
    assert bag.import_errors == {}  # the bad job is reported by reconfigure_config_check.py
    assert list(bag.dag_ids) == ["rollback_alpha"]
    dag = bag.dags["rollback_alpha"]
    assert dag.timetable.can_be_scheduled is False  # schedule=None: only a manual trigger
    assert dag.max_active_runs == 1
    (task,) = dag.tasks
    assert task.task_id == "rollback" and task.retries == 0
    (asset,) = task.outlets  # the version it publishes reaches a deployer like publish's
    assert asset.uri == "reconf://alpha/assignment"


def test_the_trigger_form_requires_a_version_and_validates_it(bag) -> None:
    from airflow.sdk.exceptions import ParamValidationError

    dag = bag.dags["rollback_alpha"]
    schema = {name: dag.params.get_param(name).schema for name in dag.params}
    assert schema["to_version"]["type"] == "integer" and schema["to_version"]["minimum"] == 1
    assert all(dag.params.get_param(name).description for name in dag.params)

    def check(conf: dict[str, object]) -> dict[str, object]:
        params = copy.deepcopy(dag.params)
        params.update(conf)
        return dict(params.validate())

    assert check({"to_version": 1, "reason": "v3 overloads node-01"}) == {
        "to_version": 1, "reason": "v3 overloads node-01", "override_budget": None}
    assert check({"to_version": 2, "reason": "x", "override_budget": "incident 42"})[
        "override_budget"] == "incident 42"
    bads: list[dict[str, object]] = [{}, {"to_version": 0}, {"to_version": "one"},
                                     {"to_version": 1.5}, {"to_version": 1, "override_budget": 3}]
    for bad in bads:
        with pytest.raises(ParamValidationError):
            check(bad)


def test_bad_input_fails_the_task_at_once_with_the_clis_message(bag, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """The task's own refusal path (the scheduler's run of it: tests/e2e/test_scheduler.py)."""
    from airflow.sdk.exceptions import AirflowFailException

    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    task = bag.dags["rollback_alpha"].get_task("rollback")
    for params, message in (({"to_version": 1, "reason": " ", "override_budget": None},
                             "a rollback needs a reason"),
                            ({"to_version": 1, "reason": "x", "override_budget": ""},
                             "nothing has been published for this job")):
        with pytest.raises(AirflowFailException) as failed:
            task.python_callable(params=params)
        assert message in str(failed.value) and "fix:" in str(failed.value)
        assert "--reason" not in str(failed.value)  # a DAG run is fixed with its params
    assert ('fix:   say why in the param "reason" (the trigger\'s --conf \'{"to_version": 1, '
            '"reason": "<why>"}\'' in _refusal(task, {"to_version": 1, "reason": "",
                                                       "override_budget": None}))
    assert not (tmp_path / "home" / "published").exists()  # nothing written


def _refusal(task: Any, params: dict[str, object]) -> str:
    from airflow.sdk.exceptions import AirflowFailException

    with pytest.raises(AirflowFailException) as failed:
        task.python_callable(params=params)
    return str(failed.value)
