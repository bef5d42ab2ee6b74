"""The MLflow UI's addresses an operator is given, and the job experiment's saved view.

MLflow 3's UI chooses between its GenAI views and the classic (machine-learning) views per
page: the query parameter `workflowType` (`machine_learning` or `genai`) wins, else the browser's
remembered choice, which starts as GenAI. The experiment tag `mlflow.experimentKind`
(`custom_model_development`, jobs/tracking/store.py) sends the experiment page to its runs
table. So every link reconf prints carries `workflowType=machine_learning`: it opens the classic
run page whatever the browser chose before.

The runs table shows no metric columns by default (its default columns are Source, Models and
Dataset, kept per browser in local storage). What MLflow 3 offers per experiment is a *saved
view*: an experiment tag `mlflow.sharedViewState.<key>` whose value is the envelope
`{"name", "createdAt", "updatedAt", "state"}` (`state`: the JSON of the table's columns and
sort), listed under the UI's views and applied by the link parameter `viewStateShareKey=<key>`.
`key_metrics_view` writes the job's: its strategy's objective before and after, its bound, load
distance, migrations, migration cost, publish status, newest period first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from urllib.parse import quote

from schemas.headline import objective_for
from schemas.strategies import LOAD_DISTANCE
from schemas.tracking import Tag

__all__ = ["CLASSIC", "VIEW_KEY", "VIEW_NAME", "VIEW_TAG", "experiment_url",
           "key_metric_columns", "key_metrics_view", "run_url", "view_needs_update"]

#: the query parameter that opens MLflow 3's classic (machine-learning) views
CLASSIC = "workflowType=machine_learning"
#: the saved view of the job's key metrics: its key, the experiment tag, the name the UI lists
VIEW_KEY = "reconf-key-metrics"
VIEW_TAG = f"{Tag.SHARED_VIEW_PREFIX}{VIEW_KEY}"
VIEW_NAME = "reconf: key metrics"


def run_url(base: str, experiment_id: str, run_id: str) -> str:
    """The run's page, in the classic view."""
    return (f"{base.rstrip('/')}/#/experiments/{quote(experiment_id, safe='')}/runs/"
            f"{quote(run_id, safe='')}?{CLASSIC}")


def experiment_url(base: str, experiment_id: str) -> str:
    """The job's runs table, in the classic view, with the key-metrics columns."""
    return (f"{base.rstrip('/')}/#/experiments/{quote(experiment_id, safe='')}/runs"
            f"?viewStateShareKey={VIEW_KEY}&{CLASSIC}")


def _column(kind: str, key: str) -> str:
    """A runs-table column id as the UI writes it (`metrics.\\`load_distance_after\\``)."""
    return f"{kind}.`{key}`"


def key_metric_columns(strategy: str | None) -> list[str]:
    """The columns an operator compares periods by: the strategy's objective before → after
    and what certifies it, load distance (the secondary column), migrations and their cost,
    the publish status and the strategy."""
    objective = objective_for(strategy)
    names = [f"{objective.name}_before", f"{objective.name}_after"]
    if objective.bound is not None:
        names.append("lower_bound" if objective.bound == "lower_bound"
                     else f"{objective.bound}_after")
    if objective.name != LOAD_DISTANCE.name:
        names.append("load_distance_after")
    names += ["migrations", "migration_cost"]
    return ([_column("metrics", n) for n in names]
            + [_column("tags", Tag.PUBLISH_STATUS), _column("params", "strategy")])


def _state(strategy: str | None) -> dict[str, object]:
    return {"selectedColumns": key_metric_columns(strategy),
            "orderByKey": "attributes.start_time", "orderByAsc": False}


def key_metrics_view(strategy: str | None, now_ms: int) -> str:
    """The saved view's tag value (MLflow 3.17's envelope; `state` is a JSON string)."""
    return json.dumps({"name": VIEW_NAME, "createdAt": now_ms, "updatedAt": now_ms,
                       "state": json.dumps(_state(strategy), sort_keys=True)})


def view_needs_update(tags: Mapping[str, str], strategy: str | None) -> bool:
    """True when the experiment has no saved view, or one for other columns (the job's
    strategy changed): the view is rewritten only then, not on every run."""
    try:
        state = json.loads(json.loads(tags[VIEW_TAG])["state"])
    except (KeyError, TypeError, ValueError):
        return True
    return bool(state != _state(strategy))
