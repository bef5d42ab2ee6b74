"""End to end, per family: each kind of job's demo, and its period read in the real MLflow UI.

The five kinds of job of config/jobs.toml — the MILP/ALBIC replay (`flights2`), Herding's query
platform (`queries`), Consistent Grouping (`flights2-cg`), ROD (`streams`) and SPRAWL
(`wan-demo`) — each run the `reconf demo` command docs/operations.md's "Five kinds of job"
prints (one period through the real Airflow DAG: land, collect, validate, plan, publish and the
what-if with every shadow the job allows, apply), one after another into one store (one Airflow
home, one MLflow database), served by one `mlflow server`, read by one browser. Per family the
demo's period line leads with the family's objective; the link `reconf audit` prints opens the
run in the classic view; the description's first line names the family's objective before →
after (with its bound when it has one); the what-if table has no per-node column and the
description is under MLflow's 8000 characters; a shadow's link opens its child run, whose
one-line description names it. The job's runs table opens, through the saved view, with the
objective's metrics as columns.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from e2e.test_mlflow_ui import _until, _wait_body, chromium, serve_mlflow
from jobs.tracking.audit_trail import NOTE_LIMIT
from jobs.tracking.ui_links import experiment_url, key_metric_columns, run_url
from schemas.config import PROJECT_ROOT, Paths, resolve_job
from schemas.headline import bound_of, fmt, headline, objective_for
from schemas.landing import format_period_end

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

#: each family's move reason (placement/reasons.py), and ROD's before its load model is fitted
REASONS = {"flights2": {"pair_collocated", "load_relieved"}, "queries": {"traffic_saved"},
           "flights2-cg": {"band_left"}, "streams": {"feasible_set_gained", "load_relieved"},
           "wan-demo": {"wan_cost_saved"}}
#: the five kinds of job (docs/operations.md, "Five kinds of job"), and two of the shadows
#: each job's what-if plans whose child-run links the browser follows
FAMILIES = {"flights2": ("greedy", "cg"), "queries": ("herding_offline", "cg"),
            "flights2-cg": ("greedy", "milp"), "streams": ("greedy", "cg"),
            "wan-demo": ("greedy", "cg")}


@dataclass(frozen=True)
class FamilyRun:
    job_id: str
    strategy: str
    experiment_id: str
    run_id: str
    metrics: dict[str, float]
    note: str
    comparison_columns: tuple[str, ...]
    moves: tuple[dict[str, str], ...]


@dataclass(frozen=True)
class DemoOut:
    """One `reconf demo` command of the docs as run: its argv, exit code, output and time."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    seconds: float


#: the store, each family's published period, each family's demo as run
Families = tuple[Paths, dict[str, FamilyRun], dict[str, DemoOut]]


def _run_demo(argv: list[str], home: Path) -> DemoOut:
    """`reconf demo ...` as a user types it in the repository (the venv's `reconf` script), with
    the stores under `home` and the project's config/jobs.toml."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW", "RECONF_", "PYTHONPATH"))}
    env.update({"RECONF_HOME": str(home), "PYTHONPATH": str(PROJECT_ROOT)})
    started = time.monotonic()
    done = subprocess.run([str(Path(sys.executable).with_name("reconf")), *argv], env=env,
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900)
    return DemoOut(tuple(argv), done.returncode, done.stdout + done.stderr,
                   time.monotonic() - started)


@pytest.fixture(scope="module")
def family_runs(tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[Families]:
    """The section's five `reconf demo` commands, run as printed (one period each through the
    real Airflow DAG, the what-if with every shadow), one after another into one store; then
    each family's published period as the run pages show it."""
    from jobs.tracking.store import find_runs, read_csv_artifact
    from jobs.whatif.stage import COMPARISON_ARTIFACT

    home = tmp_path_factory.mktemp("families") / "home"
    demos: dict[str, DemoOut] = {}
    for argv in _section_commands():
        if argv[0] == "demo":
            demos[argv[argv.index("--job") + 1]] = _run_demo(argv, home)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RECONF_HOME", str(home))
        mp.delenv("RECONF_CONFIG", raising=False)
        mp.delenv("RECONF_MLFLOW_URL", raising=False)
        paths = Paths.from_env()
        client = MlflowClient(tracking_uri=paths.mlflow_uri)
        out = {}
        for job_id, demo in demos.items():
            assert demo.returncode == 0, f"{job_id}:\n{demo.stdout[-3000:]}"  # whole, not cut
            job = resolve_job(job_id)
            found = client.get_experiment_by_name(job_id)
            assert found is not None, job_id
            experiment = found.experiment_id
            [run] = find_runs(client, experiment, job_id, format_period_end(
                job.start_date + job.spl), max_results=1)
            rows = read_csv_artifact(client, run.info.run_id, COMPARISON_ARTIFACT)
            moves = read_csv_artifact(client, run.info.run_id, "moves.csv")
            out[job_id] = FamilyRun(job_id, job.strategy, experiment, run.info.run_id,
                                    dict(run.data.metrics), run.data.tags["mlflow.note.content"],
                                    tuple(rows[0]) if rows else (), tuple(moves))
        yield paths, out, demos


