"""The quick soak, as CI runs it in `make test` (docs/benchmarks.md "soak"): 60 periods of the
synthetic job with the seeded fault schedule of every kind, through the real stages and the
runtime stand-in, and not one invariant violation. Its time is the benchmark's to report
(`reconf bench soak --quick` prints it against the 4-minute target), never asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.soak.report import QUICK

pytestmark = pytest.mark.soak


def test_the_quick_soak_injects_every_kind_of_fault_and_keeps_every_invariant(
        tmp_path: Path) -> None:
    from schemas.config import PROJECT_ROOT

    out = tmp_path / "soak-quick.json"
    done = subprocess.run(
        [sys.executable, "-m", "reconf.cli", "bench", "soak", "--quick", "--home",
         str(tmp_path / "home"), "--json", str(out)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    rows = json.loads(out.read_text())
    total = next(r for r in rows if r["kind"] == "summary")
    assert total["periods"] == QUICK["periods"] == 60
    assert total["violations"] == 0 and total["replay"] is None, done.stdout[-4000:]
    assert total["faults"] >= QUICK["faults"] and total["kinds"] >= QUICK["kinds"], total
    assert total["recoveries"] == total["faults"]  # every period with a fault ended clean
    verdicts = {r["target"]: r["verdict"] for r in rows if "target" in r}
    assert verdicts["invariant violations"] != "miss"
    assert "invariant violations         0" in done.stdout
