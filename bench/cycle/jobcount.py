"""The Spark work of each stage, counted: jobs, SQL queries, stages, Delta commits.

Seconds on a shared 2-core machine vary with the other processes' turns; the number of Spark
jobs a stage triggers does not. `reconf bench cycle` points every Spark driver it starts (the
Connect server, the `+cluster` stage workers' sessions) at one event-log directory
(`RECONF_SPARK_EVENT_LOG`, jobs/spark/conf.py) and reads what each stage added to it: Spark's
own record of every job (`SparkListenerJobStart`), SQL execution and stage, written by the
driver's listener bus. Delta commits are the new `_delta_log/*.json` files of the lake. Only
what the bench ran in between is counted: the stages run one at a time.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["EventLogCounter", "SparkWork"]

_JOB = '{"Event":"SparkListenerJobStart"'
_JOB_END = '{"Event":"SparkListenerJobEnd"'
_STAGE = '{"Event":"SparkListenerStageSubmitted"'
_SQL = '{"Event":"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"'


@dataclass(frozen=True)
class SparkWork:
    """What one stage asked of Spark: jobs, stages, SQL executions, Delta commits, and the jobs
    by their description (Delta's snapshot and commit jobs name themselves; a query's jobs
    carry its call site)."""

    jobs: int = 0
    stages: int = 0
    sql: int = 0
    commits: int = 0
    described: dict[str, int] = field(default_factory=dict)

    def row(self, stage: str) -> dict[str, object]:
        return {f"{stage}_jobs": self.jobs, f"{stage}_stages": self.stages,
                f"{stage}_sql": self.sql, f"{stage}_commits": self.commits,
                f"{stage}_job_kinds": dict(self.described)}


_KINDS = (("Compute snapshot", "delta snapshot"), ("Filtering files", "delta file listing"),
          ("Finding files to rewrite", "delta rewrite scan"), ("write_operation", "write"),
          ("Writing", "write"), ("checkpoint", "delta checkpoint"))


def _kind(line: str) -> str:
    """A job's kind from its description: Delta names its snapshot, file-listing and rewrite
    jobs; a write names itself (a Connect job's description is its plan); the rest: "query"."""
    try:
        props = json.loads(line).get("Properties", {})
    except ValueError:
        return "?"
    text = str(props.get("spark.job.description") or props.get("callSite.short") or "")
    return next((kind for key, kind in _KINDS if key in text), "query")


class EventLogCounter:
    """Reads the event logs under `events` and the Delta logs under `lake` incrementally;
    `take()` returns what was added since the previous call."""

    def __init__(self, events: Path) -> None:
        self.events: Path = events
        self.lake: Path | None = None
        self._offsets: dict[str, int] = {}
        self._commits = 0
        self._open = 0  # jobs started and not yet ended, over all logs

    def start(self, lake: Path) -> None:
        """Count from now on, the commits of `lake`: what ran before (a warm-up) is dropped."""
        self.lake = lake
        self.take()

    def _count_commits(self) -> int:
        if self.lake is None or not self.lake.is_dir():
            return 0
        return sum(1 for _ in self.lake.glob("*/_delta_log/*.json"))

    def _read_new(self) -> list[str]:
        lines: list[str] = []
        for path in sorted(self.events.rglob("*")):
            if not path.is_file() or path.name.startswith(".") or "appstatus" in path.name:
                continue
            # a log renamed at the session's end is the same log: keep its offset
            key = path.name.removesuffix(".inprogress")
            with path.open("rb") as handle:
                handle.seek(self._offsets.get(key, 0))
                data = handle.read()
            end = data.rfind(b"\n") + 1  # a line being written is read next time
            self._offsets[key] = self._offsets.get(key, 0) + end
            lines += data[:end].decode("utf-8", "replace").splitlines()
        return lines

    def take(self, settle_s: float = 0.6, timeout_s: float = 15.0) -> SparkWork:
        """The work since the last call, once the listener bus has written every started job's
        end and nothing new for `settle_s` (its queue lags the driver's answer)."""
        lines = self._read_new()
        deadline, quiet_since = time.monotonic() + timeout_s, time.monotonic()
        while time.monotonic() < deadline:
            open_jobs = self._open + sum(ln.startswith(_JOB) for ln in lines) - sum(
                ln.startswith(_JOB_END) for ln in lines)
            time.sleep(0.2)
            more = self._read_new()
            if more:
                lines += more
                quiet_since = time.monotonic()
            elif open_jobs <= 0 and time.monotonic() - quiet_since >= settle_s:
                break
        jobs = [ln for ln in lines if ln.startswith(_JOB)]
        self._open += len(jobs) - sum(ln.startswith(_JOB_END) for ln in lines)
        commits = self._count_commits()
        work = SparkWork(len(jobs), sum(ln.startswith(_STAGE) for ln in lines),
                         sum(ln.startswith(_SQL) for ln in lines), commits - self._commits,
                         dict(Counter(_kind(ln) for ln in jobs).most_common()))
        self._commits = commits
        return work


def print_work(rows: list[dict[str, object]]) -> None:
    """The Spark work of each stage of the cycles that ran on Spark: jobs / SQL queries /
    Delta commits (machine-independent, unlike the seconds above)."""
    from bench.cycle.stage import STAGES

    counted = [r for r in rows if f"{STAGES[0]}_jobs" in r]
    if not counted:
        return
    print("\nSpark work per stage (jobs / SQL queries / Delta commits, from Spark's event log)\n"
          f"{'mode':>15} {'job':>8} " + " ".join(f"{s:>14}" for s in STAGES) + f" {'cycle':>14}")
    for r in counted:
        cells = [(int(str(r[f"{s}_jobs"])), int(str(r[f"{s}_sql"])), int(str(r[f"{s}_commits"])))
                 for s in STAGES]
        total = tuple(sum(c[i] for c in cells) for i in range(3))
        print(f"{r['mode']!s:>15} {r['job']!s:>8} "
              + " ".join(f"{'/'.join(map(str, c)):>14}" for c in (*cells, total)))
