"""A manifest's move schedule on Kafka Streams, as the Python side sees it.

ReconfTaskAssignor applies the waves itself (WaveSteps.java): it hands out wave k's assignment,
and wave k+1 at the first follow-up rebalance where every task wave k moves reports RUNNING on its
new instance (restored and processing). It records its progress in runtime/execution.py's file
and format (``<state_root>/<job>/execution.json``, plus per wave the changelog records the moved
tasks had to restore) and honours `reconf stop`'s flag between waves. This module reads that record
for the period report and for `apply`, which waits for the schedule to end.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from runtime.execution import Execution
from runtime.kafka_streams.cluster import Cluster, wait_for
from runtime.source import ApplyResult

__all__ = ["await_waves", "partial", "report", "started_ms", "summary"]


def summary(ex: dict[str, Any]) -> str:
    """runtime/execution.py's progress line, with the changelog records Kafka Streams restored."""
    return (f"{Execution.from_dict(ex).summary()}; "
            f"{int(ex.get('changelog_records', 0))} changelog record(s) restored")


def started_ms(cluster: Cluster, version: int) -> int:
    """When the assignor started `version`'s waves (epoch ms; a large number if it did not): the
    moved tasks' restores end after it, the applied version's time comes after the last wave."""
    ex = cluster.execution()
    if ex is None or int(ex["version"]) != version:
        return 2**62
    return int(datetime.fromisoformat(str(ex["started_at"]).replace("Z", "+00:00")).timestamp()
               * 1000)


def partial(cluster: Cluster) -> dict[str, Any] | None:
    """The assignor's execution while it runs a partial assignment (a schedule newer than the
    applied version that is running, stopped or failed), else None."""
    ex = cluster.execution()
    applied = cluster.applied()
    if ex is None or ex["status"] == "done":
        return None
    if applied is not None and int(ex["version"]) <= int(applied["version"]):
        return None
    return ex


def report(cluster: Cluster) -> dict[str, Any] | None:
    """The execution for the period report: runtime/execution.py's fields, the summary line and
    per wave its changelog records; the assignor's rebased waves (`plan`) left out."""
    ex = cluster.execution()
    if ex is None:
        return None
    return {**{k: v for k, v in ex.items() if k != "plan"}, "summary": summary(ex)}


def await_waves(cluster: Cluster, version: int, waves: int, limit_s: float) -> ApplyResult | None:
    """Wait until the assignor has run `version`'s schedule to its end; None when every wave ran
    (the caller then checks the final assignment), else the partial outcome. A schedule of
    `version` that stopped or failed before keeps its partial assignment (`unchanged`), as the
    replay runtime does: the next published version starts from it."""
    def ended() -> dict[str, Any] | None:
        ex = cluster.execution()
        if ex is None or int(ex["version"]) != version or ex["status"] == "running":
            return None
        return ex

    ex = cluster.execution()
    applied = cluster.applied()
    old = int(applied["version"]) if applied is not None else None
    if ex is not None and int(ex["version"]) == version and ex["status"] in ("stopped", "failed"):
        return ApplyResult("unchanged", old, f"keeps the partial assignment of {summary(ex)}; "
                           "the next published version starts from it")
    try:
        ex = wait_for(ended, limit_s, f"Kafka Streams running the {waves} wave(s) of v{version}",
                      every_s=0.5, logs=cluster.home / "logs")
    except TimeoutError as exc:
        return ApplyResult("refused", old, f"{exc}; see the instances' logs in "
                           f"{cluster.home / 'logs'} (ReconfTaskAssignor says why)")
    if ex["status"] == "done":
        return None
    moved = tuple(sorted(t for r in ex["runs"] for t in r["moved"]))
    return ApplyResult("partial", old, summary(ex), moved)
