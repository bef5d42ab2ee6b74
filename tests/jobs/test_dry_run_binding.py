"""A dry run is a binding preview, for every registered strategy, through the real stages.

For each name of the strategy table: on a lake where the period is landed, collected and
validated, `plan --dry-run` (its own MLflow run, no rows), then the real plan and publish of the
same, unchanged period; the published manifest is exactly the previewed assignment, the plan's
moves are the previewed moves, and both plans record the same "deterministic: …" line
(placement/determinism.py). Each strategy plans a job whose facets it needs: four small jobs
(utilisation and communication; streams with a load model; a WAN topology with measured links;
the query platform), landed once for the module; each test copies that lake. A strategy that
ignores the budget on purpose (COLA) is planned within a budget its plan fits, since publish
refuses a plan over the budget.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pipeline_kit import P1, P2, WAN_TOPOLOGY, use_home

from jobs.run import run_plan, run_publish
from schemas.config import Paths, resolve_job
from schemas.manifest import read_manifest
from schemas.strategies import STRATEGIES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

CONFIG = """\
[defaults]
spl = "5m"
max_migrations = 3
solver_time_limit_s = 10
alpha = 1e-6
start_date = 2026-01-01T00:00:00Z

[jobs.bind]
strategy = "milp"
source = { kind = "synthetic", operators = 2, keygroups_per_operator = 6, nodes = 4, seed = 7, varies = 90 }

[jobs.bind-streams]
strategy = "rod"
source = { kind = "synthetic", operators = 2, keygroups_per_operator = 3, nodes = 3, seed = 5, varies = 90, streams = 2 }

[jobs.bind-streams.load_model]
streams = ["in0", "in1"]
periods = 2

[jobs.bind-wan]
strategy = "sprawl"
source = { kind = "synthetic", operators = 2, keygroups_per_operator = 3, nodes = 3, seed = 7, varies = 30, links = { jitter = 0.02 } }
topology = "TOPOLOGY"

[jobs.bind-queries]
strategy = "herding_online"
units = "dynamic"
source = { kind = "queries", nodes = 3, hours_per_period = 6, lifetime_hours = 24, sample_every = 60 }
"""

#: the job (and the period it plans) of each facet a strategy may need
_JOB_OF_FACET = {"load_model": ("bind-streams", P2), "network": ("bind-wan", P1),
                 "sources": ("bind-queries", P1)}
#: every job's landed periods (the load model is fitted from two)
_PERIODS = {"bind": (P1,), "bind-streams": (P1, P2), "bind-wan": (P1,), "bind-queries": (P1,)}


#: strategies that rightly move nothing on these jobs' data: ROD's family keeps a placement
#: whose feasible-set ratio the ROD placement does not beat; Herding's period 1 is all
#: arrivals, placed (the manifest holds them) but not moves
KEEPS = frozenset({"rod", "llf", "connected_lb", "herding_exact", "herding_offline",
                   "herding_online"})


def job_of(strategy: str) -> tuple[str, datetime]:
    """The test job whose facets `strategy` needs, and the period it plans."""
    for facet in STRATEGIES[strategy].facets:
        if facet in _JOB_OF_FACET:
            return _JOB_OF_FACET[facet]
    return "bind", P1


@pytest.fixture(scope="module")
def binding_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("binding-config")
    (folder / "topology.toml").write_text(WAN_TOPOLOGY)
    path = folder / "jobs.toml"
    path.write_text(CONFIG.replace('"TOPOLOGY"', f'"{folder / "topology.toml"}"'))
    return path


@pytest.fixture(scope="module")
def binding_template(spark: SparkSession, empty_template: Path, binding_config: Path,
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One lake for the module: each job's periods landed by its runtime, collected, validated."""
    from jobs.collect.stage import collect
    from jobs.validate.stage import validate_period
    from reconf.settings import make_source

    home = tmp_path_factory.mktemp("binding-template") / "home"
    shutil.copytree(empty_template, home)
    paths = Paths(home)
    for job_id, periods in _PERIODS.items():
        job = resolve_job(job_id, binding_config)
        runtime = make_source(job, paths)
        for period_end in periods:
            runtime.land_period(paths.landing, period_end)
            collect(job, period_end, paths=paths, spark=spark)
            assert "passed" in validate_period(job, period_end, paths=paths, spark=spark).summary()
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_a_dry_run_then_a_publish_publishes_exactly_the_previewed_moves(
        strategy: str, binding_template: Path, binding_config: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, spark: SparkSession) -> None:
    paths = use_home(binding_template, tmp_path / "home", monkeypatch, binding_config)
    job_id, period_end = job_of(strategy)
    # a strategy that ignores the budget on purpose (COLA) is published only within one
    budget = None if STRATEGIES[strategy].keeps_budget else 100

    preview = run_plan(job_id, period_end, strategy=strategy, dry_run=True,
                       max_migrations=budget)
    planned = run_plan(job_id, period_end, strategy=strategy, max_migrations=budget)
    published = run_publish(job_id, period_end)

    assert preview.dry_run and not planned.dry_run and preview.plan_id != planned.plan_id
    assert planned.plan.strategy == strategy
    assert planned.plan.moves == preview.plan.moves, (preview.plan.moves, planned.plan.moves)
    assert (published.status, published.plan_id) == ("published", planned.plan_id)
    assert published.version is not None
    manifest = read_manifest(paths.published, job_id, published.version)
    assert dict(manifest.assignment) == dict(preview.plan.assignment)
    assert planned.plan.determinism == preview.plan.determinism
    assert planned.plan.determinism.startswith("deterministic: "), planned.plan.determinism
    # not vacuous: every strategy but those that keep this data's placement moves something
    assert preview.plan.moves or strategy in KEEPS, f"{strategy} moved nothing"
