"""Airflow plugin: registers reconf's period-grid timetable (reconf/timetable.py).

Airflow 3 serialises a DAG's timetable by its import path and only accepts a custom class that a
plugin registers, in every process that parses or schedules the DAG (dag-processor, scheduler,
api-server, and CLIs such as `airflow backfill create` or `airflow dags test`). This folder is the
plugins folder `reconf.settings.airflow_env` sets (`AIRFLOW__CORE__PLUGINS_FOLDER`).
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from reconf.timetable import PeriodGridTimetable


class ReconfPlugin(AirflowPlugin):
    name = "reconf"
    timetables = [PeriodGridTimetable]  # noqa: RUF012 (AirflowPlugin declares it so)
