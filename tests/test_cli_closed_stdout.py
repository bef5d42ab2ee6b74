"""A closed stdout (`reconf audit … | head -1`) ends every command quietly with exit 141, as a
standard tool killed by SIGPIPE does (docs/operations.md, "Bad input"): no "unexpected error",
no traceback file, nothing on stderr.

Once `reconf audit … | head -1` exited 1 with "unexpected error: BrokenPipeError" and left a
traceback under RECONF_HOME/logs.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import reconf.audit
from reconf.cli import main

ROOT = Path(__file__).resolve().parents[1]


class _ClosedPipe(io.TextIOBase):
    """A stdout whose reader has gone: every write and flush is EPIPE."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "jobs.toml"
    config.write_text('[jobs.a]\nstrategy = "milp"\n[jobs.b]\nstrategy = "greedy"\n')
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RECONF_DEBUG", raising=False)
    return tmp_path / "home"


def _no_traceback(home: Path) -> None:
    logs = home / "logs"
    assert not logs.exists() or not list(logs.glob("reconf-*-error-*.log"))


def test_audit_into_a_closed_pipe_ends_quietly_with_141(
        home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The audit's report written to a reader that has gone (its stores stubbed: the report is
    what it prints, many lines)."""
    monkeypatch.setattr(reconf.audit, "audit", lambda *a, **k: {"lines": 5000})
    monkeypatch.setattr(reconf.audit, "format_report",
                        lambda report: "\n".join(f"line {i}" for i in range(report["lines"])))
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    code = main(["audit", "--job", "a", "--period-end", "2026-01-01T00:05:00Z"])
    assert code == 141
    assert capsys.readouterr().err == ""
    _no_traceback(home)


@pytest.mark.parametrize("argv", [["jobs"], ["audit", "--job", "a", "--period-end",
                                            "2026-01-01T00:05:00Z", "--json"]])
def test_a_real_closed_pipe_exits_141_with_nothing_on_stderr(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    """Through a real pipe whose read end is closed before the command writes (as `| head -1`
    leaves it), including the interpreter's last flush at exit."""
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "sitecustomize.py").write_text(
        "import reconf.audit as a\n"
        "a.audit = lambda *x, **k: {'moves': list(range(3000))}\n")
    read, write = os.pipe()
    os.close(read)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(stub), str(ROOT)])}
    try:
        done = subprocess.run([sys.executable, "-m", "reconf.cli", *argv], stdout=write,
                              stderr=subprocess.PIPE, env=env, timeout=120, check=False)
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr.decode()
    assert done.stderr.decode() == ""
    _no_traceback(home)