@pytest.fixture(scope="module")
def mlflow_ui(family_runs: Families,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_mlflow(family_runs[0], tmp_path_factory.mktemp("mlflow-server")) as base:
        yield base


@pytest.fixture(scope="module")
def module_browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("chromium")) as driver:
        yield driver


def _plain(markdown: str) -> str:
    """A line of the description as the UI renders it (no bold markers)."""
    return markdown.replace("**", "")


@pytest.mark.parametrize("job_id", list(FAMILIES))
def test_each_familys_run_page_leads_with_its_objective(
        job_id: str, family_runs: Families, mlflow_ui: str,
        module_browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    run = family_runs[1][job_id]
    objective = objective_for(run.strategy)
    first = run.note.splitlines()[0]
    expected = headline(run.strategy, run.metrics, arrow="→")
    assert first.startswith(f"**{expected}**"), (first, expected)
    assert first.startswith(f"**{objective.label} ") and " → " in first
    if bound_of(objective, run.metrics) is not None:  # the number that certifies it
        assert f"bound {fmt(bound_of(objective, run.metrics))})" in first
    # the what-if table: the objectives only, no per-node column; the description fits
    assert len(run.note) <= NOTE_LIMIT
    assert run.comparison_columns and not [c for c in run.comparison_columns if "/" in c]
    assert "utilisation_pct/" not in run.note and "vws/" not in run.note

    print(f"FAMILY {job_id}: {first} | {len(run.moves)} move(s); first reason: "
          f"{run.moves[0]['reason'] if run.moves else '-'}")
    # each move's reason is the family's own, with its number (moves.csv, as `reconf audit`)
    for move in run.moves:
        assert move["reason_codes"].split(";")[-1] in REASONS[job_id], move
        assert move["gain"] != "" or move["reason_codes"].endswith("load_relieved"), move

    browser = module_browser
    browser.get(run_url(mlflow_ui, run.experiment_id, run.run_id))  # as `reconf audit` prints
    body = _wait_body(browser, "Description", _plain(expected))
    assert "workflowType=machine_learning" in browser.current_url
    assert f"/runs/{run.run_id}" in browser.current_url
    assert "Parameters" in body and "Metrics" in body  # the classic run page
    toggle = _until(browser, ec.element_to_be_clickable(
        (By.CSS_SELECTOR, "button[data-testid='show-comment-toggle']")), "description toggle")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", toggle)
    toggle.click()
    _wait_body(browser, "What-if: other strategies on the same state")
    table = browser.find_element(By.XPATH, (  # the description's what-if table
        "//*[normalize-space(text())='What-if: other strategies on the same state']"
        "/following::table[1]")).text
    assert table.splitlines()[0].startswith("strategy status rank"), table[:300]
    # per-node metrics are the run's metrics (a chart section), never the table's columns
    assert "utilisation_pct/" not in table and "vws/" not in table

    # each shadow's name links to its child run; the link opens it, its one-line description
    links = _until(browser, lambda d: d.find_elements(
        By.CSS_SELECTOR, "a[href*='#/runs/']") or False, "links to the child runs")
    targets = {a.text: a.get_attribute("href") for a in links if a.text in FAMILIES[job_id]}
    assert targets, [a.text for a in links]
    for shadow, href in sorted(targets.items()):
        child = re.search(r"#/runs/([0-9a-f]+)", href)
        assert child is not None, href
        browser.get(href)
        child_body = _wait_body(browser, f"What-if {shadow} for {job_id}")
        assert f"a dry run on the state {run.strategy} (in force) planned" in child_body
        assert child.group(1) in browser.current_url


def test_the_runs_table_shows_the_objectives_columns(
        family_runs: Families, mlflow_ui: str,
        module_browser: Any) -> None:
    """The saved view (jobs/tracking/ui_links.py) puts SPRAWL's cost before and after and its
    bound first among the runs table's columns."""
    run = family_runs[1]["wan-demo"]
    module_browser.get(experiment_url(mlflow_ui, run.experiment_id))
    wanted = [c.split("`")[1] for c in key_metric_columns("sprawl")[:3]]
    assert wanted == ["cost_total_before", "cost_total_after", "lower_bound"]
    _wait_body(module_browser, *wanted)


def _section_commands() -> list[list[str]]:
    """The commands of docs/operations.md's "Five kinds of job", each as argv."""
    text = (PROJECT_ROOT / "docs" / "operations.md").read_text()
    section = text[text.index("## Five kinds of job"):text.index("## Plan audit")]
    block = section[section.index("```bash\n") + 8:section.index("```\n", section.index("```bash"))]
    return [line.split()[1:] for line in block.splitlines() if line.startswith("reconf ")]


def test_the_five_kinds_of_job_section_runs_as_written(
        family_runs: Families, capsys: pytest.CaptureFixture[str]) -> None:
    """Every command of the section, as printed: each demo (run by the fixture, through the real
    Airflow DAG) ends its period with the line that leads with the family's objective before ->
    after (and its bound where the strategy has one), the objective its table row names; each
    audit and compare runs on the family's period and leads with its objective."""
    from reconf.cli import main

    commands = _section_commands()
    assert sorted({argv[argv.index("--job") + 1] for argv in commands}) == sorted(FAMILIES)
    assert len(commands) == 3 * len(FAMILIES)
    section = (PROJECT_ROOT / "docs" / "operations.md").read_text().split(
        "## Five kinds of job")[1].split("## Plan audit")[0]
    for argv in commands:
        job_id = argv[argv.index("--job") + 1]
        run = family_runs[1][job_id]
        objective = objective_for(run.strategy)
        if argv[0] == "demo":
            demo = family_runs[2][job_id]
            print(f"DEMO {' '.join(argv)}: {demo.seconds:.0f} s")
            assert demo.argv == tuple(argv) and resolve_job(job_id).strategy == run.strategy
            row = next(line for line in section.splitlines() if line.startswith(f"| `{job_id}`"))
            assert f"`{run.strategy}`" in row and objective.label in row
            lines = [line for line in demo.stdout.splitlines() if line.startswith("  => v")]
            assert len(lines) == 1, demo.stdout[-3000:]  # one period, published as v1
            summary = lines[0].split("  migrations ")[0]
            assert summary.split(None, 2)[2] == headline(run.strategy, run.metrics), summary
            assert f" {objective.label} " in f" {summary}" and " -> " in summary
            if bound_of(objective, run.metrics) is not None:
                assert f"bound {fmt(bound_of(objective, run.metrics))})" in summary
            continue
        capsys.readouterr()
        assert main(argv) == 0, argv
        out = capsys.readouterr().out
        if argv[0] == "audit":
            assert f"  objective: {headline(run.strategy, run.metrics)} [" in out, out[:2000]
            assert "?workflowType=machine_learning" in out
        else:
            assert objective.label in out and "1 period(s)" in out, out[:2000]


def test_the_readme_names_the_runs_and_the_link_as_the_demo_makes_them(
        family_runs: Families) -> None:
    """README: "Experiment `flights2` has one run per period named by its period end
    (`2026-01-01 00:05` ...)" and the demo's link to the runs table (flights2's demo ran first
    into the store, so its experiment is 1, as in README's example)."""
    readme = (PROJECT_ROOT / "README.md").read_text()
    run = family_runs[1]["flights2"]
    name = MlflowClient(tracking_uri=family_runs[0].mlflow_uri).get_run(run.run_id).info.run_name
    assert name == "2026-01-01 00:05"
    assert f"named by its period end (`{name}`;" in readme
    link = ("http://127.0.0.1:5000/#/experiments/1/runs?viewStateShareKey=reconf-key-metrics"
            "&workflowType=machine_learning")
    assert f"`{link}`" in readme and run.experiment_id == "1"
    assert f"then browse {link} (experiment 'flights2'" in family_runs[2]["flights2"].stdout


def test_the_experiments_carry_no_per_node_metric_of_a_shadow(family_runs: Families) -> None:
    """A shadow's child run logs scalars only (a cg shadow's per-node metrics are rows of
    `whatif/per_node.csv`); and Herding's first period reads "before" as the running system
    (the queries the runtime ran), not 0."""
    client = MlflowClient(tracking_uri=family_runs[0].mlflow_uri)
    for job_id, run in family_runs[1].items():
        children = client.search_runs([run.experiment_id], filter_string=(
            f"tags.`mlflow.parentRunId` = '{run.run_id}'"))
        assert children, job_id
        keys = {k for child in children for k in child.data.metrics}
        assert "load_distance_after" in keys and not [k for k in keys if "/" in k], job_id
    queries = family_runs[1]["queries"].metrics
    assert queries["stream_traffic_before"] > 0 and queries["load_distance_before"] > 0
