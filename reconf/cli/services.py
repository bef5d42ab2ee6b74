"""The local services as `reconf up|down|status` (reconf/services.py; `make up` runs the same)."""

from __future__ import annotations

from reconf import services
from reconf.cli.command import Command

__all__ = ["COMMANDS"]

COMMANDS = tuple(
    Command(action, text, services.run, services.add_arguments, description=text,
            epilog=services.EPILOG, defaults={"action": action})
    for action, text in (("up", "start the local Airflow services and MLflow server (make up)"),
                         ("down", "stop exactly the services `up` started, by pid (make down)"),
                         ("status", "which local services run and answer (make status)")))
