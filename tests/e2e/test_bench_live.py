"""`reconf bench live --quick` end to end: its own Airflow (every service, the settings `make up`
gives), the demo job on a 20 s grid, periods landed as they end, the cycles through the live
scheduler. Structure only, never timing (the machine is shared): every timed period published
in order, each row has its moments in the cycle's order, the target row judges p50 and max, and
the Airflow it started is gone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.live.report import STAGES
from runtime.procs import alive, read_record
from schemas.config import PROJECT_ROOT

pytestmark = [pytest.mark.e2e]

VERDICTS = {"match", "beat", "miss"}


def test_the_quick_live_bench_reports_every_period_and_the_target(tmp_path: Path) -> None:
    out = tmp_path / "live.json"
    done = subprocess.run(
        [sys.executable, "-m", "reconf.cli", "bench", "live", "--quick", "--periods", "2",
         "--spl", "20", "--home", str(tmp_path / "bench"), "--json", str(out)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    rows = json.loads(out.read_text())
    periods = [r for r in rows if r["kind"] == "period"]
    (target,) = [r for r in rows if r["kind"] == "target"]
    assert [r["task"] for r in rows if r["kind"] == "breakdown"] == ["wait_for_landing", *STAGES]
    assert [r["warmup"] for r in periods] == [True, False, False]
    timed = periods[1:]
    assert [r["version"] for r in timed] == sorted({r["version"] for r in timed})
    for row in timed:
        assert row["state"] == "success"
        moments = [row["landed_s"], row["noticed_s"]] + [
            row[f"{stage}_{key}_s"] for stage in STAGES for key in ("start", "end")]
        assert None not in moments and moments == sorted(moments), row
        assert row["publish_start_s"] <= row["published_s"] <= row["publish_end_s"], row
    assert (target["periods"], target["published"]) == (2, 2)
    assert target["verdict_p50"] in VERDICTS and target["verdict_max"] in VERDICTS
    assert target["p50_s"] <= target["max_s"]
    assert "target: period end -> published <= 15 s" in done.stdout
    home = tmp_path / "bench" / "home"
    assert json.loads((tmp_path / "bench" / "records.json").read_text())
    running = [p for p in (home / "run").glob("*.pid") if (r := read_record(p)) and alive(r)]
    assert not running, f"Airflow still runs: {running}"
