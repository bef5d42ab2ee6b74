"""The MLflow server `make up` starts answers only those who log in: MLflow's basic-auth app, its
admin password generated on first start and kept 0600 beside the store (as Airflow's is), so
another local user can neither write runs and tags (which `reconf audit` and publish read) nor
read them. A real server, started and stopped through the same code as `make up`."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from reconf.mlflow_auth import mlflow_credentials
from runtime.procs import free_port
from schemas.config import PROJECT_ROOT, Paths

pytestmark = pytest.mark.e2e


def _services(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECONF_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "reconf.services", *args], env=env,
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
                          check=False)


def _call(url: str, body: dict[str, object] | None, auth: tuple[str, str] | None) -> int:
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                     method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json"})
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_the_mlflow_server_takes_no_write_and_no_read_without_its_credentials(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = free_port()
    up = _services(home, "up", "--only", "mlflow", "--mlflow-port", str(port), "--timeout", "300")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        base = f"http://127.0.0.1:{port}"
        create = f"{base}/api/2.0/mlflow/experiments/create"
        search = f"{base}/api/2.0/mlflow/experiments/search?max_results=5"
        assert _call(create, {"name": "intruder"}, None) == 401
        assert _call(search, None, None) == 401
        assert _call(create, {"name": "intruder"}, ("admin", "password1234")) == 401
        user, password = mlflow_credentials(Paths(home))
        secret = Paths(home).mlflow / "auth" / "admin-password"
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
        assert password and password in secret.read_text()
        assert _call(create, {"name": "by-the-admin"}, (user, password)) == 200
        assert _call(search, None, (user, password)) == 200
        assert _call(f"{base}/health", None, None) == 200  # `make status` still probes it
        assert f"login: {user}" in up.stdout and password not in up.stdout
    finally:
        down = _services(home, "down", "--grace", "20")
        assert down.returncode == 0, down.stdout + down.stderr
