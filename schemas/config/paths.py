"""Where reconf keeps its data (DESIGN.md, "Contracts"): one home, `RECONF_HOME`, and the stores
under it; and the optional PostgreSQL server of the two metadata stores (`RECONF_DB_URI`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from schemas.errors import ConfigError

__all__ = ["PROJECT_ROOT", "Paths", "db_server_uri"]

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def db_server_uri() -> str | None:
    """`RECONF_DB_URI`: a PostgreSQL server (no database part) that holds both metadata stores.

    Unset or empty: SQLite files under RECONF_HOME. Set, e.g. to
    `postgresql+psycopg2://reconf:secret@127.0.0.1:5432`: Airflow uses database `airflow` and
    MLflow database `mlflow` on that server (create both first; docs/operations.md, "Services").
    """
    raw = os.environ.get("RECONF_DB_URI", "").strip().rstrip("/")
    if not raw:
        return None
    scheme, sep, rest = raw.partition("://")
    if not sep or scheme.split("+", 1)[0] != "postgresql" or not rest or "/" in rest:
        raise ConfigError(
            f"RECONF_DB_URI={raw!r}: expected a PostgreSQL server URI without a database, e.g. "
            "postgresql+psycopg2://user:password@127.0.0.1:5432 (the databases 'airflow' and "
            "'mlflow' are appended); unset it to use SQLite"
        )
    return raw


@dataclass(frozen=True)
class Paths:
    """The project's stores (DESIGN.md, "Contracts"); `RECONF_HOME` moves them all at once."""

    home: Path

    @classmethod
    def from_env(cls) -> Paths:
        return cls(Path(os.environ.get("RECONF_HOME", PROJECT_ROOT / ".reconf")).resolve())

    @property
    def lake(self) -> Path:
        return self.home / "lake"

    @property
    def landing(self) -> Path:
        return self.home / "landing"

    @property
    def published(self) -> Path:
        return self.home / "published"

    @property
    def mlflow(self) -> Path:
        return self.home / "mlflow"

    @property
    def airflow(self) -> Path:
        return self.home / "airflow"

    @property
    def runtime(self) -> Path:
        return self.home / "runtime"

    @property
    def reports(self) -> Path:
        return self.home / "reports"

    @property
    def jars(self) -> Path:
        """The Delta jars are an install artefact, shared by every RECONF_HOME (`RECONF_JARS`)."""
        return Path(os.environ.get("RECONF_JARS", PROJECT_ROOT / ".reconf" / "jars")).resolve()

    @property
    def mlflow_uri(self) -> str:
        """MLflow's backend store: SQLite under `mlflow/`, or database `mlflow` on RECONF_DB_URI."""
        server = db_server_uri()
        return f"{server}/mlflow" if server else f"sqlite:///{self.mlflow / 'mlflow.db'}"

    @property
    def airflow_db_uri(self) -> str:
        """Airflow's metadata DB: SQLite under `airflow/`, or database `airflow` on RECONF_DB_URI."""
        server = db_server_uri()
        return f"{server}/airflow" if server else f"sqlite:///{self.airflow / 'airflow.db'}"

    def table(self, name: str) -> str:
        return str(self.lake / name)
