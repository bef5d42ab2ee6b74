"""One arm of the load benchmark: the flights application on its own topics, application id and
instances, with a known capacity per instance; Kafka Streams' default assignor, or a reconf
strategy that plans at every period end on the period's measured processing time per task and
publishes a manifest ReconfTaskAssignor applies at its next follow-up rebalance.

Planning here is in-process on the statistics the instances write (what `KafkaStreamsJob` lands,
without the Delta round trip): a task's load is its processing time over the period (the service
cost it waited plus its measured compute: runtime/kafka_streams/stats.py, `processing_time`), in
% of the period; a node's capacity is the instance's. A plan is published only when it lowers
the most loaded instance's load/capacity by at least `min_gain` (10 %, about twice the
noise of a node's load over a period): a plan of equal balance
but other tasks would cost restores for nothing. The loads planned on are an exponentially
weighted mean over the periods (weight `smoothing` on the newest): a task's period is a few
hundred records, whose count alone varies by several per cent from one period to the next, and
a planner that chases that noise moves tasks back and forth (docs/DESIGN: measurements are
estimates).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.kafka_load.floor import peak
from runtime.kafka_streams.cluster import AppSpec, Cluster
from runtime.kafka_streams.load import ProbedApp
from runtime.kafka_streams.stats import OPERATOR, period_figures

__all__ = ["LoadArm", "node_names"]

Snapshot = dict[str, dict[str, Any]]


def node_names(n: int) -> list[str]:
    return [f"node-{i:02d}" for i in range(n)]


@dataclass
class LoadArm:
    """`strategy` None: Kafka's default assignor."""

    name: str
    strategy: str | None
    cluster: Cluster
    capacities: dict[str, float]
    budget: int
    min_gain: float = 0.10
    smoothing: float = 0.5
    estimate: dict[str, float] = field(default_factory=dict)  # task -> smoothed load %
    version: int = 0
    snap: Snapshot = field(default_factory=dict, repr=False)  # at the current period's start

    @classmethod
    def make(cls, name: str, strategy: str | None, bootstrap: str, home: Path, *,
             capacities: list[float], partitions: int, cost_us: float, budget: int,
             followup_ms: int, tag: str, linger_ms: int = 0,
             fetch_wait_ms: int | None = None) -> LoadArm:
        job = f"kload-{tag}-{name}"
        spec = AppSpec(job, partitions=partitions, input_topic=f"{job}-in",
                       output_topic=f"{job}-out", followup_ms=followup_ms,
                       default_assignor=strategy is None, cost_us=cost_us, linger_ms=linger_ms,
                       commit_ms=1000, full_jit=True, fetch_wait_ms=fetch_wait_ms, stats_ms=1000)
        cluster = Cluster(spec, bootstrap, home / job, home / "published")
        caps = dict(zip(node_names(len(capacities)), capacities, strict=True))
        return cls(name, strategy, cluster, caps, budget)

    @property
    def probed(self) -> ProbedApp:
        spec = self.cluster.spec
        return ProbedApp(self.name, spec.input_topic, spec.output_topic, spec.app_id)

    def topics(self) -> list[str]:
        n = self.cluster.spec.partitions
        return [f"{self.cluster.spec.input_topic}:{n}", f"{self.cluster.spec.output_topic}:{n}"]

    def start(self) -> None:
        """The arm's instances, in one JVM (Cluster.start_shared: the machine's two cores)."""
        self.cluster.start_shared(self.capacities)

    def mark(self) -> Snapshot:
        """The instances' snapshots now: the start of the next period."""
        self.snap = self.cluster.stats()
        return self.snap

    def period_end(self, period: int, end: datetime | None = None) -> dict[str, Any]:
        """Close the period: its per-task figures, and for a reconf arm a plan (published when
        it gains). Returns the period's arm fields: tasks moved in it, restores, plan."""
        before, after = self.snap, self.cluster.stats()
        assignment = self.cluster.reported_assignment()
        owners = assignment or {t: n for n, s in after.items() for t in s.get("active_tasks", [])}
        figures = period_figures(before, after, owners)
        wall_ms = max(figures.wall_ms, 1)
        loads = {t: 100.0 * v[2] / (wall_ms * 1e6) for t, v in figures.tasks.items()}
        restores = [r for s in after.values() for r in s.get("restores", [])
                    if int(r["end_ms"]) > min((int(s2["ts_ms"]) for s2 in before.values()),
                                              default=0)]
        row: dict[str, Any] = {
            "assignment": owners, "task_load_pct": loads,
            "restored_records": sum(int(r["records"]) for r in restores),
            "restore_ms": sum(int(r["ms"]) for r in restores),
            "published": None, "planned_moves": 0,
        }
        self.snap = after
        self.estimate = {t: loads.get(t, 0.0) if t not in self.estimate else
                         self.smoothing * loads.get(t, 0.0) + (1 - self.smoothing) * self.estimate[t]
                         for t in set(loads) | set(self.estimate)}
        if self.strategy is None or assignment is None or not loads:
            return row
        loads = self.estimate
        plan = self._plan(loads, assignment, after, period)
        if plan is None:
            return row
        gain_before = peak(loads, assignment, self.capacities)
        gain_after = peak(loads, dict(plan.assignment), self.capacities)
        row.update(planned_moves=len(plan.moves), peak_before=gain_before, peak_after=gain_after)
        if plan.moves and gain_after <= gain_before * (1 - self.min_gain):
            self._publish(dict(plan.assignment), period, end)
            row["published"] = self.version
        return row

    def _plan(self, loads: dict[str, float], assignment: dict[str, str], after: Snapshot,
              period: int) -> Any:
        from placement.model import Budget, ClusterState, KeyGroup, Node
        from placement.registry import get_strategy

        state_bytes = {t: int(s["tasks"].get(t, {}).get("state_bytes", 0))
                       for t, n in assignment.items() for node, s in after.items() if node == n}
        state = ClusterState(
            nodes=tuple(Node(n, c) for n, c in self.capacities.items()),
            keygroups=tuple(KeyGroup(t, OPERATOR, loads.get(t, 0.0), float(state_bytes.get(t, 0)),
                                     float(state_bytes.get(t, 0)))
                            for t in sorted(assignment)),
            assignment=assignment)
        assert self.strategy is not None
        return get_strategy(self.strategy)(state, Budget(max_migrations=self.budget),
                                           time_limit_s=2.0, seed=period)

    def _publish(self, assignment: dict[str, str], period: int, end: datetime | None) -> None:
        from schemas.manifest import Manifest, write_latest, write_manifest

        job = self.cluster.spec.job
        self.version += 1
        root = self.cluster.published_root
        write_manifest(root, Manifest.create(
            job_id=job, version=self.version, period_end=end or datetime.now(UTC),
            plan_id=f"{job}@{period}", assignment=assignment))
        write_latest(root, job, self.version)
