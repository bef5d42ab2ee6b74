"""A plan's MLflow run is O(nodes + moves + top pairs): its metrics, params and artifact bytes do
not grow with the job's key groups at fixed nodes and moves (jobs/tracking/bounded.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from jobs.plan.stage import job_budget, plan_to_dict
from jobs.tracking.bounded import logged_keygroups, logged_plan_json
from placement.model import ClusterState, Edge
from placement.registry import get_strategy
from placement.workloads.synthetic import synthetic_state
from schemas.config import JobConfig, Paths

STAMP = "2026-01-01T00:05:00Z"


class _Counting:
    """The store's client, counting the calls made through it (each one a store round trip)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, Counter[str]()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return attr(*args, **kwargs)

        return counted


def _logged(tmp_path: Path, units: int) -> tuple[int, int, int, int, Counter[str], int]:
    """(metrics, params, artifact bytes, key groups in keygroups.csv, store calls, what-if
    input bytes) of one plan's run, logged and then tagged as the plan stage does."""
    from mlflow import MlflowClient

    from jobs.tracking import store
    from jobs.tracking.store import CycleRecord, log_cycle, prepare_client, tag_run
    from jobs.whatif.input import store_input

    paths = Paths(tmp_path / f"home{units}")
    job = JobConfig(f"kg{units}", strategy="greedy", max_migrations=6)
    state = synthetic_state(10, units, 4, 30.0, 7)
    ids = [k.id for k in state.keygroups]  # two heavy pairs per unit: O(units) edges
    state = replace(state, edges=tuple(Edge(a, ids[(i + j) % units], 1.0 + (i % 17) + j)
                                       for i, a in enumerate(ids) for j in (1, 2)))
    assert isinstance(state, ClusterState)
    plan = get_strategy("greedy")(state, job_budget(job))
    assert plan.migrations == 6  # the same moves at every size
    plan_json = {"job_id": job.job_id, "period_end": STAMP, **plan_to_dict(plan)}
    prepare_client(paths)
    counting = store._CLIENTS[paths.mlflow_uri] = _Counting(store._CLIENTS[paths.mlflow_uri])
    try:
        whatif = store_input(paths, "p1", job, STAMP, "greedy", state, plan, job_budget(job))
        run_id = log_cycle(paths, CycleRecord(job, STAMP, "greedy", plan_json, None, whatif),
                           state, plan)
        tag_run(paths, run_id, {"reconf.delta.plans": "3"})
    finally:
        store._CLIENTS[paths.mlflow_uri] = counting.inner
    run = MlflowClient(tracking_uri=paths.mlflow_uri).get_run(run_id)
    folder = Path(run.info.artifact_uri.removeprefix("file://"))
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    listed = (folder / "keygroups.csv").read_text().count("\n") - 1
    kept = (paths.home / run.data.tags["reconf.whatif.input"]).stat().st_size
    return len(run.data.metrics), len(run.data.params), size, listed, counting.calls, kept


def test_the_run_does_not_grow_with_the_key_groups(tmp_path: Path) -> None:
    small, large = _logged(tmp_path, 2_000), _logged(tmp_path, 8_000)
    assert small[:2] == large[:2]  # the same metrics and params
    assert large[2] <= 1.1 * small[2], (small, large)  # bytes: ids of equal length, 4x the units
    assert small[3] == large[3] <= 1_000 + 6  # the heaviest 1,000 and the moved ones
    # the same store calls at 4x the units, and few: one batch of metrics, params and tags
    # (the description among them), one artifact upload, one read and one batch to tag it
    assert small[4] == large[4], (small[4], large[4])
    assert large[4]["log_artifacts"] == 1 and large[4]["log_batch"] == 2
    assert "log_artifact" not in large[4] and "set_tag" not in large[4]
    once = {"create_experiment", "get_experiment", "set_experiment_tag"}  # a job's first run
    assert sum(n for call, n in large[4].items() if call not in once) <= 8, large[4]
    # the what-if's input, O(units + edges), is kept beside the run, not in it
    assert large[5] > 3.5 * small[5] and large[5] > large[2]


def test_the_logged_description_is_the_one_the_run_rebuilds(tmp_path: Path) -> None:
    """log_cycle writes the description from what it logs (no read back); refresh_note, which
    reads the run, gives the same text."""
    from mlflow import MlflowClient

    from jobs.tracking import store
    from jobs.tracking.store import CycleRecord, log_cycle, refresh_note

    paths = Paths(tmp_path / "home")
    job = JobConfig("note", strategy="greedy", max_migrations=4)
    state = synthetic_state(6, 60, 3, 30.0, 5)
    plan = get_strategy("greedy")(state, job_budget(job))
    plan_json = {"job_id": job.job_id, "period_end": STAMP, **plan_to_dict(plan)}
    run_id = log_cycle(paths, CycleRecord(job, STAMP, "greedy", plan_json, None,
                                          {"reconf.base_version": "2"}), state, plan)
    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    logged = client.get_run(run_id).data.tags["mlflow.note.content"]
    store._MOVES.clear()  # the moves read back from moves.csv, as another process does
    refresh_note(client, run_id)
    assert client.get_run(run_id).data.tags["mlflow.note.content"] == logged
    assert "assignment v2" in logged and "migration(s)" in logged


