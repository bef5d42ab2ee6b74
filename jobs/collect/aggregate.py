"""collect's aggregation contract: one period's landed samples -> its tables' rows, as Arrow.

Two engines implement it, row for row and refusal for refusal: jobs/collect/native.py (pyarrow
and numpy in the stage's process) and jobs/collect/by_spark.py (the stage's Spark session, for
`RECONF_LAKE_IO=spark`: a driver on a cluster). The stage (jobs/collect/stage.py) takes the one
its lake's engine goes with. What both do:

- the window [period_end - spl, period_end) on ``ts`` (a sample without ts lies outside it);
- the refusals below, with these texts, the first failing kind (key groups, edges, nodes)
  winning: no samples of key groups or nodes inside the window (unless a dynamic job's every
  unit has left), a counter below 0 (capacity at or below 0), two samples of the same key and ts;
- per key (a null key is a key, as in Spark's ``groupBy``): sums that are null when any sample's
  value is null (NaN propagates), the sample count, and ``max_by(x, ts)``;
- ``load_pct``, ``tuples_per_s``, ``utilisation_pct`` by the same floating-point operations,
  and the stamp columns job_id, period_end, period_start (UTC);
- the facet datasets' rows inside the window, copied as they are.

The result is `CollectedFrames`: per Delta table an Arrow table of exactly its schema (the
aggregate, one row per key, not the samples), and the rows each sample kind's table gets.
tests/jobs/test_collect_contract.py holds both engines to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from jobs.errors import StageError
from schemas.landing import EDGES, KEYGROUPS, NODES, format_period_end

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["COUNTERS", "SAMPLE_KEYS", "Aggregation", "CollectedFrames", "Period"]

#: Per sample kind: the columns that identify a sample (with ts) and the counters that must be
#: finite and >= 0 (capacity must be > 0: it divides).
SAMPLE_KEYS = {KEYGROUPS: ("keygroup",), EDGES: ("src_keygroup", "dst_keygroup"), NODES: ("node",)}
COUNTERS = {KEYGROUPS: ("tuples_in", "tuples_out", "cpu_ms", "state_bytes"),
            EDGES: ("tuples", "bytes"), NODES: ("cpu_ms", "capacity")}


@dataclass(frozen=True)
class CollectedFrames:
    """A period's rows per Delta table, and the rows each sample kind's table gets.

    A table's rows are in `tables` (Arrow, in this process) or, from the Spark engine's
    `spark_aggregates`, in `on_cluster` (a Spark DataFrame not yet computed, which the stage
    writes from Spark: jobs/collect/by_spark.py `replace_from_spark`)."""

    tables: dict[str, pa.Table]  # Delta table name -> the period's rows (its columns and types)
    groups: dict[str, int]  # KEYGROUPS/EDGES/NODES kind -> rows its table gets
    on_cluster: dict[str, DataFrame] = field(default_factory=dict)  # name -> rows, on Spark


class _Job(Protocol):
    @property
    def job_id(self) -> str: ...

    @property
    def spl(self) -> Any: ...  # a timedelta


#: (job, period_end, landed files by kind, facet files by kind, landing directory) -> frames
Aggregation = Callable[[Any, datetime, dict[str, list[Path]], dict[str, list[Path]], Path],
                       CollectedFrames]


@dataclass(frozen=True)
class Period:
    """The period being collected: its window, its stamp and the texts of its refusals."""

    job_id: str
    start: datetime
    end: datetime
    landed: Path
    dynamic: bool = False

    @classmethod
    def of(cls, job: _Job, period_end: datetime, landed: Path) -> Period:
        return cls(job.job_id, period_end - job.spl, period_end, landed,
                   bool(getattr(job, "dynamic", False)))

    @property
    def period_ms(self) -> float:
        return (self.end - self.start).total_seconds() * 1000.0

    @property
    def window(self) -> str:
        return f"[{format_period_end(self.start)}, {format_period_end(self.end)})"

    @property
    def land_cmd(self) -> str:
        return f"reconf land --job {self.job_id} --period-end {format_period_end(self.end)}"

    def refuse(self, kind: str, what: str) -> StageError:
        return StageError(what, where=str(self.landed / kind),
                          fix=f"fix the runtime's {kind} samples and land the period again "
                              f"(`{self.land_cmd}`)")

    def may_be_empty(self, kind: str, total: int) -> bool:
        """No samples inside the window is fine for edges, and for a dynamic job's key groups
        when it landed none at all: every unit has left (DESIGN.md, "Units may come and go")."""
        return kind == EDGES or (self.dynamic and kind == KEYGROUPS and total == 0)

    def no_samples(self, kind: str, total: int) -> StageError:
        return self.refuse(kind, f"the period has no {kind} samples inside its window "
                                 f"{self.window} ({total} sample(s) lie outside it)")

    def broken(self, kind: str, count: int, example: Any) -> StageError:
        rule = " or ".join(f"{c} {'> 0' if c == 'capacity' else '>= 0'}" for c in COUNTERS[kind])
        return self.refuse(kind, f"{count} {kind} sample(s) break the rule {rule}, e.g. {example}")

    def repeated(self, kind: str, count: int, example: Any) -> StageError:
        keys: Sequence[str] = SAMPLE_KEYS[kind]
        return self.refuse(kind, f"{count} {kind} sample(s) repeat another sample's "
                                 f"({', '.join(keys)}, ts), e.g. {example}; summing them would "
                                 "inflate the load")
