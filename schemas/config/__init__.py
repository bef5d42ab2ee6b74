"""Where reconf keeps its data, and the per-job configuration contract.

Both are contracts between the CLI, the DAG file and the stages, so they live here (every layer
may import `schemas`). Three modules: `paths` (RECONF_HOME and its stores), `job` (the job table,
declared with pydantic; its field rules in `rules`), `load` (reading the file job by job). A config
error names the file, the field and the rule, and is raised when the file is loaded, before any
cycle runs. Import the names from here: `from schemas.config import JobConfig, Paths, …`.
"""

from schemas.config.job import (
    ExecutionConfig,
    HealingConfig,
    JobConfig,
    ScalingConfig,
    StabilityConfig,
)
from schemas.config.load import JobsFile, load_jobs, read_jobs, resolve_job, valid_jobs
from schemas.config.paths import PROJECT_ROOT, Paths, db_server_uri
from schemas.config.rules import (
    MAX_CATCHUP_PERIODS,
    MAX_LANDING_WAIT_SPL,
    MAX_MIGRATIONS,
    STRATEGY_NAMES,
    UNIT_SETS,
    check_max_migrations,
    parse_duration,
)
from schemas.errors import ConfigError

__all__ = [
    "MAX_CATCHUP_PERIODS",
    "MAX_LANDING_WAIT_SPL",
    "MAX_MIGRATIONS",
    "PROJECT_ROOT",
    "STRATEGY_NAMES",
    "UNIT_SETS",
    "ConfigError",
    "ExecutionConfig",
    "HealingConfig",
    "JobConfig",
    "JobsFile",
    "Paths",
    "ScalingConfig",
    "StabilityConfig",
    "check_max_migrations",
    "db_server_uri",
    "load_jobs",
    "parse_duration",
    "read_jobs",
    "resolve_job",
    "valid_jobs",
]
