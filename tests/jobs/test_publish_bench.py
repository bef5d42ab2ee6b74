"""`reconf bench publish --quick` (bench/publish.py): both ways of publishing and the apply check
run in their own processes, and write manifests of the same size for the same plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bench.publish as publish_bench
from reconf.cli import main


def test_reconf_bench_publish_quick_times_both_variants_and_apply(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(publish_bench, "SIZES_QUICK", (500,))  # the suite's share: one small size
    out = tmp_path / "publish.json"
    assert main(["bench", "publish", "--quick", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [(r["units"], r["variant"]) for r in rows] == [(500, "whole"), (500, "streamed")]
    assert rows[0]["manifest_mb"] == rows[1]["manifest_mb"] > 0  # the same bytes but created_at
    for row in rows:
        for step in ("publish", "apply"):
            assert row[f"{step}_wall_s"] > 0 and row[f"{step}_cpu_s"] >= 0
            assert row[f"{step}_peak_mib"] >= row[f"{step}_added_mib"]
    assert "publish s" in capsys.readouterr().out


def test_the_synthetic_plan_is_one_publish_accepts() -> None:
    """The plan text is what jobs/plan/record.py records: its checksum and schedule hold."""
    from schemas.manifest import Schedule, assignment_checksum

    plan = json.loads(publish_bench.plan_text(1_000))
    assert plan["checksum"] == assignment_checksum(plan["assignment"])
    schedule = Schedule.from_dict(plan["schedule"], "bench")
    schedule.verify(plan["checksum"], "bench")
    schedule.check_leads_to(plan["assignment"], "bench")
    assert schedule.moves == 10 and len(plan["assignment"]) == 1_000