@given(st.integers(0, 60), st.integers(1, 20), st.sets(st.integers(0, 59), max_size=10))
def test_logged_key_groups_keep_every_moved_one_and_the_heaviest(
        n: int, limit: int, moved: set[int]) -> None:
    rows: list[dict[str, Any]] = [
        {"keygroup": f"g{i}", "load_pct": float((i * 37) % 11), "moved": i in moved}
        for i in range(n)]
    kept = logged_keygroups(rows, limit)
    if n <= limit:
        assert kept == rows
        return
    assert {r["keygroup"] for r in rows if r["moved"]} <= {r["keygroup"] for r in kept}
    threshold = sorted((r["load_pct"] for r in rows), reverse=True)[limit - 1]
    assert len(kept) <= limit + len(moved)
    assert all(r["load_pct"] >= threshold for r in kept if not r["moved"])
    assert all(r in kept for r in rows if r["load_pct"] > threshold)
    assert kept == [r for r in rows if r in kept]  # in the rows' order


def test_plan_json_lists_the_assignment_only_up_to_the_limit() -> None:
    small = {"plan_id": "p", "assignment": {f"g{i}": "n" for i in range(3)}}
    assert logged_plan_json(small, 3) is small
    large = logged_plan_json(small, 2)
    assert large["assignment"] is None and large["assignment_keygroups"] == 3
    assert "plans.plan_json" in large["assignment_in"] and large["plan_id"] == "p"


def test_the_load_chart_keeps_its_size_at_many_nodes(tmp_path: Path) -> None:
    """node_loads.png draws a bar and a label per node only up to CHART_BARS_UP_TO nodes; a
    1,000-node job's chart is the size of a 100-node job's (it was 50,000 pixels wide, 12 s)."""
    from PIL import Image

    from jobs.tracking.charts import CHART_BARS_UP_TO, load_chart

    sizes = {}
    for nodes in (CHART_BARS_UP_TO, 100, 1000):
        state = synthetic_state(nodes, 2 * nodes, 4, 30.0, 7)
        plan = get_strategy("greedy")(state, job_budget(JobConfig("c", max_migrations=4)))
        load_chart(state, plan, tmp_path / f"{nodes}.png")
        with Image.open(tmp_path / f"{nodes}.png") as image:
            sizes[nodes] = image.size
    assert sizes[100] == sizes[1000]
    assert sizes[CHART_BARS_UP_TO][0] > sizes[100][0]  # bars and labels: wider


def test_the_load_index_reads_one_run_whatever_the_history(tmp_path: Path) -> None:
    """The load index divides by the system load of the job's earliest period that logged one
    (dry runs and runs without it aside); the store answers with that run alone."""
    from jobs.tracking import store
    from jobs.tracking.store import _load_index, open_experiment, prepare_client

    paths = Paths(tmp_path / "home")
    prepare_client(paths)
    client = store._CLIENTS[paths.mlflow_uri]
    experiment = open_experiment(client, paths, "li")
    for when, load, dry in (("2026-01-01T00:10:00Z", 40.0, "false"),
                            ("2026-01-01T00:05:00Z", 20.0, "true"),  # a dry run: not counted
                            ("2026-01-01T00:15:00Z", 80.0, "false")):
        run = client.create_run(experiment, tags={"reconf.period_end": when,
                                                  "reconf.dry_run": dry})
        client.log_metric(run.info.run_id, "system_load", load)
    client.create_run(experiment, tags={"reconf.period_end": "2026-01-01T00:00:00Z",
                                        "reconf.dry_run": "false"})  # no system_load logged
    answered: list[int] = []

    class Answers:  # the runs the store sends back
        def search_runs(self, *args: Any, **kwargs: Any) -> Any:
            runs = client.search_runs(*args, **kwargs)
            answered.append(len(runs))
            return runs

    assert _load_index(Answers(), experiment, "2026-01-01T00:20:00Z", 60.0) == 150.0
    assert _load_index(Answers(), experiment, "2026-01-01T00:01:00Z", 10.0) == 100.0  # the first
    assert answered == [1, 1]  # it read every run of the job's history before
