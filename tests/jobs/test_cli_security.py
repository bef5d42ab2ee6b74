"""What `reconf` leaves for others to read: internal-error tracebacks go to a private file under
RECONF_HOME (never a fixed name in the shared /tmp, never through a planted link), and a bad
topology file is named, never printed."""

from __future__ import annotations

import stat
import tempfile
import uuid
from pathlib import Path

import pytest

from reconf.cli.errors import internal_error as _internal_error


def test_an_internal_error_traceback_is_private_under_reconf_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("RECONF_HOME", str(home))
    command = f"probe-{uuid.uuid4().hex[:8]}"
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    planted = Path(tempfile.gettempdir()) / f"reconf-{command}-error.log"
    planted.symlink_to(victim)  # what another local user could plant in the shared /tmp
    try:
        try:
            raise RuntimeError("secret=hunter2 in a traceback")
        except RuntimeError as exc:
            assert _internal_error(command, exc) == 1
    finally:
        planted.unlink()
    err = capsys.readouterr().err
    assert victim.read_text() == "precious\n"  # the link was not written through
    logs = sorted((home / "logs").glob(f"reconf-{command}-error-*.log"))
    assert len(logs) == 1 and f"the full traceback is in {logs[0]}" in err
    assert "Traceback" in logs[0].read_text() and "hunter2" in logs[0].read_text()
    assert stat.S_IMODE(logs[0].stat().st_mode) == 0o600
    assert stat.S_IMODE((home / "logs").stat().st_mode) & 0o077 == 0
    assert "where: reconf" in err and "fix:" in err
