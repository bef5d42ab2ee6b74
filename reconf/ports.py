"""Where the local services listen: the ports `up` is given, and the ports of what runs.

`up` records each service's URL in its pid file (runtime/procs.py). `status` and `env` ask about
the services that run, so the port a running service recorded counts over the environment's
default: after `make up AIRFLOW_PORT=8081`, a plain `make status` probes :8081 and
`eval "$(python -m reconf.services env)"` points `airflow` at :8081, never at whatever else
answers on :8080 (another project's Airflow on a shared machine). An option given on the command
line still wins: the operator asked for that port.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from runtime.procs import PidRecord, alive
from schemas.config import ConfigError

__all__ = ["Ports", "mlflow_ui_url", "port_exports", "recorded_url", "running_ports"]


@dataclass(frozen=True)
class Ports:
    """Where the services listen (127.0.0.1 only)."""

    airflow: int = 8080
    mlflow: int = 5000
    spark_connect: int = 15002

    @classmethod
    def from_env(cls) -> Ports:
        try:
            return cls(int(os.environ.get("RECONF_AIRFLOW_PORT", 8080)),
                       int(os.environ.get("RECONF_MLFLOW_PORT", 5000)),
                       int(os.environ.get("RECONF_SPARK_CONNECT_PORT", 15002)))
        except ValueError as exc:
            raise ConfigError("RECONF_AIRFLOW_PORT / RECONF_MLFLOW_PORT / RECONF_SPARK_CONNECT_PORT: "
                              f"not a port number ({exc})") from exc

    @property
    def spark_remote(self) -> str:
        return f"sc://127.0.0.1:{self.spark_connect}"


#: The service whose recorded URL carries each port.
_CARRIERS = {"airflow": "api-server", "mlflow": "mlflow", "spark_connect": "spark-connect"}


def running_ports(ports: Ports, running: Mapping[str, PidRecord],
                  given: frozenset[str] = frozenset()) -> Ports:
    """`ports` with each port a running service recorded in its URL, except those `given` on
    the command line (field names of `Ports`)."""
    found: dict[str, int] = {}
    for field, service in _CARRIERS.items():
        record = running.get(service)
        if field in given or record is None or not record.url:
            continue
        try:
            port = urlsplit(record.url).port
        except ValueError:  # a pid file from another release, or edited by hand
            continue
        if port is not None:
            found[field] = port
    return replace(ports, **found)


def port_exports(ports: Ports) -> dict[str, str]:
    """The ports as the environment names them: what the env line exports, so that a command
    the docs give after it (`${RECONF_AIRFLOW_PORT}` in the REST recipes, a later `make up` or
    `make status`) uses the ports the services run on, never the defaults."""
    return {"RECONF_AIRFLOW_PORT": str(ports.airflow), "RECONF_MLFLOW_PORT": str(ports.mlflow),
            "RECONF_SPARK_CONNECT_PORT": str(ports.spark_connect)}


def recorded_url(run_dir: Path, service: str) -> str | None:
    """The URL `<run_dir>/<service>.pid` records while that process runs, else None. Only
    reads: a stale or unreadable file is left for `make status` / `make up` to remove (and say
    so), since a link printer should not change what runs."""
    try:
        data = json.loads((run_dir / f"{service}.pid").read_text())
        record = PidRecord(**{**data, "argv": tuple(data["argv"])})
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return record.url if alive(record) else None


def mlflow_ui_url(home: Path) -> str:
    """Where an operator opens the MLflow UI, for every link reconf prints: `RECONF_MLFLOW_URL`
    (the env line sets it), else the MLflow server `make up` runs under `home` (its pid file),
    else `make mlflow-ui`'s address (`RECONF_MLFLOW_PORT`, default 5000)."""
    url = os.environ.get("RECONF_MLFLOW_URL") or recorded_url(home / "run", "mlflow")
    return (url or f"http://127.0.0.1:{Ports.from_env().mlflow}").rstrip("/")
