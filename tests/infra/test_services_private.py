"""What the local services expose: no Airflow log server on every interface, and the generated
admin password readable by its owner only (no services started: the specs and the files)."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from reconf.services import Ports, keep_private, log_dir, service_specs
from reconf.settings import airflow_env
from schemas.config import Paths


@pytest.mark.parametrize("name", ["scheduler", "triggerer"])
def test_the_airflow_parts_run_without_the_all_interfaces_log_server(
        tmp_path: Path, name: str) -> None:
    """Airflow 3.3's serve_logs binds 0.0.0.0 / [::] (ports 8793, 8794) and has no host
    setting; the parts that would start it are told not to, with a flag their CLI knows."""
    paths = Paths(tmp_path / "home")
    spec = service_specs(paths, Ports())[name]
    assert spec.argv[1:] == (name, "--skip-serve-logs")
    shown = subprocess.run([spec.argv[0], name, "--help"], env=airflow_env(paths),
                           capture_output=True, text=True, timeout=300, check=False)
    assert shown.returncode == 0 and "--skip-serve-logs" in shown.stdout, shown.stderr[-2000:]


def test_the_password_file_and_the_service_logs_are_private(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home")
    paths.airflow.mkdir(parents=True)
    log_dir(paths).mkdir(parents=True)
    password = paths.airflow / "simple_auth_manager_passwords.json.generated"
    password.write_text('{"admin": "s3cret"}')
    log = log_dir(paths) / "api-server.log"
    log.write_text("Simple auth manager | Password for user 'admin': s3cret\n")
    for path in (password, log):
        path.chmod(0o644)
    keep_private(paths)
    for path in (password, log):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    for directory in (paths.airflow, log_dir(paths)):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
