"""The Airflow UI's link from a plan or publish task to the period's MLflow run.

An operator extra link: when the task ends, Airflow calls `get_link` in the task's process and
stores the URL as an XCom (`_link_MlflowRunLink`); the UI shows it as the button "MLflow run" on
the task instance. The URL comes from the task's own return value (`mlflow_url`, built by the
task from `RECONF_MLFLOW_URL`, which `make up` points at its MLflow server), so the link needs
no MLflow call of its own.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink

__all__ = ["MlflowRunLink", "mlflow_run_url"]


def mlflow_run_url(run_id: str) -> str:
    """The run's page in the MLflow UI (`RECONF_MLFLOW_URL`, default http://127.0.0.1:5000), as
    `reconf audit` prints it; the experiment id is read from the project's tracking store."""
    from mlflow import MlflowClient

    from reconf.audit import mlflow_ui_base
    from schemas.config import Paths

    experiment_id = MlflowClient(tracking_uri=Paths.from_env().mlflow_uri).get_run(
        run_id).info.experiment_id
    return f"{mlflow_ui_base()}/#/experiments/{experiment_id}/runs/{run_id}"


class MlflowRunLink(BaseOperatorLink):
    """`mlflow_url` of the task's return value, or "" (no link) when it returned none."""

    name = "MLflow run"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        from airflow.sdk.bases.xcom import BaseXCom

        value = BaseXCom.get_value(ti_key=ti_key, key="return_value")
        return str(value.get("mlflow_url") or "") if isinstance(value, dict) else ""
