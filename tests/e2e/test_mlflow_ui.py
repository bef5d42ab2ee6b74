"""End to end: the plan audit in the real MLflow UI, in Debian's headless Chromium.

Two real cycles (Spark, Delta, GE, MLflow) of the tiny job, the second followed by its what-if
(shadow strategies on the same state), then `mlflow server` on their store; selenium drives
chromium from the experiments page to the run of the second period by its name (the period),
checks the run page shows the plan (its summary line first, the description, Delta version tags)
and the what-if comparison, and that the artifacts view lists moves.csv and previews the moved
key groups, and saves screenshots (the test's tmp dir, and `.reconf/reports/mlflow-ui-run.png` /
`mlflow-ui-whatif.png` / `mlflow-ui-moves.png` for humans).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient
from pipeline_kit import JOB_ID, P1, P2, of_period, rows, stamp

from jobs.plan.stage import plan_period
from jobs.publish.stage import publish_period
from jobs.tracking.store import run_name
from jobs.validate.stage import validate_period
from jobs.whatif.stage import read_comparison, run_whatif
from placement.reasons import REASON_CODES
from schemas.config import PROJECT_ROOT, Paths
from schemas.tables import PLAN_MOVES, PLANS

pytestmark = [pytest.mark.browser, pytest.mark.spark]

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WAIT_S = 90  # how long to wait for the SPA to render an element (a readiness limit, not a check)
# Without these, the closed network refuses Chromium's background connections, many at a time.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--window-size=1600,1100")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, no proxy
    with opener.open(url, timeout=5) as response:
        return bytes(response.read())


@pytest.fixture
def cycles(collected_home: Paths, spark: Any, job: Any) -> Paths:
    for period_end in (P1, P2):
        validate_period(job, period_end, paths=collected_home, spark=spark)
        plan_period(job, period_end, paths=collected_home, spark=spark)
        publish_period(job, period_end, paths=collected_home, spark=spark)
    assert run_whatif(job, stamp(P2), paths=collected_home).status == "done"
    return collected_home


@contextmanager
def serve_mlflow(paths: Paths, tmp_path: Path) -> Iterator[str]:
    """`mlflow server` on the store at `paths`, on a free loopback port; stopped by its pid."""
    port = _free_port()
    log = (tmp_path / "mlflow-server.log").open("wb")
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "NO_PROXY": "127.0.0.1,localhost"}
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("mlflow")), "server",
         "--backend-store-uri", paths.mlflow_uri,
         "--artifacts-destination", str(paths.mlflow / "artifacts"),
         "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if _get(f"{base}/health").strip() == b"OK":
                    break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("mlflow server did not come up:\n"
                                     + (tmp_path / "mlflow-server.log").read_text()[-3000:])
            time.sleep(0.5)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the group this fixture started, by its pid
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


@pytest.fixture
def mlflow_server(cycles: Paths, tmp_path: Path) -> Iterator[str]:
    with serve_mlflow(cycles, tmp_path) as base:
        yield base


@contextmanager
def chromium(profile: Path) -> Iterator[Any]:
    """Debian's headless Chromium under chromedriver, quit at the end."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail("Debian's chromium and chromedriver are needed: "
                    "apt-get install -y chromium chromium-driver (.ci/run does this)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile / 'chromium-profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    with chromium(tmp_path) as driver:
        yield driver


def _until(driver: Any, condition: Any, what: str) -> Any:
    """Wait for the SPA; on a timeout, say what was awaited and what the page showed instead."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, WAIT_S).until(condition)
    except TimeoutException:
        body = driver.find_element(By.TAG_NAME, "body").text
        raise AssertionError(f"MLflow UI: no {what} after {WAIT_S} s at {driver.current_url}; "
                             f"the page showed:\n{body[:4000]}") from None


def _wait_text(driver: Any, text: str) -> Any:
    """The first clickable element whose own text is `text`."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    return _until(driver, ec.element_to_be_clickable(
        (By.XPATH, f"//*[normalize-space(text())='{text}']")), f"element {text!r}")


def _wait_body(driver: Any, *needles: str) -> str:
    """The page's visible text, once it contains every needle."""
    from selenium.webdriver.common.by import By

    def has_all(d: Any) -> str | bool:
        body = str(d.find_element(By.TAG_NAME, "body").text)
        return body if all(n in body for n in needles) else False

    return str(_until(driver, has_all, f"text {needles!r}"))


