"""The live runtime through the real scheduler: nothing lands periods but `reconf runtime run`.

Its own Airflow (api-server, scheduler, dag-processor, triggerer; SQLite; free ports:
scheduler_kit.started_airflow) and one synthetic job, `live`, SPL 30 s on a grid that starts at
the 30 s boundary after the fixture's clock. The runtime (a subprocess, as an operator starts
it) starts first, so it lands every period from the first one at its end while Airflow comes
up; the job's DAG is then unpaused and its scheduled runs (catch-up wide enough that no period
is skipped when cycles lag behind the 30 s periods on two busy cores) publish on their own: v1,
v2, v3 from periods 1, 2, 3, in order, each applied by the runtime as soon as it appears.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from schemas.config import PROJECT_ROOT
from schemas.landing import format_period_end
from schemas.manifest import read_manifest

from .scheduler_kit import Airflow, Runtime, _stamp, started_airflow

pytestmark = [pytest.mark.e2e]

JOB, DAG_ID, SPL = "live", "reconfigure_live", timedelta(seconds=30)
CONFIG = """\
[defaults]
strategy = "milp"
max_migrations = 3
solver_time_limit_s = 2
shadow_strategies = []
shadow_time_budget_s = 0

[jobs.live]
spl = "30s"
start_date = {start}
catchup_periods = 50
landing_timeout = "60s"
source = {{ kind = "synthetic", operators = 2, keygroups_per_operator = 4, nodes = 3, seed = 7, varies = 30 }}
"""


@dataclass(frozen=True)
class Live:
    """The module's Airflow, the runtime process, its output file and the grid's start."""

    airflow: Airflow
    runtime: subprocess.Popen[bytes]
    output: Path
    start: datetime

    def period(self, k: int) -> datetime:
        return self.start + k * SPL

    def lines(self) -> list[str]:
        return self.output.read_text(errors="replace").splitlines()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("live")
    now = datetime.now(UTC).replace(microsecond=0)
    # the next 30 s boundary: period 1 ends 30 to 60 s from now, after the runtime is up
    start = now - timedelta(seconds=now.second % 30) + SPL
    config = CONFIG.format(start=_stamp(start))
    (root / "jobs.toml").write_text(config)
    # the home and config started_airflow gives its shell (it writes the same jobs.toml)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RECONF_SPARK"))}
    env.update({"RECONF_HOME": str(root / "home"), "RECONF_CONFIG": str(root / "jobs.toml")})
    output = root / "runtime.log"
    with output.open("wb") as out:
        runtime = subprocess.Popen([sys.executable, "-u", "-m", "reconf.cli", "runtime", "run",
                                    "--job", JOB], cwd=PROJECT_ROOT, env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
    try:
        with started_airflow(root, config) as (paths, shell):
            assert paths.home == root / "home"
            # the tick runtime thread is never started: the live runtime lands the periods
            handle = Airflow(paths, shell, Runtime(paths, start), start)
            handle.wait_for_dags([DAG_ID])
            yield Live(handle, runtime, output, start)
    finally:
        if runtime.poll() is None:
            runtime.kill()
            runtime.wait()


def _landed_at(live: Live) -> dict[str, datetime]:
    """Period end -> the time the runtime's line says it landed it."""
    found = {}
    for line in live.lines():
        stamp, _, rest = line.partition(" ")
        if rest.startswith(f"{JOB}: landed period "):
            end = rest.split("landed period ", 1)[1].split()[0]
            found[end] = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return found


def test_the_live_runtime_lands_on_time_and_scheduled_runs_publish_in_order(live: Live) -> None:
    airflow = live.airflow
    assert live.runtime.poll() is None, "\n".join(live.lines())
    airflow.shell(f"airflow dags unpause {DAG_ID}")
    for k in (1, 2, 3):
        run = airflow.wait_for_run(DAG_ID, live.period(k), ("success", "failed"))
        assert run[2] == "success", airflow.log_tails(DAG_ID, run[3])
        assert run[1] == "scheduled"
    for version, k in ((1, 1), (2, 2), (3, 3)):  # each version from its own period, in order
        assert read_manifest(airflow.paths.published, JOB, version).period_end == \
            format_period_end(live.period(k))
    deadline = time.monotonic() + 120
    while not any("applied v3 (plan" in ln for ln in live.lines()):
        assert time.monotonic() < deadline, "\n".join(live.lines()[-30:])
        time.sleep(1)
    live.runtime.send_signal(signal.SIGTERM)
    assert live.runtime.wait(timeout=60) == 0
    lines = live.lines()
    for version in (1, 2, 3):  # the runtime applied every version as it appeared
        assert any(f"applied v{version} (plan" in ln for ln in lines), \
            "\n".join(lines)
    landed = _landed_at(live)
    for k in (1, 2, 3):  # in real time: at the period's end, not when a run asked
        at = landed[format_period_end(live.period(k))]
        assert timedelta(0) <= at - live.period(k) <= timedelta(seconds=10), (k, at)
    ends = sorted(landed)
    assert ends[:3] == [format_period_end(live.period(k)) for k in (1, 2, 3)]
    assert len(ends) == len(set(ends)) and "none half-landed" in lines[-2]
