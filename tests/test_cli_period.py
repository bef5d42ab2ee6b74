"""`reconf period show|lost`: the operator's view of each period's cycle, and giving one up."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from jobs.cycles import CycleState, read_outcome, record_outcome
from reconf.cli import main
from schemas.config import Paths

T = "2026-01-01T00:15:00Z"
END = datetime(2026, 1, 1, 0, 15, tzinfo=UTC)


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    monkeypatch.setenv("RECONF_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RECONF_CONFIG", raising=False)  # the shipped config: job `demo`
    return Paths.from_env()


def test_a_failed_period_given_up_is_recorded_lost_and_shown(
        paths: Paths, capsys: pytest.CaptureFixture[str]) -> None:
    record_outcome(paths, "demo", END, CycleState.FAILED, "keygroup_stats FAILED 1 expectation",
                   run_id="scheduled__x", stage="validate")
    assert main(["period", "lost", "--job", "demo", "--period-end", T, "--reason",
                 "runtime lost its metrics"]) == 0
    out = capsys.readouterr().out
    assert f"period {T} of job demo recorded as lost (was failed)" in out
    outcome = read_outcome(paths, "demo", END)
    assert outcome is not None and outcome.state is CycleState.LOST
    assert outcome.detail.endswith("runtime lost its metrics") and "given up by" in outcome.detail
    assert main(["period", "show", "--job", "demo"]) == 0
    shown = capsys.readouterr().out
    assert f"{T}  lost" in shown and "runtime lost its metrics" in shown


def test_a_published_period_cannot_be_given_up(paths: Paths,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    record_outcome(paths, "demo", END, CycleState.PUBLISHED, "v4 (published)")
    assert main(["period", "lost", "--job", "demo", "--period-end", T, "--reason", "x"]) == 2
    err = capsys.readouterr().err
    assert "was published (v4 (published)): it is not lost" in err and "reconf rollback" in err
    assert read_outcome(paths, "demo", END).state is CycleState.PUBLISHED  # type: ignore[union-attr]


@pytest.mark.parametrize(("argv", "said"), [
    (["--period-end", "2026-01-01T00:16:00Z", "--reason", "x"], "not on the job's period grid"),
    (["--period-end", "2099-01-01T00:15:00Z", "--reason", "x"], "is in the future"),
    (["--period-end", T, "--reason", "  "], "--reason is empty"),
])
def test_bad_input_is_refused_and_nothing_is_recorded(
        paths: Paths, capsys: pytest.CaptureFixture[str], argv: list[str], said: str) -> None:
    assert main(["period", "lost", "--job", "demo", *argv]) == 2
    err = capsys.readouterr().err
    assert said in err and "fix:" in err and "Traceback" not in err
    assert not list((paths.reports / "demo").glob("*/cycle.json"))


def test_show_without_history_and_for_an_unknown_job(paths: Paths,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["period", "show", "--job", "demo"]) == 0
    assert "no cycle has run yet" in capsys.readouterr().out
    assert main(["period", "show", "--job", "nope"]) == 2
    assert "unknown job id 'nope'" in capsys.readouterr().err
    assert main(["period", "show", "--job", "demo", "--last", "0"]) == 2
    assert "give a positive number" in capsys.readouterr().err
