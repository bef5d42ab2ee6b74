"""A period's planning problem, assembled once: the rows it reads and the state it builds.

Plan (jobs/plan/stage.py) and fleet (jobs/plan/fleet.py) both come here: `PeriodInputs` holds
everything the plan of one job's period reads from the lake (the three stats tables, where the
plan starts, each facet's rows: read once), and `assemble` builds the `ClusterState` from it,
attaches every facet through the registry (jobs/facets/registry.py) and makes it ready for the
strategy (jobs/facets/dynamic.py `prepare`). The plan stage reads one job's inputs in one round
of queries; fleet reads the stats of all its jobs in one query per table and the facets per job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from jobs.errors import StageError, lake_rows_refused
from jobs.facets.base import Assembly, KeygroupRows, unit_columns
from jobs.facets.dynamic import Prepared, prepare
from jobs.facets.registry import attach_facets
from placement.comm import CommEdges
from placement.model import ClusterState, KeyGroup, Node
from schemas.config import JobConfig
from schemas.constraints import Constraints
from schemas.tables import COMM_STATS, KEYGROUP_STATS, NODE_STATS

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from jobs.lake import Start

__all__ = ["Assembled", "PeriodInputs", "assemble", "build_state", "comm_of"]


@dataclass(frozen=True)
class PeriodInputs:
    """What the plan of one job's period reads, each once."""

    #: keygroup_stats: the lake's Arrow read (the plan stage) or rows (fleet)
    keygroups: KeygroupRows
    nodes: Sequence[Mapping[str, Any]]
    #: comm_stats: rows, or the period's frame (pandas or Arrow, read without a row object)
    edges: Sequence[Mapping[str, Any]] | pd.DataFrame | pa.Table
    start: Start
    #: facet name -> its rows (jobs/facets/registry.py `read_facets`; None: the period has none)
    facets: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Assembled:
    """The state made ready for the strategy, and the strategy's parameters (a facet may add
    some, e.g. the network's queries)."""

    prepared: Prepared
    params: dict[str, Any]


def assemble(job: JobConfig, strategy: str, params: Mapping[str, Any], inputs: PeriodInputs,
             stamp: str) -> Assembled:
    """The period's state for `strategy`; the model's own checks of the rows (a ValueError)
    become a StageError naming the tables (jobs/errors.py `lake_rows_refused`)."""
    with lake_rows_refused(job.job_id, stamp, "keygroup_stats, node_stats, comm_stats and the "
                           "job's facet tables"):
        state = build_state(job, inputs.keygroups, inputs.nodes, inputs.edges,
                            inputs.start.assignment)
        attached = attach_facets(
            Assembly(job, strategy, dict(params), state, inputs.keygroups, inputs.start),
            dict(inputs.facets))
        return Assembled(prepare(job, strategy, attached.state, inputs.keygroups),
                         dict(attached.params))


def build_state(
    job: JobConfig,
    keygroups: KeygroupRows,
    nodes: Sequence[Mapping[str, Any]],
    edges: Sequence[Mapping[str, Any]] | pd.DataFrame | pa.Table,
    current: Mapping[str, str],
) -> ClusterState:
    """The planner's model of one period: loads from the stats, placement from `current`.

    `keygroups` is the lake's Arrow read (the plan stage: columns, no dict per row) or rows;
    either way one `KeyGroup` per unit is built (the strategies' API: docs/architecture.md,
    "The columnar boundary"). Validation refuses missing or non-finite values; a dry run of an
    unvalidated period meets them here and gets the same kind of message instead of a
    TypeError deep in the planner.
    """
    _check_units_finite(job, keygroups)
    _check_finite(job, nodes, ("capacity",), "node", NODE_STATS.name)
    comm = comm_of(job, edges)
    units = unit_columns(keygroups)
    ids, ops, load, size = (units[c] for c in ("keygroup", "operator", "load_pct",
                                                "state_bytes"))
    capacity = {n["node"]: float(n["capacity"]) for n in nodes}
    assignment = {u: current.get(u, node) for u, node in zip(ids, units["node"], strict=True)}
    node_ids = sorted(set(capacity) | set(assignment.values()))
    # the job's topology constraints and node labels (schemas/constraints.py): a node the
    # config does not label has none
    constraints = job.constraints or Constraints()
    labels = constraints.node_labels
    alpha = job.alpha
    return ClusterState(
        nodes=tuple(Node(n, capacity.get(n, 1.0), labels=tuple(sorted(labels.get(n, {}).items())))
                    for n in node_ids),
        keygroups=tuple(
            KeyGroup(id=ids[i], operator=ops[i], load=float(load[i]),
                     state_bytes=float(size[i]), migration_cost=alpha * float(size[i]))
            for i in sorted(range(len(ids)), key=ids.__getitem__)
        ),
        assignment=assignment,
        edges=comm,
        constraints=constraints,
    )


