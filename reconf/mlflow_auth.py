"""Logging in to the MLflow server `make up` starts: MLflow's basic-auth app.

The server listens on 127.0.0.1, but every local user can reach a loopback port, and runs and
tags are what `reconf audit` reports and what publish checks a plan against. So the server runs
MLflow's basic-auth app (`mlflow server --app-name basic-auth`): every request but `/health`
and the static files needs a login. The stages do not go through the server (they write the
store at `RECONF_HOME/mlflow` directly, a directory only its owner writes), so the one account
is the admin's, with a password generated on first start, as Airflow's simple auth manager does
for its UI: `RECONF_HOME/mlflow/auth/admin-password`, 0600 in a 0700 directory, never printed.
Other users the admin creates get `default_permission = READ`. The app's own user store is
`RECONF_HOME/mlflow/auth/basic_auth.db`; its config (`basic_auth.ini`, 0600) is what
`MLFLOW_AUTH_CONFIG_PATH` names for the server process, and the app's CSRF protection signs
with a key generated once beside it (`flask-secret-key`, 0600; MLFLOW_FLASK_SERVER_SECRET_KEY).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from schemas.config import Paths

__all__ = ["ADMIN", "auth_config_path", "ensure_mlflow_auth", "mlflow_credentials",
           "password_path"]

ADMIN = "admin"


def _folder(paths: Paths) -> Path:
    return paths.mlflow / "auth"


def password_path(paths: Paths) -> Path:
    return _folder(paths) / "admin-password"


def auth_config_path(paths: Paths) -> Path:
    return _folder(paths) / "basic_auth.ini"


def _write_private(path: Path, text: str) -> None:
    """`text` to `path`, created 0600 (never through a link), replacing what was there."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, path)


def _kept_secret(path: Path) -> str:
    """The secret in `path`, made (0600) the first time."""
    if not path.is_file():
        _write_private(path, secrets.token_urlsafe(24) + "\n")
    return path.read_text(encoding="utf-8").strip()


def ensure_mlflow_auth(paths: Paths) -> dict[str, str]:
    """The basic-auth app's config, the admin password and the CSRF key (made on first start);
    the server's environment for them. The password is kept once made: the app reads it only to
    create the admin in an empty user store, so a new one would not match the stored account."""
    folder = _folder(paths)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    password = _kept_secret(password_path(paths))
    key = _kept_secret(folder / "flask-secret-key")
    _write_private(auth_config_path(paths), "\n".join((
        "[mlflow]",
        "default_permission = READ",
        f"database_uri = sqlite:///{folder / 'basic_auth.db'}",
        f"admin_username = {ADMIN}",
        f"admin_password = {password}",
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth",
        "")))
    return {"MLFLOW_AUTH_CONFIG_PATH": str(auth_config_path(paths)),
            "MLFLOW_FLASK_SERVER_SECRET_KEY": key}


def mlflow_credentials(paths: Paths) -> tuple[str, str]:
    """(user, password) of the server's admin; the password is empty before the first start."""
    secret = password_path(paths)
    return ADMIN, secret.read_text(encoding="utf-8").strip() if secret.is_file() else ""