def _close_assistant(driver: Any) -> None:
    """Close the MLflow Assistant side panel, if this UI version shows one (for the picture)."""
    from selenium.webdriver.common.by import By

    for button in driver.find_elements(
            By.CSS_SELECTOR, "button[data-component-id='mlflow.assistant.chat_panel.close']"):
        if button.is_displayed():
            button.click()


def _screenshot(driver: Any, tmp_path: Path, name: str) -> Path:
    shot = tmp_path / name
    assert driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    reports = PROJECT_ROOT / ".reconf" / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, reports / name)
    return shot


def test_an_operator_finds_the_plan_of_a_period_in_the_mlflow_ui(
        mlflow_server, cycles, spark, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    plan = rows(spark, cycles, PLANS.name, of_period(P2)).iloc[0]
    moves = rows(spark, cycles, PLAN_MOVES.name, of_period(P2))
    assert len(moves) > 0, "the tiny job's second plan moves key groups"
    name = run_name(stamp(P2))
    whatif = read_comparison(MlflowClient(tracking_uri=cycles.mlflow_uri), plan["mlflow_run_id"])
    assert [r["strategy"] for r in whatif] == ["milp", "greedy", "albic"]

    # Experiments page -> the job's experiment -> its runs table -> the run of the period.
    browser.get(f"{mlflow_server}/#/experiments")
    _wait_text(browser, "Model training").click()  # the UI opens on its GenAI views
    _wait_text(browser, JOB_ID).click()
    _wait_body(browser, name, run_name(stamp(P1)))  # both periods' runs are listed
    _wait_text(browser, name).click()
    _wait_body(browser, "Description", "reconf.delta.plans.version",  # folded: the summary
               f"load distance {plan['load_distance_before']:.3f} → {plan['load_distance_after']:.3f}",
               f"{plan['migrations']} migration(s)", "published v2")
    assert f"/runs/{plan['mlflow_run_id']}" in browser.current_url
    _close_assistant(browser)
    expand = _until(browser, ec.element_to_be_clickable(
        (By.CSS_SELECTOR, "button[data-testid='show-comment-toggle']")), "description toggle")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", expand)
    expand.click()  # the description is folded after its first lines
    body = _wait_body(browser, "Show less", "Validation: passed")
    assert f"Plan of {JOB_ID} for the period ending {stamp(P2)}" in body
    assert "Strategy milp" in body
    assert (f"Load distance {plan['load_distance_before']:.3f} -> "
            f"{plan['load_distance_after']:.3f}") in body
    assert f"{plan['migrations']} migration(s)" in body
    assert "Published as assignment version 2" in body and "plans v" in body
    for move in moves.itertuples():  # the description's table of moves, with the reasons
        assert f"{move.keygroup} {move.src_node} {move.dst_node}" in body
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})",
                           _wait_text(browser, "Description"))
    _screenshot(browser, tmp_path, "mlflow-ui-run.png")
    # the what-if comparison, in the same description: each strategy with its status, its rank
    # by the in-force objective (planned rows) and LD
    heading = _wait_text(browser, "What-if: other strategies on the same state")
    for shadow in whatif:
        strategy = shadow["strategy"] + (" (in force)" if shadow["role"] == "in force" else "")
        rank = f"{float(shadow['rank']):.0f} " if shadow.get("rank") not in (None, "") else ""
        assert (f"{strategy} {shadow['status']} {rank}"
                f"{float(shadow['load_distance_after']):.3f}") in body
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", heading)
    _screenshot(browser, tmp_path, "mlflow-ui-whatif.png")

    # Artifacts view: moves.csv is listed; its preview names every move of plan_moves.
    _wait_text(browser, "Artifacts").click()
    _wait_body(browser, "moves.csv", "keygroups.csv", "node_loads.png", "validation.json")
    _wait_text(browser, "moves.csv").click()
    preview = _wait_body(browser, "Previewing", "src_node", "dst_node", *moves["keygroup"])
    lines = preview.splitlines()
    for move in moves.itertuples():  # each row of the preview: key group, from, to, why
        row = next(line for line in lines if line.startswith(f"{move.keygroup} "))
        assert row.split()[1:3] == [move.src_node, move.dst_node]
        assert set(row.split()[3].split(";")) <= set(REASON_CODES)
    _screenshot(browser, tmp_path, "mlflow-ui-moves.png")
