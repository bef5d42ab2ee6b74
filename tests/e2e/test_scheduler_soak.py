"""The soak's scheduled slice (bench/soak/scheduled.py) in the Airflow the test_scheduler* modules
share (tests/e2e/scheduler_kit.py SharedAirflow: its start-up is theirs): two periods of job
`soak-sched`, the first with the scheduler killed (-9) while a stage runs, the second with the
triggerer killed while the run waits, deferred, for its landing, each restarted by the docs' env
line and `reconf up --only <service>`; then the period after them.

What must hold (docs/operations.md, "How it is soaked"): both kills happened and both services
were started again (a second start in each one's log); each run ended success, or failed with
what/where/fix and no traceback; the next period's run succeeded and published; the soak's
invariant checker found nothing after any period.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.soak.schedule import draw_kill
from bench.soak.scheduled import AIRFLOW_ENV, DAG_ID, Stand, config_text, run_periods
from schemas.config import PROJECT_ROOT

from .scheduler_kit import SHARED, Airflow, Runtime, Share, SharedAirflow

pytestmark = [pytest.mark.e2e]

SHARED.register(Share(__name__, config_text, AIRFLOW_ENV))

KINDS = ("kill-scheduler", "kill-triggerer")
SEED = 24  # its two periods: the scheduler's kill during a stage, then the triggerer's


@pytest.fixture(scope="module")
def stand(shared_airflow: SharedAirflow, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[Airflow, Stand]]:
    paths, env, start = shared_airflow.acquire(__name__, tmp_path_factory.mktemp("airflow"))
    root = tmp_path_factory.mktemp("soak-scheduled")  # the slice's runs.jsonl and logs
    handle = Airflow(paths, env, Runtime(paths, start), start)  # no runtime thread: the slice lands
    handle.wait_for_dags([DAG_ID])
    handle.shell(f"airflow dags unpause {DAG_ID}")
    try:
        yield handle, Stand(root, paths, {**env, "PYTHONPATH": str(PROJECT_ROOT)})
    finally:  # the Airflow is shared: leave it idle
        handle.shell(f"airflow dags pause {DAG_ID}")


def test_a_killed_scheduler_and_triggerer_mid_run_end_clean_and_the_next_period_publishes(
        stand: tuple[Airflow, Stand]) -> None:
    airflow, slice_ = stand
    assert [k.kind for k in (draw_kill(SEED, p, KINDS) for p in (1, 2)) if k] == list(KINDS)
    rows = run_periods(slice_, 2, SEED, KINDS, echo=False)
    report = "\n".join(f"{r['period']} {r['end']} {r['run']} {r['faults']} {r['violations']}"
                       for r in rows)
    assert [f["kind"] for r in rows for f in r["faults"] if f["applied"]] == list(KINDS), report
    logs = Path(airflow.paths.home) / "logs" / "services"
    for service in ("scheduler", "triggerer"):  # killed and started again by `reconf up`
        assert (logs / f"{service}.log").read_text().count("\n==== ") >= 2, service
    assert all(r["run"] in ("success", "failed") for r in rows), report
    assert rows[1]["run"] == rows[2]["run"] == "success", report
    assert rows[1]["published"] and rows[2]["published"], report  # each kill's next period
    assert [v for r in rows for v in r["violations"]] == [], report


def test_an_airflow_that_does_not_start_ends_the_soak_with_one_message(tmp_path: Path) -> None:
    """`reconf bench soak --scheduled` whose Airflow cannot start (a task log level Airflow
    refuses, so its api-server exits at start-up): exit 2, what, where (that service's log)
    and fix, no traceback of the bench's own, nothing left running."""
    import subprocess
    import sys

    env = {**os.environ, "RECONF_TASK_LOG_LEVEL": "BOGUS", "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "reconf.cli", "bench", "soak", "--periods", "0", "--scheduled",
         "1", "--home", str(tmp_path)], env=env, cwd=PROJECT_ROOT, capture_output=True,
        text=True, timeout=600, check=False)
    err = done.stderr
    assert done.returncode == 2, done.stdout[-2000:] + err[-2000:]
    assert "reconf bench: error: bench soak --scheduled: Airflow did not start: make up: " \
        "api-server exited during start-up" in err, err[-2000:]
    assert f"  where: {tmp_path}/scheduled-1/home/logs/services/api-server.log" in err, err
    assert "  fix:   fix what the log names, then run the soak again" in err, err
    assert "logging_level` should not be 'BOGUS'" in err  # the log's last lines name the cause
    assert "unexpected error" not in err and not list(tmp_path.rglob("*-error-*.log"))
    assert not list((tmp_path / "scheduled-1" / "home" / "run").glob("*.pid"))