def _check_units_finite(job: JobConfig, keygroups: KeygroupRows) -> None:
    """keygroup_stats' load and state size are finite numbers: over Arrow columns at once
    (the first bad row, in row order, is named as the row check names it), or row by row."""
    columns = ("load_pct", "state_bytes")
    if not isinstance(keygroups, pa.Table):
        _check_finite(job, keygroups, columns, "keygroup", KEYGROUP_STATS.name)
        return
    import numpy as np
    import pyarrow.compute as pc

    first = len(keygroups)
    for column in columns:
        values = pc.cast(keygroups[column], pa.float64())
        bad = pc.or_kleene(pc.is_null(values), pc.invert(pc.is_finite(values))).to_numpy(
            zero_copy_only=False)
        if bad.any():
            first = min(first, int(np.flatnonzero(bad)[0]))
    if first < len(keygroups):
        row = keygroups.slice(first, 1).to_pylist()
        _check_finite(job, row, columns, "keygroup", KEYGROUP_STATS.name)


def comm_of(job: JobConfig, edges: Sequence[Mapping[str, Any]] | pd.DataFrame | pa.Table
            ) -> CommEdges:
    """comm_stats as columns (placement/comm.py): from Arrow (the plan stage's read, in key
    order) or a pandas frame (put in (src, dst) order, so the state never depends on how the
    table's files were laid out) without a Python object per row, or from rows as given; a
    non-finite or missing rate is refused naming its row."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    ordered = isinstance(edges, pa.Table)  # the lake's read is in key order already
    if isinstance(edges, pa.Table):
        edges = edges.select(["src_keygroup", "dst_keygroup", "tuples_per_s"]).to_pandas()
    if not isinstance(edges, pd.DataFrame):
        _check_finite(job, edges, ("tuples_per_s",), "src_keygroup", COMM_STATS.name)
        return CommEdges.from_columns([e["src_keygroup"] for e in edges],
                                      [e["dst_keygroup"] for e in edges],
                                      [float(e["tuples_per_s"]) for e in edges])
    frame = edges if ordered else edges.sort_values(["src_keygroup", "dst_keygroup"],
                                                     kind="stable")
    rate = pd.to_numeric(frame["tuples_per_s"], errors="coerce").to_numpy(np.float64)
    bad = ~np.isfinite(rate)
    if bad.any():
        row = frame.iloc[int(np.flatnonzero(bad)[0])]
        value = row["tuples_per_s"]
        _check_finite(job, [{"src_keygroup": row["src_keygroup"],
                             "tuples_per_s": None if pd.isna(value) else float(value)}],
                      ("tuples_per_s",), "src_keygroup", COMM_STATS.name)
    return CommEdges.from_columns(frame["src_keygroup"].astype(str),
                                  frame["dst_keygroup"].astype(str), rate)


def _check_finite(job: JobConfig, rows: Sequence[Mapping[str, Any]], columns: tuple[str, ...],
                  key: str, table: str) -> None:
    for row in rows:
        for column in columns:
            value = row.get(column)
            if value is None or not math.isfinite(float(value)):
                raise StageError(
                    f"{table}.{column} of {row.get(key)!r} is {value!r}; the planner needs a "
                    "finite number",
                    where=f"job {job.job_id!r}, table {table}",
                    fix="run `reconf validate` on the period: it names every bad value; fix the "
                        "runtime's metrics and land the period again",
                )
