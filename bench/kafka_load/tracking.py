"""`reconf bench kafka-load --mlflow [URI]`: the run as one MLflow run, beside the pipeline's.

The benchmark plans in-process (arms.py), not through the DAG, so its periods have no plan runs
of their own to carry figures; a benchmark run is instead one run of the experiment
`bench-kafka-load` (the project's store by default): its settings as parameters, per
configuration and arm the maximum sustainable rate, the ratio to the default's, p50/p99 at the
fixed rate and the floor's p99 as metrics, every target's verdict as a tag, and the plot (latency
and lag over time per arm) and the JSON rows as artifacts. The kstreams job's own periods go
through the pipeline and are logged on their plans' runs (runtime/kafka_streams/source.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["EXPERIMENT", "artifact_location", "log_benchmark", "metrics_of"]

EXPERIMENT = "bench-kafka-load"


def metrics_of(results: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """`<config>.<arm>.<figure>` -> value, the ones measured."""
    out: dict[str, float] = {}
    for res in results:
        tag = "equal" if len(set(res["capacities"])) == 1 else "hetero"
        base = res["max_rate"].get("default")
        for arm, best in res["max_rate"].items():
            if best is not None:
                out[f"{tag}.{arm}.max_rate"] = best
                if base:
                    out[f"{tag}.{arm}.max_rate_x_default"] = best / base
            fixed = res.get("fixed", {}).get(arm, {}).get("before_shift", {})
            for q in ("p50", "p99"):
                if fixed.get(q) is not None:
                    out[f"{tag}.{arm}.{q}_ms"] = fixed[q]
        for arm, f in (res.get("floor") or {}).items():
            if f.get("p99") is not None:
                out[f"{tag}.{arm}.floor_p99_ms"] = f["p99"]
        if res.get("bound"):
            out[f"{tag}.data_bound_x"] = res["bound"]["bound"]
    return {k: float(v) for k, v in out.items()}


def artifact_location(uri: str) -> str | None:
    """Where a new experiment's artifacts go: beside a sqlite store's database (as the
    project's experiments are, `<RECONF_HOME>/mlflow/artifacts/<experiment>`), never MLflow's
    default `./mlruns` in the working directory; a server's own choice otherwise."""
    if uri.startswith("sqlite:///"):
        return (Path(uri.removeprefix("sqlite:///")).parent / "artifacts" / EXPERIMENT).as_uri()
    return None


def log_benchmark(uri: str, params: Mapping[str, Any], results: Sequence[Mapping[str, Any]],
                  verdicts: Sequence[Any], files: Sequence[Path]) -> str:
    """One run of `EXPERIMENT` with the benchmark's settings, figures, verdicts and files; its
    run id."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    exp_id = exp.experiment_id if exp is not None else client.create_experiment(
        EXPERIMENT, artifact_location=artifact_location(uri))
    run = client.create_run(exp_id, tags={"mlflow.runName": "kafka-load"})
    rid: str = run.info.run_id
    for k, v in params.items():
        client.log_param(rid, k, str(v))
    for k, v in metrics_of(results).items():
        client.log_metric(rid, k, v)
    for i, t in enumerate(verdicts):
        # a tag value is one line; the name keeps its order and says which target it is
        client.set_tag(rid, f"target.{i:02d}", f"{t.name}: {t.verdict}"[:5000])
    for path in files:
        client.log_artifact(rid, str(path))
    client.set_terminated(rid)
    return rid
