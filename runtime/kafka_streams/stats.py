"""The instances' statistics snapshots (FlightsApp's stats/<node>.json) → one landed period.

Counters in a snapshot are cumulative since the instance started, so a period is the difference
between the snapshot taken when it ends and the one taken when the previous period ended (kept
in `<app>/last_snapshot.json`). A task that moved within the period was processed on two
instances: its counts are summed, it is landed once, on the node running it at the end (one row
per task, as `validate` expects unique key groups). An instance that died takes its counters with
it; a counter that went down is read as restarting from zero.

What lands, per task (`keygroups/`): records in and out, `cpu_ms` = the task's load basis × one
calibration factor (below), `state_bytes` = the store's key + value bytes now. The basis
(`load_metric`) is either the nanoseconds FlightsApp measured inside the task's processor
(`processing_time`, in reference nanoseconds: the time measured on an instance of capacity c, × c)
or the task's records in (`records`, the default: the aggregate costs the same
per record, and at a few thousand records per task and period the measured times are dominated by
JIT, garbage collection, RocksDB flushes and other tenants of the machine — one task's time per
record varied 3-65 µs from one period to the next; docs/runtime.md). Per node (`nodes/`): its
capacity and the sum of its tasks' `cpu_ms`. No edges: the topology has one subtopology, no task
sends to another. The calibration factor turns the first period's basis into a mean node load of
`load_pct` % of the period (`spl`); it is kept and applied unchanged to every later period, so
loads compare across periods exactly as the basis does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from schemas.landing import EDGES, KEYGROUPS, NODES, SCHEMAS

__all__ = ["OPERATOR", "PeriodFigures", "period_figures", "tables"]

OPERATOR = "route-stats"

Snapshot = Mapping[str, Mapping[str, Any]]  # node -> FlightsApp report


@dataclass(frozen=True)
class PeriodFigures:
    """One period measured: per task (in, out, processing ns, state bytes, node at the end) and
    per node (processing ns, process CPU ns, capacity)."""

    tasks: Mapping[str, tuple[int, int, int, int, str]]
    nodes: Mapping[str, tuple[int, int, float]]
    wall_ms: int

    def node_proc_ns(self) -> dict[str, int]:
        return self.node_sums("processing_time")

    def task_basis(self, metric: str) -> dict[str, int]:
        """Each task's load before calibration: measured ns, or records in (`records`)."""
        timed = metric == "processing_time"
        return {t: v[2] if timed else v[0] for t, v in self.tasks.items()}

    def node_sums(self, metric: str) -> dict[str, int]:
        out = {n: 0 for n in self.nodes}
        basis = self.task_basis(metric)
        for task, v in self.tasks.items():
            out[v[4]] = out.get(v[4], 0) + basis[task]
        return out


def _delta(now: int, before: int) -> int:
    return now - before if now >= before else now


def period_figures(before: Snapshot, after: Snapshot, owners: Mapping[str, str]) -> PeriodFigures:
    """The period between two snapshots; `owners`: task -> node running it at the end."""
    sums: dict[str, list[int]] = {t: [0, 0, 0] for t in owners}
    nodes: dict[str, tuple[int, int, float]] = {}
    for node, snap in after.items():
        prior = before.get(node, {})
        prior_tasks = prior.get("tasks", {}) if prior.get("pid") == snap.get("pid") else {}
        node_ns = 0
        # a processing nanosecond on an instance of capacity c is c reference nanoseconds: the
        # planner's loads are in % of a reference node (capacity 1.0), its nodes' capacities
        # divide them back (placement/metrics.py); a task measured on a fast instance is not light
        speed = float(snap.get("capacity", 1.0))
        for task, c in snap["tasks"].items():
            p = prior_tasks.get(task, {})
            d = [_delta(c[k], p.get(k, 0)) for k in ("in", "out", "proc_ns")]
            d[2] = round(d[2] * speed)
            node_ns += d[2]
            acc = sums.setdefault(task, [0, 0, 0])
            for i in range(3):
                acc[i] += d[i]
        cpu = _delta(int(snap["process_cpu_ns"]), int(prior.get("process_cpu_ns", 0))
                     if prior.get("pid") == snap.get("pid") else 0)
        nodes[node] = (node_ns, cpu, float(snap["capacity"]))
    state = {t: int(after[n]["tasks"].get(t, {}).get("state_bytes", 0)) for t, n in owners.items()}
    tasks = {t: (s[0], s[1], s[2], state.get(t, 0), owners[t]) for t, s in sums.items()
             if t in owners}
    stamps = [int(s["ts_ms"]) for s in after.values()]
    starts = [int(s["ts_ms"]) for s in before.values()] or stamps
    return PeriodFigures(tasks, nodes, max(stamps) - min(starts))


def tables(figures: PeriodFigures, period_end: datetime, period_s: int,
           ms_per_ns: float, metric: str = "processing_time") -> dict[str, pa.Table]:
    """The landing tables of one period; `ms_per_ns` is the calibration factor (CPU-ms per unit
    of `metric`: a measured processing nanosecond, or a record)."""
    ts = period_end - timedelta(seconds=period_s)
    kg = sorted(figures.tasks)
    basis = figures.task_basis(metric)
    keygroups = {
        "ts": [ts] * len(kg), "operator": [OPERATOR] * len(kg), "keygroup": kg,
        "node": [figures.tasks[t][4] for t in kg],
        "tuples_in": [figures.tasks[t][0] for t in kg],
        "tuples_out": [figures.tasks[t][1] for t in kg],
        "cpu_ms": [basis[t] * ms_per_ns for t in kg],
        "state_bytes": [figures.tasks[t][3] for t in kg],
    }
    per_node = figures.node_sums(metric)
    names = sorted(figures.nodes)
    nodes = {"ts": [ts] * len(names), "node": names,
             "capacity": [figures.nodes[n][2] for n in names],
             "cpu_ms": [per_node.get(n, 0) * ms_per_ns for n in names]}
    empty: dict[str, list[Any]] = {name: [] for name in SCHEMAS[EDGES].names}
    return {KEYGROUPS: pa.table(keygroups, schema=SCHEMAS[KEYGROUPS]),
            NODES: pa.table(nodes, schema=SCHEMAS[NODES]),
            EDGES: pa.table(empty, schema=SCHEMAS[EDGES])}


def calibration(figures: PeriodFigures, period_s: int, load_pct: float,
                metric: str = "processing_time") -> float:
    """CPU-ms per unit of `metric` such that the mean node's load is `load_pct` % of the period."""
    per_node = figures.node_sums(metric)
    mean_ns = sum(per_node.values()) / max(len(per_node), 1)
    if mean_ns <= 0:
        raise ValueError("the period processed nothing: no processing time to calibrate loads on")
    return (load_pct / 100.0) * period_s * 1000.0 / mean_ns
