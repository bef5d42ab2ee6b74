"""The Airflow UI's link from a plan or publish task to the period's MLflow run.

An operator extra link: when the task ends, Airflow calls `get_link` in the task's process and
stores the URL as an XCom (`_link_MlflowRunLink`); the UI shows it as the button "MLflow run" on
the task instance. The task leaves the URL on its operator object (`remember_url`; built from
`RECONF_MLFLOW_URL`, which `make up` points at its MLflow server), which is the object `get_link`
receives in that process: no XCom read, so a skipped task (a dry run's publish) has no link and
logs no "XCom not found" error.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink

__all__ = ["MlflowRunLink", "mlflow_run_url", "remember_url"]

_ATTRIBUTE = "_reconf_mlflow_url"


def mlflow_run_url(run_id: str) -> str:
    """The run's page in the MLflow UI's classic view (`RECONF_MLFLOW_URL`, default
    http://127.0.0.1:5000), as `reconf audit` prints it; the experiment id is read from the
    project's tracking store."""
    from mlflow import MlflowClient

    from jobs.tracking.ui_links import run_url
    from reconf.audit import mlflow_ui_base
    from schemas.config import Paths

    experiment_id = MlflowClient(tracking_uri=Paths.from_env().mlflow_uri).get_run(
        run_id).info.experiment_id
    return run_url(mlflow_ui_base(), experiment_id, run_id)


def remember_url(context: Any, url: str | None) -> None:
    """Leave the run's URL on the running task's operator, for `MlflowRunLink.get_link`."""
    if url:
        setattr(context["task"], _ATTRIBUTE, url)


class MlflowRunLink(BaseOperatorLink):
    """The URL the task remembered (`remember_url`), or "" (no link) when it left none."""

    name = "MLflow run"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return str(getattr(operator, _ATTRIBUTE, "") or "")
