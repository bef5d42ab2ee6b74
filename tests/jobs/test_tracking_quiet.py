"""Opening a fresh tracking store says nothing: MLflow's "Creating initial MLflow database
tables..." (INFO on stderr) was the first thing a new user's first `reconf plan` printed, and
the README's plan output has no such line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from schemas.config import PROJECT_ROOT


def test_a_new_store_is_opened_without_mlflows_info_lines(tmp_path: Path) -> None:
    code = ("from jobs.tracking.store import _client; from schemas.config import Paths; "
            "import sys; _client(Paths.from_env()).search_experiments(); "
            "print('opened', file=sys.stderr)")
    env = {**os.environ, "RECONF_HOME": str(tmp_path / "home"), "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "home" / "mlflow").is_dir()  # the store was created by this call
    assert done.stderr.strip().splitlines() == ["opened"], done.stderr
