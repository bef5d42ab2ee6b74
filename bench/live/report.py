"""The figures of `reconf bench live` from its records (bench/live/kit.py `read_records`): one
row per period (each moment in seconds after the period end), where the time went per task, and
the target. Pure functions of the records, so they are tested on recorded data.

Per task the time from the previous task's end (for the first, the run's creation) to its own
end splits into: `sched` (the scheduler queues it: previous end -> queued), `queue` (the
LocalExecutor hands it to a worker, which forks the task process and reports it running:
queued -> start), `startup` (the task process parses the DAG file and imports what the stage
needs before its first line: start -> stage start), `stage` (the stage's own code, from its
`reconf-stage … start` to its `done` line) and `finish` (the task reports its state: stage end
-> end). `wait_for_landing` has no stage lines: its `stage` is start -> end (the look at the
marker, or the deferral until the trigger fired).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import datetime
from typing import Any

__all__ = ["TARGET_S", "breakdown", "period_rows", "print_tables", "target_row", "verdict"]

#: period end -> published, seconds (p50 and max over the timed periods)
TARGET_S = 15.0
STAGES = ("collect", "validate", "plan", "publish")
PARTS = ("sched", "queue", "startup", "stage", "finish")


def verdict(value: float | None, limit: float) -> str:
    """beat (under 90 % of the limit), match (within it) or miss (over it, or no figure)."""
    if value is None:
        return "miss"
    return "beat" if value < 0.9 * limit else "match" if value <= limit else "miss"


def _rel(at: float | None, origin: float) -> float | None:
    return None if at is None else round(at - origin, 2)


def period_rows(records: Sequence[dict[str, Any]], warmup: int) -> list[dict[str, Any]]:
    """One row per run: moments in seconds after its period end; the first `warmup` runs are
    marked (a job's first cycle creates its tables and its MLflow experiment)."""
    rows = []
    for i, rec in enumerate(records):
        t0 = float(rec["period_end_epoch"])
        tasks = rec.get("tasks", {})
        wait = tasks.get("wait_for_landing", {})
        row: dict[str, Any] = {
            "kind": "period", "period_end": rec["period_end"], "warmup": i < warmup,
            "state": rec.get("state"), "version": rec.get("version"),
            "load_1m": rec["load"][0] if rec.get("load") else None,
            "landed_s": _rel(rec.get("landed"), t0),
            "run_created_s": _rel(rec.get("run", {}).get("created"), t0),
            "wait_queued_s": _rel(wait.get("queued"), t0), "wait_start_s": _rel(wait.get("start"), t0),
            "noticed_s": _rel(wait.get("end"), t0),
        }
        for stage in STAGES:
            task = tasks.get(stage, {})
            for key in ("queued", "start", "stage_start", "stage_end", "end"):
                row[f"{stage}_{key}_s"] = _rel(task.get(key), t0)
        row["published_s"] = _rel(rec.get("published"), t0)
        row["parts"] = _parts(rec)
        rows.append(row)
    return rows


def _parts(rec: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """Per task, its time split into PARTS (seconds; None where a moment is missing)."""
    tasks = rec.get("tasks", {})
    previous = rec.get("run", {}).get("created")
    out: dict[str, dict[str, float | None]] = {}
    for name in ("wait_for_landing", *STAGES):
        t = tasks.get(name, {})
        start, end = t.get("start"), t.get("end")
        first, last = (start, end) if name == "wait_for_landing" else (
            t.get("stage_start"), t.get("stage_end"))
        moments = (previous, t.get("queued"), start, first, last, end)
        out[name] = {part: (None if a is None or b is None else round(b - a, 3))
                     for part, a, b in zip(PARTS, moments[:-1], moments[1:], strict=True)}
        previous = end if end is not None else previous
    return out


def breakdown(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The mean of each task's parts over the timed periods (not warm-up), one row per task."""
    timed = [r for r in rows if not r["warmup"]]
    out = []
    for name in ("wait_for_landing", *STAGES):
        means: dict[str, Any] = {"kind": "breakdown", "task": name}
        for part in PARTS:
            values = [v for r in timed if (v := r["parts"][name][part]) is not None]
            means[f"{part}_s"] = round(statistics.fmean(values), 2) if values else None
        means["total_s"] = round(sum(v for p in PARTS if (v := means[f"{p}_s"]) is not None), 2)
        out.append(means)
    return out


def target_row(rows: Sequence[dict[str, Any]], spl_s: float) -> dict[str, Any]:
    """period end -> published over the timed periods: p50 and max against TARGET_S. A timed
    period that published nothing counts as a miss of the max."""
    timed = [r for r in rows if not r["warmup"]]
    values = [r["published_s"] for r in timed]
    known = [v for v in values if v is not None]
    p50 = round(statistics.median(known), 2) if known else None
    top = round(max(known), 2) if known and len(known) == len(values) else None
    loads = [r["load_1m"] for r in timed if r["load_1m"] is not None]
    return {"kind": "target", "target": "period end -> published", "limit_s": TARGET_S,
            "periods": len(timed), "published": len(known), "spl_s": spl_s,
            "p50_s": p50, "max_s": top, "verdict_p50": verdict(p50, TARGET_S),
            "verdict_max": verdict(top, TARGET_S),
            "load_1m": [min(loads), max(loads)] if loads else None}


def _f(value: float | None, width: int = 5) -> str:
    return f"{value:{width}.1f}" if value is not None else f"{'-':>{width}}"


def _span(row: dict[str, Any], stage: str) -> str:
    start, end = row[f"{stage}_start_s"], row[f"{stage}_end_s"]
    return f"{_f(start)}-{_f(end).strip():<5}" if start is not None else f"{'-':^11}"


def print_tables(rows: Sequence[dict[str, Any]], parts: Sequence[dict[str, Any]],
                 target: dict[str, Any]) -> None:
    """The periods (seconds after each period end; a stage: its task's start-end), where the
    time went per task (means over the timed periods), and the target."""
    print("\nseconds after the period end (a stage: its task's start-end; * warm-up, not timed)")
    print(f"{'period end':<10} {'load':>4} {'landed':>6} {'noticed':>7}  "
          + " ".join(f"{s:^11}" for s in STAGES) + f" {'published':>9}  version")
    for r in rows:
        end = datetime.fromisoformat(r["period_end"]).strftime("%H:%M:%S")
        mark = "*" if r["warmup"] else " "
        print(f"{end}{mark:<2} {_f(r['load_1m'], 4)} {_f(r['landed_s'], 6)} "
              f"{_f(r['noticed_s'], 7)}  " + " ".join(_span(r, s) for s in STAGES)
              + f" {_f(r['published_s'], 9)}  {r['version'] or '-'}")
    print("\nwhere the time goes, per task (mean seconds over the timed periods)")
    print(f"{'task':<17}" + "".join(f"{p:>8}" for p in PARTS) + f"{'total':>8}")
    for p in parts:
        print(f"{p['task']:<17}" + "".join(f"{_f(p[f'{q}_s'], 8)}" for q in PARTS)
              + f"{_f(p['total_s'], 8)}")
    sums = {q: sum(v for p in parts if (v := p[f"{q}_s"]) is not None) for q in PARTS}
    print(f"{'all tasks':<17}" + "".join(f"{_f(sums[q], 8)}" for q in PARTS)
          + f"{_f(sum(sums.values()), 8)}")
    load = target["load_1m"]
    during = f", load {load[0]:.1f}-{load[1]:.1f}" if load else ""
    print(f"\ntarget: period end -> published <= {target['limit_s']:g} s over "
          f"{target['periods']} periods ({target['published']} published, SPL "
          f"{target['spl_s']:g} s{during})")
    cpu = [f"{n} {target[f'{n}_cpu_pct']:g} %" for n in ("scheduler", "triggerer")
           if target.get(f"{n}_cpu_pct") is not None]
    if cpu:
        print(f"  (their own processes, a core = 100 %: {', '.join(cpu)})")
    print(f"  p50 {_f(target['p50_s']).strip()} s  {target['verdict_p50']}")
    print(f"  max {_f(target['max_s']).strip()} s  {target['verdict_max']}")
