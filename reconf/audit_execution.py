"""`reconf audit`'s lines on executing a plan: a rollback, the move schedule, and the measured
execution (placement/waves.py, runtime/execution.py, jobs/plan/applied.py).

Two measured executions can show on one run: `applied` is how the runtime applied *this* run's
version (logged on it once the runtime reported it, with the per-wave metrics), `execution` is
the schedule the runtime ran last when this plan was made (the previous version's), kept with
the plan as the state it started from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from schemas.reasons import shown_reason
from schemas.schedule import OVER_IN_FLIGHT, OVER_TARGET
from schemas.tracking import Artifact

__all__ = ["execution_lines"]


def execution_lines(r: Mapping[str, Any]) -> list[str]:
    """The report's rollback, schedule and execution lines (none for a run without them)."""
    lines: list[str] = []
    rb = r.get("rollback")
    if rb:
        lines.append(f"  rollback to v{rb['to_version']}: {shown_reason(rb['reason'], '    ')}"
                     + (f" (budget overridden: {shown_reason(rb['budget_override'], '    ')})"
                        if rb["budget_override"] else ""))
    sched = r.get("schedule")
    if sched:
        lim = sched["limits"]
        rate = lim.get("max_bytes_per_second")
        lines.append(
            f"  schedule: {sched['moves']} move(s) in {sched['waves']} wave(s), "
            f"{sched['over_ceiling']} over the ceiling; limits per node "
            f"{_limit(lim['max_moves_per_node'])}, per wave {_limit(lim['max_moves_per_wave'])}, "
            f"bytes {_limit(lim['max_bytes_per_wave'])}, ceiling "
            f"{_limit(lim['ceiling_pct'], ' %')}"
            + ("" if rate is None else f", rate {rate:.6g} B/s (at least "
               f"{sched.get('expected_s') or 0.0:.2f} s)"))
        lines += [f"    wave {w['wave']}: {w['moves']} move(s), {w['state_bytes']:.0f} B, at most "
                  f"{w['max_per_node']} per node, peak {w['peak_pct']:.1f} %"
                  + ("" if w.get("expected_s") is None else f", at least {w['expected_s']:.2f} s")
                  + (_over(w.get("over_cause")) if w["over_ceiling"] else "")
                  for w in sched["per_wave"]]
    ks = r.get("kafka_streams")
    if ks:  # what Kafka Streams measured (runtime/kafka_streams/source.py, loaded.py)
        lines.append("  kafka streams (measured): " + ", ".join(
            f"{k.removeprefix('kstreams_')} {v:.6g}" for k, v in sorted(ks.items())))
        if Artifact.KSTREAMS_LOAD_PNG in r.get("artifacts", ()):
            lines.append(f"  kafka streams latency and lag per second: artifact "
                         f"{Artifact.KSTREAMS_LOAD_PNG}")
    for key, title in (("applied", "applied by the runtime"),
                       ("execution", "the runtime's last schedule")):
        ex = r.get(key)
        if ex:
            lines.append(f"  {title}: {ex.get('summary', ex.get('status'))}")
            lines += [_wave(w) for w in ex.get("runs", ())]
    return lines


#: why a wave is over the ceiling, in the words of docs/algorithms.md ("When the plan itself
#: breaks the ceiling"); a run logged before the cause was recorded gets both
_OVER = {OVER_TARGET: " (OVER the ceiling: the plan's target breaks it)",
         OVER_IN_FLIGHT: " (OVER the ceiling while the wave runs: the plan's target keeps it, but "
                         "the moving unit counts on both nodes and no order of the moves keeps "
                         "it, as when two full nodes swap units)"}
_OVER_UNKNOWN = (" (OVER the ceiling: the plan's target breaks it, or two full nodes swap "
                 "units)")


def _over(cause: Any) -> str:
    return _OVER.get(cause, _OVER_UNKNOWN) if isinstance(cause, str) else _OVER_UNKNOWN


def _limit(value: Any, unit: str = "") -> str:
    """A schedule limit as an operator reads it: an unset one (None in the manifest) is "none",
    never Python's `None`, and a set one carries its unit."""
    return "none" if value is None else f"{value}{unit}"


def _wave(w: Mapping[str, Any]) -> str:
    rate = w.get("bytes_per_s")
    return (f"    wave {w['wave']}: {len(w['moved'])} moved, {w['state_bytes']:.0f} B, "
            f"{w['seconds']:.2f} s" + ("" if rate is None else f", {rate:.6g} B/s")
            + (f", FAILED: {', '.join(w['failed'])}" if w["failed"] else ""))
