"""The MLflow UI's links and the job experiment's saved view (jobs/tracking/ui_links.py): the
links open the classic view, the saved view is the envelope MLflow 3.17's UI reads, with the
in-force strategy's objective as the first columns, written once per strategy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.tracking.ui_links import (
    VIEW_NAME,
    VIEW_TAG,
    experiment_url,
    key_metric_columns,
    key_metrics_view,
    run_url,
    view_needs_update,
)
from schemas.strategies import STRATEGIES


def test_links_open_the_classic_view() -> None:
    assert run_url("http://h:5000/", "3", "abc") == (
        "http://h:5000/#/experiments/3/runs/abc?workflowType=machine_learning")
    assert experiment_url("http://h:5000", "3") == (
        "http://h:5000/#/experiments/3/runs?viewStateShareKey=reconf-key-metrics"
        "&workflowType=machine_learning")


@pytest.mark.parametrize("strategy, first", [
    ("milp", ["load_distance_before", "load_distance_after", "lower_bound", "migrations"]),
    ("sprawl", ["cost_total_before", "cost_total_after", "lower_bound",
                "load_distance_after"]),
    ("herding_online", ["stream_traffic_before", "stream_traffic_after",
                        "traffic_lower_bound_after", "load_distance_after"]),
    ("rod", ["feasible_set_ratio_before", "feasible_set_ratio_after", "load_distance_after"]),
    ("cg", ["utilisation_imbalance_before", "utilisation_imbalance_after",
            "load_distance_after"]),
    ("albic_many", ["collocation_factor_before", "collocation_factor_after",
                    "load_distance_after"]),
])
def test_the_view_leads_with_the_strategys_objective(strategy: str, first: list[str]) -> None:
    columns = key_metric_columns(strategy)
    assert columns[:len(first)] == [f"metrics.`{m}`" for m in first]
    assert columns[-2:] == ["tags.`reconf.publish_status`", "params.`strategy`"]
    envelope = json.loads(key_metrics_view(strategy, 1_700_000_000_000))
    assert envelope["name"] == VIEW_NAME and envelope["createdAt"] == 1_700_000_000_000
    state = json.loads(envelope["state"])  # a JSON string inside the envelope, as the UI reads
    assert state["selectedColumns"] == columns and state["orderByAsc"] is False


def test_every_strategy_has_key_columns() -> None:
    for name in STRATEGIES:
        assert len(key_metric_columns(name)) >= 6


def test_the_view_is_rewritten_only_when_the_strategy_changes(tmp_path: Path) -> None:
    from jobs.tracking.store import _experiment_id as experiment_of
    from jobs.tracking.store import open_experiment, open_store
    from schemas.config import Paths

    paths = Paths(tmp_path / "home")
    client = open_store(paths)
    experiment = experiment_of(client, paths, "wan", "sprawl")
    tags = client.get_experiment(experiment).tags
    assert tags["mlflow.experimentKind"] == "custom_model_development"
    assert not view_needs_update(tags, "sprawl") and view_needs_update(tags, "milp")
    written = tags[VIEW_TAG]
    assert experiment_of(client, paths, "wan", "sprawl") == experiment
    assert client.get_experiment(experiment).tags[VIEW_TAG] == written  # untouched
    assert open_experiment(client, paths, "wan") == experiment  # no strategy: left as is
    experiment_of(client, paths, "wan", "milp")
    assert not view_needs_update(client.get_experiment(experiment).tags, "milp")
    assert view_needs_update({}, "milp") and view_needs_update({VIEW_TAG: "{"}, "milp")
    # the demo ends with the link to the job's runs table (no experiment yet: the UI's root)
    from reconf.demo import experiment_link

    assert experiment_link(paths, "wan") == experiment_url("http://127.0.0.1:5000", experiment)
    assert experiment_link(paths, "nope") == "http://127.0.0.1:5000"
