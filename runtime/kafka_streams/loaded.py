"""A Kafka Streams job under a steady open-loop load (`rate > 0` in its source table): the
instances have a known capacity (`cost_us`, ServiceCost.java) and a producer feeds them
`rate` records/s all the time, not a slice per period (runtime/kafka_streams/load.py). A landed
period is then a span of wall time (`period_wall_s` since the previous landing, the pipeline's
own run included), and besides the statistics it carries what the job lived through: the
end-to-end latency percentiles, the consumer lag and the backlog, results/s and each
instance's utilisation (runtime/kafka_streams/latency.py). The producer and the probe run as
long as the instances do (pid files under `<app>/load/run`, stopped by `close` or `make down`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.kafka_streams.cluster import Cluster
from runtime.kafka_streams.latency import ProbeLine, percentile, utilisation, window
from runtime.kafka_streams.load import KeySpec, LoadGenerator, Probe, ProbedApp
from runtime.kafka_streams.spec import KStreamsSpec

__all__ = ["OpenLoop", "loaded_metrics", "log_period_metrics", "max_rate_estimate", "per_second",
           "period_line"]


@dataclass
class OpenLoop:
    """The producer and probe of one job, started on first use (or adopted when a previous
    process of reconf left them running)."""

    spec: KStreamsSpec
    cluster: Cluster
    home: Path
    gen: LoadGenerator = field(init=False)
    probe: Probe = field(init=False)

    def __post_init__(self) -> None:
        app = self.cluster.spec
        self.gen = LoadGenerator(self.cluster.bootstrap, [app.input_topic], self.home,
                                 KeySpec(self.spec.keys), linger_ms=0)
        self.probe = Probe(self.cluster.bootstrap,
                           [ProbedApp(self.spec.job_id, app.input_topic, app.output_topic,
                                      app.app_id)], self.home)

    def ensure(self, period: int) -> None:
        """Both running; the rate set; the hot spots shifted from period `hot_spot_period` on."""
        if not self.probe.adopt():
            self.probe.start()
        if not self.gen.adopt():
            self.gen.start()
        shift = 1 if self.spec.hot_spot_period and period >= self.spec.hot_spot_period else 0
        if self.gen.rate != self.spec.rate or self.gen.hot_spot != shift:
            self.gen.hot_spot = shift
            self.gen.set_rate(self.spec.rate)

    def wait_until(self, t_ms: int) -> int:
        """Sleep until the wall clock reaches `t_ms` (epoch ms); now, in ms."""
        while (now := self.probe.now_ms()) < t_ms:
            time.sleep(min(1.0, (t_ms - now) / 1000))
        return now

    def figures(self, since_ms: int, until_ms: int, before: dict[str, Any],
                after: dict[str, Any]) -> dict[str, Any]:
        """The span's latency, lag, backlog and results/s, each instance's utilisation, and
        the probe's seconds (`series`: the span's plot, period_plot.py). `ideal_rate` is what
        the instances take at perfect balance (Σ capacity × 10^6 / cost_us)."""
        lines = [ln for ln in self.probe.lines() if ln.arm == self.spec.job_id]
        w = window(lines, self.spec.job_id, since_ms, until_ms)
        ideal = (sum(self.spec.capacity(n) for n in self.spec.node_names) * 1e6 / self.spec.cost_us
                 if self.spec.cost_us > 0 else None)
        return {"open_loop": {"rate": self.spec.rate, "hot_spot": self.gen.hot_spot,
                              "seconds": (until_ms - since_ms) / 1000, "ideal_rate": ideal},
                "series": per_second(lines, since_ms, until_ms),
                "latency_ms": {"p50": w.p50, "p95": w.p95, "p99": w.p99, "max": w.max_ms},
                "lag": {"max": w.lag_max, "mean": w.lag_mean, "samples": w.samples},
                "backlog": {"max": w.backlog_max, "mean": w.backlog_mean,
                            "slope_per_s": w.backlog_slope},
                "out_per_s": w.out_per_s, "utilisation": utilisation(before, after)}

    def close(self) -> None:
        self.gen.close()
        self.probe.close()


def period_line(record: dict[str, Any]) -> str:
    """The demo's words for a loaded period: p99 (and p50) latency, lag, results/s, utilisation."""
    lat = record.get("latency_ms")
    if not lat:
        return ""
    p = {k: "-" if v is None else f"{v:.0f}" for k, v in lat.items()}
    util = " ".join(f"{u:.2f}" for _, u in sorted(record.get("utilisation", {}).items()))
    return (f"  under load: {record['open_loop']['rate']:.0f} records/s in, "
            f"{record['out_per_s']:.0f}/s out; latency p50 {p['p50']} ms, p99 {p['p99']} ms; "
            f"lag mean {record['lag']['mean']:.0f}, max {record['lag']['max']:.0f}; "
            f"utilisation [{util}]")


