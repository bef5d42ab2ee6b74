"""What a run measures besides the arms' maxima, so that a missed target is explained by the
run itself, not by a figure typed into the docs:

- **the floor**: each arm's latency at the warm-up's low rate (35 % of the ideal, no instance
  near saturation), over the warm-up periods in which the arm moved no task (a move's rebalance
  pause is not the floor), and the wire's (the first arm's input topic read back by the probe:
  producer → broker → probe). At the fixed rate an arm's p99 is this floor plus its queueing;
  the floor is the same for every arm, so it caps how far apart two arms' p99s can be.
- **the data's bound** on the maximum-rate ratio: the maximum sustainable rate of an arm is set
  by its busiest instance (load / capacity), so no placement can beat the default assignor's by
  more than (the default's busiest instance) / (the best placement's busiest instance), both on
  the measured per-task loads: the records the broker took in per input partition over the
  warm-up and the ramp (the probe samples the end offsets), exact where a saturated instance's
  processing time is not (it measures what it served, not what it was offered). The best
  placement is searched exactly (12 tasks on 3 instances: a branch and bound over at most 3^12
  assignments).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runtime.kafka_streams.latency import ProbeLine, window

__all__ = ["best_peak", "data_bound", "floor_windows", "offered", "peak"]


def floor_windows(rows: Sequence[Mapping[str, Any]], lines: Sequence[ProbeLine],
                  arms: Sequence[str], wire: str = "wire") -> dict[str, dict[str, Any]]:
    """arm -> its latency figures (latency.Window.as_dict() plus `periods`) over the warm-up
    periods in which it moved no task; the wire over every warm-up period."""
    out: dict[str, dict[str, Any]] = {}
    for arm in [*arms, wire]:
        spans = [(int(r["start_ms"]), int(r["end_ms"])) for r in rows
                 if r["phase"] == "warm" and r["arm"] == (arms[0] if arm == wire else arm)
                 and (arm == wire or not r["moved"])]
        if not spans:
            continue
        mine = [ln for ln in lines if ln.arm == arm and any(a <= ln.ts_ms < b for a, b in spans)]
        w = window(mine, arm, min(a for a, _ in spans), max(b for _, b in spans)).as_dict()
        out[arm] = {**w, "periods": len(spans)}
    return out


def peak(loads: Mapping[str, float], assignment: Mapping[str, str],
         capacities: Mapping[str, float]) -> float:
    """The busiest instance's load / capacity under `assignment`."""
    per = {n: 0.0 for n in capacities}
    for task, node in assignment.items():
        per[node] = per.get(node, 0.0) + loads.get(task, 0.0)
    return max(per[n] / capacities[n] for n in per)


def best_peak(loads: Mapping[str, float], capacities: Mapping[str, float]) -> float:
    """The least busiest-instance load / capacity any assignment of the tasks reaches (exact:
    depth-first over the tasks, heaviest first, pruned by the best found; instances of equal
    capacity and equal load so far are interchangeable, so only one of them is tried)."""
    tasks = sorted(loads.values(), reverse=True)
    nodes = list(capacities.values())
    best = [sum(tasks) / min(nodes)]  # everything on the smallest instance: an upper bound
    per = [0.0] * len(nodes)

    def place(i: int, worst: float) -> None:
        if worst >= best[0]:
            return
        if i == len(tasks):
            best[0] = worst
            return
        tried: set[tuple[float, float]] = set()
        for k, cap in enumerate(nodes):
            key = (cap, round(per[k], 12))
            if key in tried:
                continue
            tried.add(key)
            per[k] += tasks[i]
            place(i + 1, max(worst, per[k] / cap))
            per[k] -= tasks[i]

    place(0, 0.0)
    return best[0]


def offered(lines: Sequence[ProbeLine], arm: str, start_ms: int, end_ms: int
            ) -> dict[str, float] | None:
    """Records offered to each task (`0_<partition>`) of `arm` between two instants: the input
    partitions' end offsets the probe sampled (the first sample at or after `start_ms`, the last
    before `end_ms`); None without two samples. Exact counts of the stream every arm got, where
    a task's measured processing time is capped by its instance's capacity once it saturates."""
    mine = [ln for ln in lines if ln.arm == arm and ln.ends and start_ms <= ln.ts_ms < end_ms]
    if len(mine) < 2 or len(mine[0].ends) != len(mine[-1].ends):
        return None
    return {f"0_{p}": float(b - a) for p, (a, b) in enumerate(zip(mine[0].ends, mine[-1].ends,
                                                                    strict=True))}


def data_bound(rows: Sequence[Mapping[str, Any]], capacities: Sequence[float],
               lines: Sequence[ProbeLine] = (), baseline: str = "default"
               ) -> dict[str, Any] | None:
    """The bound on any arm's maximum rate / the baseline's, under the baseline's assignment,
    from the per-task loads: the records offered per task over the warm-up and the ramp (the key
    distribution of both; `offered`), or where the probe has no per-partition offsets, the
    processing time per task every arm measured in the warm-up (unsaturated: processed =
    offered; a noisier estimate). None when neither is there. Shares are of the total, in %."""
    warm = [r for r in rows if r["phase"] == "warm"]
    base = [r for r in warm if r["arm"] == baseline and r["assignment"]]
    spans = [r for r in rows if r["phase"] in ("warm", "ramp") and r["arm"] == baseline]
    loads = (offered(lines, baseline, min(int(r["start_ms"]) for r in spans),
                     max(int(r["end_ms"]) for r in spans)) if spans else None)
    source = "offered records per task, warm-up and ramp"
    if not loads:
        source = "processing time per task, warm-up"
        loads = {}
        for r in warm:
            for task, v in r["task_load_pct"].items():
                loads[task] = loads.get(task, 0.0) + float(v)
    total = sum(loads.values())
    if not base or total <= 0:
        return None
    shares = {t: 100.0 * v / total for t, v in loads.items()}
    caps = {f"node-{i:02d}": float(c) for i, c in enumerate(capacities)}
    assignment = dict(base[-1]["assignment"])
    if set(assignment.values()) - set(caps):
        return None
    # a share of the total per unit of capacity, scaled so that equal instances read as shares
    scale = sum(caps.values()) / len(caps)
    theirs = peak(shares, assignment, caps) * scale
    best = best_peak(shares, caps) * scale
    return {"task_share_pct": dict(sorted(shares.items(), key=lambda kv: _task_order(kv[0]))),
            "baseline_peak_pct": theirs, "best_peak_pct": best, "bound": theirs / best,
            "source": source}


def _task_order(task: str) -> tuple[int, ...]:
    return tuple(int(x) if x.isdigit() else 0 for x in task.split("_"))
