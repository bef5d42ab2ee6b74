"""What the scheduler's task processes import before they start: loaded once by its forkserver.

Every Airflow task is a process of its own, and a cycle is five of them (the landing wait,
collect, validate, plan, publish; the what-if after). Each stage imports its libraries when it
runs, so each cycle paid them again: Great Expectations about 4 s in validate, MLflow and its
SQL store 1–2 s in plan, publish and the what-if, pandas, pyarrow and delta-rs about 1 s in
collect, the DAG file's own imports in every task. `make up` starts the scheduler with
Airflow's `[scheduler] mp_start_method = forkserver` and `mp_forkserver_preload =
reconf.task_preload` (reconf/services.py `service_env`): the LocalExecutor's workers are forked
from a server that has imported this module once, and each task process is forked from a
worker, so it starts with all of it in memory, shared copy-on-write.

Only imports belong here: nothing that opens a file, a connection or a thread, since all of it
is inherited by every fork. A module that fails to import here is skipped, and the stage imports
it itself as before.
"""

from __future__ import annotations

import importlib
import logging

__all__ = ["MODULES"]

#: in this order: the libraries the stages use, heaviest first; then what a task process runs
#: before its stage (the task runner, the DAG bag it parses the DAG file with, about a second on
#: its own, the DAG file's operators and imports); then the stages' own modules
MODULES = (
    "great_expectations",  # validate
    "mlflow", "mlflow.tracking", "mlflow.store.tracking.sqlalchemy_store",  # plan, publish, what-if
    "matplotlib.pyplot",  # the plan's and the what-if's charts
    "pandas", "pyarrow.dataset", "pyarrow.parquet", "deltalake",  # every stage's lake
    "pulp", "highspy",  # plan
    "airflow.sdk", "airflow.sdk.execution_time.supervisor",
    "airflow.sdk.execution_time.task_runner", "airflow.dag_processing.bundles.manager",
    "airflow.dag_processing.dagbag", "airflow.providers.standard.decorators.python",
    "reconf.assets", "reconf.landing_wait", "reconf.mlflow_link", "reconf.timetable",
    "jobs.run", "jobs.collect.stage", "jobs.validate.stage", "jobs.plan.stage",
    "jobs.publish.stage", "jobs.whatif.stage", "jobs.tracking.store",
)


def _preload() -> None:
    # Great Expectations logs a line per API it documents while it imports (at INFO, about a
    # hundred of them): not in the scheduler's log.
    logging.getLogger("great_expectations._docs_decorators").setLevel(logging.WARNING)
    import matplotlib

    matplotlib.use("Agg")  # no display: the charts are files
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # the stage imports it itself, and says what is wrong
            continue


_preload()
