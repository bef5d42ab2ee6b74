"""`jobs.lake.base.concurrently`: the stages' independent queries run at once, results in call order."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from bench.cycle import print_table
from jobs.lake.base import concurrently
from schemas.config import Paths, resolve_job


def test_calls_overlap_and_results_keep_the_call_order() -> None:
    meet = threading.Barrier(3, timeout=10)  # passes only if all three calls run at the same time

    def call(value: int) -> int:
        meet.wait()
        return value

    assert concurrently(lambda: call(1), lambda: call(2), lambda: call(3)) == [1, 2, 3]


def test_the_first_failing_call_in_call_order_raises() -> None:
    def fail(message: str) -> None:
        raise ValueError(message)

    with pytest.raises(ValueError, match="first"):
        concurrently(lambda: 1, lambda: fail("first"), lambda: fail("second"))
    assert concurrently() == [] and concurrently(lambda: "one") == ["one"]


def test_the_cycle_table_gives_the_ratio_to_the_old_path_and_the_verdict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    layers = dict.fromkeys(("proc_start", "import", "spark", "read", "delta", "ge", "solver",
                            "mlflow", "other"), 0.0)
    step = {"land": 0.1, "collect": 1.0, "validate": 1.0, "plan": 1.0, "publish": 1.0,
            "apply": 0.0, "load": 2.0, "layers": layers, "jobs_at_once": 1}
    rows = [{**step, "mode": "process+jvm", "job": "demo", "total": 40.0},
            {**step, "mode": "worker+connect", "job": "demo", "total": 8.0},
            {**step, "mode": "worker+connect", "job": "kg1000", "total": 30.0},
            {**step, "mode": "worker+connect", "job": "t32k", "total": 28.0},
            {**step, "mode": "worker+connect", "job": "demo", "jobs_at_once": 4, "total": 20.0,
             "per_job_total": 12.0, "cycles_per_min": 12.0}]
    print_table(rows)
    out = capsys.readouterr().out
    first_table = out.split("\nlayers")[0].splitlines()
    old = next(line for line in first_table if line.strip().startswith("process+jvm"))
    new = next(line for line in first_table if line.split()[:2] == ["worker+connect", "demo"])
    assert old.endswith("miss (<= 10 s)") and "-" in old.split()
    assert new.endswith("5.0x  beat (<= 10 s)")
    # each job against its own limit: a target's, none for a growth job
    growth = next(line for line in first_table if " kg1000 " in line)
    target = next(line for line in first_table if " t32k " in line)
    assert growth.split()[-1] == "-" and target.endswith("match (<= 30 s)")
    assert "   4 " in out and "12.0" in out  # the jobs-at-once row: 4 jobs, 12 cycles per minute


def test_every_job_of_the_full_cycle_bench_is_a_valid_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The growth jobs up to 10^5 key groups and 16 demo jobs stay within the synthetic
    source's limits (≤ 1000 key groups per operator, ≤ 1000 nodes)."""
    from bench.cycle import FLEET_FULL, SIZES_FULL, _config
    from reconf.settings import make_source
    from runtime.synthetic import SyntheticJob

    config = tmp_path / "jobs.toml"
    config.write_text(_config(SIZES_FULL, max(FLEET_FULL)))
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    for n in SIZES_FULL:
        source = make_source(resolve_job(f"kg{n}"), Paths(tmp_path))
        assert isinstance(source, SyntheticJob)
        assert source.spec.operators * source.spec.keygroups_per_operator == n
    assert resolve_job(f"demo{max(FLEET_FULL)}").job_id == f"demo{max(FLEET_FULL)}"
