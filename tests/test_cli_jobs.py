"""`reconf jobs` lists the configured jobs in an operator's words: an unset budget is "n/a"
(as `reconf audit` prints it), never Python's None."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconf.cli import main


def test_jobs_lists_every_job_with_an_unset_budget_as_n_a(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "jobs.toml"
    config.write_text('[jobs.a]\nstrategy = "milp"\nmax_migrations = 3\n'
                      '[jobs.b]\nstrategy = "greedy"\nmax_migration_cost = 12.5\n')
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    assert main(["jobs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["a", "b"]
    assert "max_migrations=3, max_migration_cost=n/a" in lines[0]
    assert "max_migration_cost=12.5" in lines[1]
    assert all("None" not in line for line in lines)


def test_jobs_checks_the_whole_file_and_says_where_fields_are_explained(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/operations.md, "What reconf guarantees": a job config error's fix names `reconf
    jobs`, which checks every job's fields (not only those of the job a stage resolves)."""
    config = tmp_path / "jobs.toml"
    config.write_text('[jobs.a]\nstrategy = "milp"\n[jobs.b]\nspl = "five"\n')
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    assert main(["jobs"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"reconf jobs: error: {config}: jobs.b.spl: ")
    assert f"\n  where: {config}\n" in err
    assert "\n  fix:   edit the job config" in err and "`reconf jobs` checks every job's fields" in err