def per_second(lines: Sequence[ProbeLine], since_ms: int, until_ms: int) -> list[list[Any]]:
    """The probe's seconds in [since_ms, until_ms) as `[seconds since the span's start, p50 ms,
    p99 ms, backlog, lag, results]` (a percentile None in a second without results; backlog and
    lag None when not sampled)."""
    out: list[list[Any]] = []
    for ln in lines:
        if since_ms <= ln.ts_ms < until_ms:
            known = ln.end >= 0
            out.append([round((ln.ts_ms - since_ms) / 1000, 3), percentile(ln.lat, 50)
                        if ln.lat else None, percentile(ln.lat, 99) if ln.lat else None,
                        ln.backlog if known else None, ln.lag if known else None, ln.out])
    return out


def max_rate_estimate(record: dict[str, Any], busy_limit: float = 0.95) -> float | None:
    """The rate at which the busiest instance would saturate under the assignment that ran:
    the offered rate / its utilisation (the cost model's load is linear in the rate). Unknown
    (None) when an instance was at `busy_limit` or more, or the backlog grew over the span:
    a saturated instance's utilisation says how much it served, not how much it was offered."""
    util = list(record.get("utilisation", {}).values())
    rate = float(record.get("open_loop", {}).get("rate", 0.0))
    if not util or rate <= 0 or max(util) <= 0 or max(util) >= busy_limit:
        return None
    if float(record.get("backlog", {}).get("slope_per_s", 0.0)) > 0.05 * rate:
        return None
    return rate / max(util)


def log_period_metrics(mlflow_uri: str | None, job_id: str, filter_tag: str, value: str,
                       metrics: dict[str, float],
                       artifacts: Sequence[Path] = ()) -> str | None:
    """Log `metrics` (and `artifacts`, files, at the run's top level) on the job's
    (non-dry-run) MLflow run whose tag `filter_tag` is `value`; the run id, None when there is
    no such run (nothing to attach the figures to)."""
    if mlflow_uri is None or not metrics:
        return None
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_uri)
    experiment = client.get_experiment_by_name(job_id)
    if experiment is None:
        return None
    runs = client.search_runs([experiment.experiment_id], max_results=1,
                              filter_string=f"tags.`{filter_tag}` = '{value}' AND "
                                            "tags.`reconf.dry_run` = 'false'")
    if not runs:
        return None
    run_id: str = runs[0].info.run_id
    for key, v in metrics.items():
        client.log_metric(run_id, key, float(v))
    for path in artifacts:
        client.log_artifact(run_id, str(path))
    return run_id


def loaded_metrics(record: dict[str, Any]) -> dict[str, float]:
    """A loaded period's figures as MLflow metrics (`kstreams_*`), the ones that are known."""
    if "latency_ms" not in record:
        return {}
    out = {f"kstreams_{k}_ms": v for k, v in record["latency_ms"].items() if v is not None}
    out.update(kstreams_lag_mean=record["lag"]["mean"], kstreams_lag_max=record["lag"]["max"],
               kstreams_backlog_max=record["backlog"]["max"],
               kstreams_out_per_s=record["out_per_s"], kstreams_rate=record["open_loop"]["rate"])
    util = list(record.get("utilisation", {}).values())
    if util:
        out["kstreams_utilisation_max"] = max(util)
    if (est := max_rate_estimate(record)) is not None:
        out["kstreams_max_rate_est"] = est
    if record["open_loop"].get("ideal_rate"):
        out["kstreams_ideal_rate"] = record["open_loop"]["ideal_rate"]
    return {k: float(v) for k, v in out.items()}

