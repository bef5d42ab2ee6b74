"""Each DAG cycle's outcome, per period, and the gate a cycle passes before it starts.

A cycle plans from what the runtime runs, so two cycles must not interleave, and a cycle whose
period failed must not be overtaken silently: if it were, fixing that period and running it
again would plan it from a newer state than its statistics describe (its plan is then recorded
as historical and never published). Airflow's `depends_on_past` expressed this per task and
wedged live jobs: a cleared failed run waited for the active-run slot that the next run held
while that run waited on it, and a task added to the DAG (approval) waited forever on a previous
run that never had it. So the DAG has no `depends_on_past`; instead each cycle records its
outcome here, and the next cycle's first task reads it (`decide`):

- the previous run ended *success* (published, or not published on purpose: a dry run, a
  rejected or stale plan), or its period is *lost* (it never landed, or an operator gave it up:
  `reconf period lost`), or it *published* and failed later: go on;
- the previous run *failed* (a stage refused its input, or crashed past its retries, so the
  record says `failed` or only `started`): the cycle is **held**: it ends at once, failed,
  naming the period it waits for and the two ways on, so it never holds the run slot that the
  failed period's re-run needs;
- a held run is transparent: the gate looks through it to the period it was held behind, so
  once that period is re-run or given up the job's next period goes ahead by itself.

The record lives beside the period's other markers (`reports/<job>/<period_end>/cycle.json`,
written atomically): the newest outcome and every earlier one, for the audit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from schemas.config import Paths
from schemas.landing import format_period_end, parse_period_end
from schemas.manifest import atomic_write_bytes

__all__ = ["CycleState", "Decision", "Outcome", "cycle_path", "decide", "read_outcome",
           "record_outcome"]

#: how many held runs the gate looks through before it gives up looking (a safety bound)
_MAX_HOPS = 1000


class CycleState(StrEnum):
    """What became of a period's cycle (the newest attempt's)."""

    STARTED = "started"  # the gate let it through; a later record says how it ended
    PUBLISHED = "published"
    NOT_PUBLISHED = "not_published"  # on purpose: dry run, rejected, timed out, stale, historical
    FAILED = "failed"  # a stage refused its input
    LOST = "lost"  # never landed, or given up by an operator
    HELD = "held"  # not run: behind a failed period

    @property
    def settled(self) -> bool:
        """Whether a later cycle may go on after this one, whatever Airflow's run state says."""
        return self in (CycleState.PUBLISHED, CycleState.NOT_PUBLISHED, CycleState.LOST)


@dataclass(frozen=True)
class Outcome:
    """One record: the period's state, why, and who (the Airflow run, or an operator)."""

    period_end: str
    state: CycleState
    detail: str
    at: str
    run_id: str | None = None
    stage: str | None = None
    behind: str | None = None  # HELD: the period it waits for

    def to_json(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, CycleState) else v)
                for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: Any) -> Outcome | None:
        """The record of a document, or None when it is not one (a damaged record is no
        record: the gate then goes by Airflow's state of the run)."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(str(data["period_end"]), CycleState(data["state"]), str(data["detail"]),
                       str(data["at"]), _opt(data.get("run_id")), _opt(data.get("stage")),
                       _opt(data.get("behind")))
        except (KeyError, ValueError):
            return None


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def cycle_path(paths: Paths, job_id: str, period_end: datetime) -> Path:
    return paths.reports / job_id / format_period_end(period_end) / "cycle.json"


def read_outcome(paths: Paths, job_id: str, period_end: datetime) -> Outcome | None:
    """The period's newest outcome (None: no cycle of it ever passed the gate)."""
    data = _read(cycle_path(paths, job_id, period_end))
    return None if data is None else Outcome.from_json(data.get("current"))


def record_outcome(paths: Paths, job_id: str, period_end: datetime, state: CycleState,
                   detail: str, *, run_id: str | None = None, stage: str | None = None,
                   behind: datetime | None = None, at: datetime | None = None) -> Outcome:
    """Record the period's newest outcome; the one it replaces moves to the history."""
    outcome = Outcome(format_period_end(period_end), state, detail.strip(),
                      (at or datetime.now(UTC)).isoformat(timespec="seconds"), run_id, stage,
                      None if behind is None else format_period_end(behind))
    path = cycle_path(paths, job_id, period_end)
    old = _read(path) or {}
    history = [h for h in old.get("history", []) if isinstance(h, dict)]
    if isinstance(old.get("current"), dict):
        history.append(old["current"])
    document = {"job_id": job_id, "current": outcome.to_json(), "history": history}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(document, indent=2, sort_keys=True).encode())
    return outcome


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class Decision:
    """The gate's verdict: go on, or hold behind `behind` (the period to re-run or give up)."""

    go: bool
    why: str
    behind: datetime | None = None
    rerunning: bool = False  # the period held behind is queued or running again right now


#: Airflow's run states as the gate reads them
_DONE_OK = "success"
_ACTIVE = ("queued", "running")


def decide(previous: datetime | None, previous_state: str | None,
           outcome_of: Callable[[datetime], Outcome | None],
           state_of: Callable[[datetime], str | None]) -> Decision:
    """May the cycle after `previous` (the DAG's previous run: its logical date and Airflow
    state; None: there is none) go on? `outcome_of(period)` reads this module's record,
    `state_of(period)` Airflow's state of that period's run (None: no run)."""
    period, state = previous, previous_state
    for _ in range(_MAX_HOPS):
        if period is None:
            return Decision(True, "no earlier run")
        outcome = outcome_of(period)
        if outcome is not None and outcome.state is CycleState.HELD and outcome.behind:
            try:  # a held run did nothing: look at the period it waited for
                period = parse_period_end(outcome.behind)
            except ValueError:
                return Decision(True, f"a held run names no period ({outcome.behind!r})")
            state = state_of(period)
            continue
        stamp = format_period_end(period)
        if state == _DONE_OK:
            return Decision(True, f"period {stamp}'s run succeeded")
        if state in _ACTIVE:
            return Decision(False, f"period {stamp} is being run again ({state})", period,
                            rerunning=True)
        if outcome is not None and outcome.state.settled:
            return Decision(True, f"period {stamp} is {outcome.state}: {outcome.detail}")
        if outcome is None and state is None:
            return Decision(True, f"period {stamp} left no record")
        what = (f"{outcome.stage} failed: {outcome.detail}" if outcome is not None
                and outcome.state is CycleState.FAILED and outcome.stage
                else "its run failed" + (" (it stopped without a record: a crash, a timeout "
                                         "or retries used up)" if outcome is None
                                         or outcome.state is CycleState.STARTED else ""))
        return Decision(False, f"period {stamp}: {what}", period)
    return Decision(True, "more held runs than the gate looks through")
