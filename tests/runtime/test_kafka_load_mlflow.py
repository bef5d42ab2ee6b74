"""A loaded Kafka Streams period through the pipeline's tracking, on a real MLflow store (sqlite,
no server): the period's latency, lag and estimated maximum rate become metrics of the run that
planned from it, its per-second latency and lag a PNG artifact of that run, and `reconf audit`'s
lines show both. The record is a recorded one (no broker)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconf.audit_execution import execution_lines
from runtime.kafka_streams.latency import ProbeLine
from runtime.kafka_streams.loaded import (
    loaded_metrics,
    log_period_metrics,
    max_rate_estimate,
    per_second,
)
from runtime.kafka_streams.period_plot import ARTIFACT, period_plot

END = "2026-01-01T00:05:00Z"


def _record() -> dict[str, Any]:
    # 15 probe seconds at 400 records/s: a rebalance pause in seconds 6-7, then the backlog drains
    lines = [ProbeLine(1000 * s, "kstreams", 400, 400 * s, {40: 390, 900 if s in (6, 7) else 120: 10},
                       400 * s + (300 if s in (6, 7) else 20), 400 * s - 200, 200)
             for s in range(1, 16)]
    lines.append(ProbeLine(99_000, "kstreams", 1, 1, {5: 1}, 1, 1, 0))  # outside the span
    return {"period_end": END,
            "open_loop": {"rate": 400.0, "hot_spot": 0, "seconds": 15.0, "ideal_rate": 600.0},
            "series": per_second(lines, 1000, 16_000),
            "latency_ms": {"p50": 40.0, "p95": 120.0, "p99": 900.0, "max": 900.0},
            "lag": {"max": 200.0, "mean": 200.0, "samples": 15},
            "backlog": {"max": 300.0, "mean": 60.0, "slope_per_s": -2.0},
            "out_per_s": 400.0, "utilisation": {"node-00": 0.5, "node-01": 0.8, "node-02": 0.6}}


def test_per_second_series_and_the_max_rate_estimate() -> None:
    record = _record()
    assert len(record["series"]) == 15
    assert record["series"][5] == [5.0, 40.0, 900.0, 300, 200, 400]
    assert record["series"][0][2] == 120.0
    assert max_rate_estimate(record) == 500.0  # 400 / 0.8: the busiest instance saturates
    saturated = {**record, "utilisation": {"node-00": 0.97}}
    assert max_rate_estimate(saturated) is None
    growing = {**record, "backlog": {**record["backlog"], "slope_per_s": 40.0}}
    assert max_rate_estimate(growing) is None


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One sqlite store for the module (creating one runs MLflow's migrations: seconds)."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


def test_a_loaded_period_on_its_plans_mlflow_run(tmp_path: Path, store: str) -> None:
    from mlflow import MlflowClient

    uri = store
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("kstreams", artifact_location=str(tmp_path / "artifacts"))
    dry = client.create_run(exp, tags={"reconf.period_end": END, "reconf.dry_run": "true"})
    run = client.create_run(exp, tags={"reconf.period_end": END, "reconf.dry_run": "false"})
    record = _record()
    png = period_plot(record, tmp_path / "plots")
    assert png is not None and png.name == ARTIFACT
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert period_plot({"produced": 10}, tmp_path / "none") is None

    got = log_period_metrics(uri, "kstreams", "reconf.period_end", END, loaded_metrics(record),
                             [png])
    assert got == run.info.run_id  # the plan's run, not the dry run's
    metrics = client.get_run(run.info.run_id).data.metrics
    assert metrics["kstreams_p99_ms"] == 900.0 and metrics["kstreams_lag_max"] == 200.0
    assert metrics["kstreams_max_rate_est"] == 500.0 and metrics["kstreams_ideal_rate"] == 600.0
    assert not client.get_run(dry.info.run_id).data.metrics
    artifacts = [a.path for a in client.list_artifacts(run.info.run_id)]
    assert artifacts == [ARTIFACT]
    assert log_period_metrics(uri, "kstreams", "reconf.period_end", "2026-01-01T00:10:00Z",
                              loaded_metrics(record)) is None  # no run planned from it

    report = {"kafka_streams": {k: v for k, v in metrics.items() if k.startswith("kstreams_")},
              "artifacts": artifacts}
    lines = execution_lines(report)
    assert lines[0].startswith("  kafka streams (measured): ")
    assert "max_rate_est 500" in lines[0] and "p99_ms 900" in lines[0]
    assert lines[1] == f"  kafka streams latency and lag per second: artifact {ARTIFACT}"


def test_the_benchmark_run_logged_to_mlflow(tmp_path: Path, store: str) -> None:
    from mlflow import MlflowClient

    from bench.kafka_load.report import targets
    from bench.kafka_load.tracking import EXPERIMENT, log_benchmark

    result = {"capacities": [1.0, 1.0, 1.0], "max_rate": {"default": 295.0, "milp": 361.0},
              "censored": {"milp": False}, "warm_rate": 131.0,
              "fixed": {"default": {"before_shift": {"p50": 66.0, "p99": 217.0}},
                        "milp": {"before_shift": {"p50": 60.0, "p99": 142.0}}},
              "floor": {"default": {"p99": 60.0}, "milp": {"p99": 55.0}, "wire": {"p99": 9.0}},
              "bound": {"bound": 1.29, "baseline_peak_pct": 43.1, "best_peak_pct": 33.4},
              "stable_after_shift": {"milp": 0}, "rows": []}
    found = targets([result], budget=3, step_pct=7)
    png, rows = tmp_path / "kafka-load.png", tmp_path / "kafka-load.json"
    png.write_bytes(b"\x89PNG\r\n\x1a\n")
    rows.write_text("[]")
    rid = log_benchmark(store, {"quick": True, "cost_us": 8000.0}, [result], found, [png, rows])
    client = MlflowClient(tracking_uri=store)
    run = client.get_run(rid)
    assert client.get_experiment(run.info.experiment_id).name == EXPERIMENT
    m = run.data.metrics
    assert m["equal.milp.max_rate_x_default"] == 361.0 / 295.0
    assert m["equal.default.p99_ms"] == 217.0 and m["equal.wire.floor_p99_ms"] == 9.0
    assert m["equal.data_bound_x"] == 1.29 and run.data.params["cost_us"] == "8000.0"
    verdicts = [v for k, v in sorted(run.data.tags.items()) if k.startswith("target.")]
    assert len(verdicts) == len(found) and verdicts[0].startswith(
        "milp: max rate vs default, capacities 1,1,1: differs (explained: ")
    assert sorted(a.path for a in client.list_artifacts(rid)) == [rows.name, png.name]
    # beside the store, never ./mlruns in the working directory
    db = Path(store.removeprefix("sqlite:///"))
    assert (db.parent / "artifacts" / EXPERIMENT).is_dir()
    assert client.get_run(rid).info.artifact_uri.startswith((db.parent / "artifacts").as_uri())
