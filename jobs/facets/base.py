"""What a facet is to the pipeline: its datasets, tables and suites, and its three stage steps.

A `Facet` (one per facet module, listed once in jobs/facets/registry.py) declares the landing
datasets it brings (schemas/landing.py `FACET_SCHEMAS`), the Delta tables collect writes them to,
the GE suites validate runs on them (schemas/expectations/<suite>.json), and three steps:

- `validate(ctx, checked, report)`: the report with the facet's verdict added (unchanged for a
  period whose collect did not write the facet);
- `read(ctx)`: the period's rows the plan needs (None, without reading a table, when the period
  has none);
- `attach(assembly, rows)`: the plan's state (and the strategy's parameters) with the facet.

Plan and fleet assemble every state through these steps in registry order (jobs/plan/assemble.py),
so a new facet is one module and one line in the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa

from placement.model import ClusterState
from schemas.config import JobConfig
from schemas.tables import Table

if TYPE_CHECKING:
    from jobs.context import StageContext
    from jobs.lake import Start
    from jobs.validate.suites import ValidationReport

__all__ = ["UNIT_COLUMNS", "Assembly", "Checked", "Facet", "KeygroupRows", "unit_columns"]

#: keygroup_stats of a period: the lake's Arrow columns (the plan stage) or rows (fleet, tests)
KeygroupRows: TypeAlias = Sequence[Mapping[str, Any]] | pa.Table
#: the columns of keygroup_stats the plan reads
UNIT_COLUMNS = ("keygroup", "operator", "node", "load_pct", "state_bytes")


def unit_columns(keygroups: KeygroupRows) -> dict[str, list[Any]]:
    """The plan's columns of keygroup_stats as lists, in row order: from Arrow one list per
    column (no dict per row), from rows as given."""
    if isinstance(keygroups, pa.Table):
        return {c: keygroups[c].to_pylist() for c in UNIT_COLUMNS}
    return {c: [k[c] for k in keygroups] for c in UNIT_COLUMNS}


@dataclass(frozen=True)
class Checked:
    """What validate knows of the period when it runs the facets' suites: the units that ran
    (reported in keygroup_stats) and the nodes the runtime owns."""

    running: frozenset[str]
    known_nodes: frozenset[str]


@dataclass(frozen=True)
class Assembly:
    """A period's state while the facets are attached: the job, the strategy that will plan it
    and its parameters, the key-group rows of the period and where the plan starts."""

    job: JobConfig
    strategy: str
    params: Mapping[str, Any]
    state: ClusterState
    kg_rows: KeygroupRows
    start: Start


@dataclass(frozen=True)
class Facet:
    """One facet's declaration (module doc)."""

    name: str
    datasets: tuple[str, ...]
    tables: tuple[Table, ...]
    suites: tuple[str, ...]
    validate: Callable[[StageContext, Checked, ValidationReport], ValidationReport]
    read: Callable[[StageContext], Any]
    attach: Callable[[Assembly, Any], Assembly]
