"""The Delta tables under ``lake/`` (DESIGN.md, "Delta tables"), as Spark DDL.

Every table is partitioned by ``job_id``; a stage's write for one period replaces exactly that
period (``replaceWhere``), so reruns leave one copy. ``plans`` and ``plan_moves`` are the
exception: each plan of a period is an attempt with its own ``plan_id`` (jobs/plan/attempts.py), and a
write replaces only that attempt's rows, so a published plan is never rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["TABLES", "Table"]


@dataclass(frozen=True)
class Table:
    name: str
    ddl: str  # Spark DDL column list
    key: tuple[str, ...]  # the columns that identify one row

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(part.strip().split()[0] for part in self.ddl.split(","))

    def arrow_schema(self) -> pa.Schema:
        """The DDL as Arrow types, as Delta stores them (timestamps in microseconds, UTC)."""
        import pyarrow as pa

        types = {"STRING": pa.string(), "BIGINT": pa.int64(), "DOUBLE": pa.float64(),
                 "TIMESTAMP": pa.timestamp("us", tz="UTC")}
        return pa.schema([(name, types[kind]) for name, kind in
                          (part.strip().split()[:2] for part in self.ddl.split(","))])


KEYGROUP_STATS = Table(
    "keygroup_stats",
    "job_id STRING, period_end TIMESTAMP, period_start TIMESTAMP, keygroup STRING, "
    "operator STRING, node STRING, tuples_in BIGINT, tuples_out BIGINT, cpu_ms DOUBLE, "
    "load_pct DOUBLE, state_bytes BIGINT, samples BIGINT",
    ("job_id", "period_end", "keygroup"),
)
COMM_STATS = Table(
    "comm_stats",
    "job_id STRING, period_end TIMESTAMP, src_keygroup STRING, dst_keygroup STRING, "
    "tuples BIGINT, bytes BIGINT, tuples_per_s DOUBLE",
    ("job_id", "period_end", "src_keygroup", "dst_keygroup"),
)
NODE_STATS = Table(
    "node_stats",
    "job_id STRING, period_end TIMESTAMP, node STRING, capacity DOUBLE, cpu_ms DOUBLE, "
    "utilisation_pct DOUBLE, samples BIGINT",
    ("job_id", "period_end", "node"),
)
PLANS = Table(
    "plans",
    "job_id STRING, period_end TIMESTAMP, plan_id STRING, strategy STRING, status STRING, "
    "solver_status STRING, max_migrations BIGINT, max_migration_cost DOUBLE, "
    "time_limit_s DOUBLE, load_distance_before DOUBLE, load_distance_after DOUBLE, "
    "lower_bound DOUBLE, migrations BIGINT, migration_cost DOUBLE, solve_s DOUBLE, "
    "base_version BIGINT, mlflow_run_id STRING, message STRING, plan_json STRING",
    ("job_id", "period_end", "plan_id"),  # one row per plan attempt (jobs/plan/stage.py `plan_id`)
)
PLAN_MOVES = Table(
    "plan_moves",
    "job_id STRING, period_end TIMESTAMP, plan_id STRING, keygroup STRING, src_node STRING, "
    "dst_node STRING, cost DOUBLE",
    ("job_id", "period_end", "plan_id", "keygroup"),
)
ASSIGNMENTS = Table(
    "assignments",
    "job_id STRING, version BIGINT, keygroup STRING, node STRING",
    ("job_id", "version", "keygroup"),
)
# Facet tables of a dynamic job (units = "dynamic"; Herding, Zong et al. 2015 §2): a source's rate
# w(s), and which sources each running unit reads (where it ran at the period's end).
SOURCE_STATS = Table(
    "source_stats",
    "job_id STRING, period_end TIMESTAMP, source STRING, tuples_per_s DOUBLE, bytes_per_s DOUBLE",
    ("job_id", "period_end", "source"),
)
SUBSCRIPTIONS = Table(
    "subscriptions",
    "job_id STRING, period_end TIMESTAMP, keygroup STRING, node STRING, source STRING",
    ("job_id", "period_end", "keygroup", "source"),
)
# A job declaring its input streams (ROD, Xing et al. 2006 §2.2; schemas/streams.py): each
# stream's rate r_k, and each unit's fitted load coefficient l_jk (% of a node per tuple/s) over
# the last `periods` periods (jobs/facets/load_model.py), with the fit's relative residual.
STREAM_STATS = Table(
    "stream_stats",
    "job_id STRING, period_end TIMESTAMP, stream STRING, tuples_per_s DOUBLE",
    ("job_id", "period_end", "stream"),
)
LOAD_MODEL = Table(
    "load_model",
    "job_id STRING, period_end TIMESTAMP, keygroup STRING, stream STRING, coefficient DOUBLE, "
    "residual DOUBLE, periods BIGINT",
    ("job_id", "period_end", "keygroup", "stream"),
)
# A wide-area job's measured links (SPRAWL, Mei 2015; jobs/facets/links.py): each link's one-way
# latency and available bandwidth this period, overlaid on the topology file's links by plan.
NETWORK_LINKS = Table(
    "network_links",
    "job_id STRING, period_end TIMESTAMP, a STRING, b STRING, latency_ms DOUBLE, "
    "bandwidth DOUBLE",
    ("job_id", "period_end", "a", "b"),
)
# A top-k communication landing's per-unit totals (jobs/facets/comm.py): the tuples of all of a
# unit's outgoing pairs; comm_stats holds the heaviest of them, the rest is this minus those.
COMM_TOTALS = Table(
    "comm_totals",
    "job_id STRING, period_end TIMESTAMP, src_keygroup STRING, tuples BIGINT",
    ("job_id", "period_end", "src_keygroup"),
)
ASSIGNMENT_VERSIONS = Table(
    "assignment_versions",
    "job_id STRING, version BIGINT, plan_id STRING, period_end TIMESTAMP, checksum STRING, "
    "status STRING, manifest_path STRING, published_at TIMESTAMP",
    ("job_id", "version"),
)

# Healing between periods (jobs/heal/): one row per finding healed, refused or alerted, keyed by
# what it heals (the health report's id and its nodes), never by when it ran.
HEALINGS = Table(
    "healings",
    "job_id STRING, heal_id STRING, report_id STRING, reported_at TIMESTAMP, nodes STRING, "
    "status STRING, version BIGINT, plan_id STRING, moves BIGINT, mlflow_run_id STRING, "
    "message STRING, healed_at TIMESTAMP",
    ("job_id", "heal_id"),
)

TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        KEYGROUP_STATS,
        COMM_STATS,
        NODE_STATS,
        PLANS,
        PLAN_MOVES,
        ASSIGNMENTS,
        ASSIGNMENT_VERSIONS,
        SOURCE_STATS,
        SUBSCRIPTIONS,
        STREAM_STATS,
        LOAD_MODEL,
        NETWORK_LINKS,
        COMM_TOTALS,
        HEALINGS,
    )
}
