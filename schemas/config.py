"""Where reconf keeps its data, and the per-job configuration contract.

Both are contracts between the CLI, the DAG file and the stages, so they live here (every layer
may import `schemas`). A config error names the file, the field and the rule, and is raised when
the file is loaded, before any cycle runs.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeAlias

from schemas.strategies import PIPELINE_PARAMS, STRATEGIES
from schemas.streams import LoadModelConfig, parse_load_model

__all__ = [
    "MAX_MIGRATIONS",
    "PROJECT_ROOT",
    "STRATEGY_NAMES",
    "UNIT_SETS",
    "ConfigError",
    "JobConfig",
    "JobsFile",
    "Paths",
    "ScalingConfig",
    "check_max_migrations",
    "db_server_uri",
    "load_jobs",
    "parse_duration",
    "read_jobs",
    "resolve_job",
]

Scalar: TypeAlias = int | float | str | bool
PROJECT_ROOT = Path(__file__).resolve().parents[1]
_DEFAULT_CONFIG = PROJECT_ROOT / "config" / "jobs.toml"
_JOB_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_DURATION = re.compile(r"^\s*(\d+)\s*(s|m|h|d)\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_STRATEGY_KEYS = {
    "spl",
    "strategy",
    "max_migrations",
    "max_migration_cost",
    "solver_time_limit_s",
    "alpha",
    "start_date",
    "source",
    "scaling",
    "strategy_params",
    "topology",
    "units",
    "shadow_strategies",
    "shadow_time_budget_s",
    "load_model",
    "catchup_periods",
    "landing_timeout",
}
# The strategies' names, from their one table (schemas/strategies.py, which the registry reads).
STRATEGY_NAMES = frozenset(STRATEGIES)
_SCALING_KEYS = {"min_nodes", "max_nodes", "target_utilisation", "cooldown_cycles", "max_ld"}


class ConfigError(ValueError):
    """A configuration value is wrong; the message says which file, which field, and the rule."""


def db_server_uri() -> str | None:
    """`RECONF_DB_URI`: a PostgreSQL server (no database part) that holds both metadata stores.

    Unset or empty: SQLite files under RECONF_HOME. Set, e.g. to
    `postgresql+psycopg2://reconf:secret@127.0.0.1:5432`: Airflow uses database `airflow` and
    MLflow database `mlflow` on that server (create both first; docs/operations.md, "Services").
    """
    raw = os.environ.get("RECONF_DB_URI", "").strip().rstrip("/")
    if not raw:
        return None
    scheme, sep, rest = raw.partition("://")
    if not sep or scheme.split("+", 1)[0] != "postgresql" or not rest or "/" in rest:
        raise ConfigError(
            f"RECONF_DB_URI={raw!r}: expected a PostgreSQL server URI without a database, e.g. "
            "postgresql+psycopg2://user:password@127.0.0.1:5432 (the databases 'airflow' and "
            "'mlflow' are appended); unset it to use SQLite"
        )
    return raw


@dataclass(frozen=True)
class Paths:
    """The project's stores (DESIGN.md, "Contracts"); `RECONF_HOME` moves them all at once."""

    home: Path

    @classmethod
    def from_env(cls) -> Paths:
        return cls(Path(os.environ.get("RECONF_HOME", PROJECT_ROOT / ".reconf")).resolve())

    @property
    def lake(self) -> Path:
        return self.home / "lake"

    @property
    def landing(self) -> Path:
        return self.home / "landing"

    @property
    def published(self) -> Path:
        return self.home / "published"

    @property
    def mlflow(self) -> Path:
        return self.home / "mlflow"

    @property
    def airflow(self) -> Path:
        return self.home / "airflow"

    @property
    def runtime(self) -> Path:
        return self.home / "runtime"

    @property
    def reports(self) -> Path:
        return self.home / "reports"

    @property
    def jars(self) -> Path:
        """The Delta jars are an install artefact, shared by every RECONF_HOME (`RECONF_JARS`)."""
        return Path(os.environ.get("RECONF_JARS", PROJECT_ROOT / ".reconf" / "jars")).resolve()

    @property
    def mlflow_uri(self) -> str:
        """MLflow's backend store: SQLite under `mlflow/`, or database `mlflow` on RECONF_DB_URI."""
        server = db_server_uri()
        return f"{server}/mlflow" if server else f"sqlite:///{self.mlflow / 'mlflow.db'}"

    @property
    def airflow_db_uri(self) -> str:
        """Airflow's metadata DB: SQLite under `airflow/`, or database `airflow` on RECONF_DB_URI."""
        server = db_server_uri()
        return f"{server}/airflow" if server else f"sqlite:///{self.airflow / 'airflow.db'}"

    def table(self, name: str) -> str:
        return str(self.lake / name)


@dataclass(frozen=True)
class ScalingConfig:
    """`[jobs.<id>.scaling]`: the scaling policy of Algorithm 1 (placement/scaling/policy.py).

    Scaling runs only for a job that has this table. `target_utilisation` is a fraction of a
    node's capacity in (0, 1]; `max_ld` is in percentage points of a reference node.
    """

    min_nodes: int = 1
    max_nodes: int | None = None
    target_utilisation: float = 0.8
    cooldown_cycles: int = 3
    max_ld: float = 10.0


@dataclass(frozen=True)
class JobConfig:
    """One job's reconfiguration settings; SPL is the statistics period length (paper §3)."""

    job_id: str
    spl: timedelta = timedelta(minutes=5)
    strategy: str = "milp"
    max_migrations: int | None = 8
    max_migration_cost: float | None = None
    solver_time_limit_s: float = 10.0
    alpha: float = 1e-6
    start_date: datetime = datetime(2026, 1, 1, tzinfo=UTC)
    source: Mapping[str, Any] = field(default_factory=dict)
    scaling: ScalingConfig | None = None
    # Per strategy name, keyword parameters of that strategy (e.g. albic: max_pl, s_f); only the
    # table of the strategy that runs is used, so a manual `--strategy` override stays valid.
    strategy_params: Mapping[str, Mapping[str, Scalar]] = field(default_factory=dict)
    # A wide-area job's topology file (placement/sprawl/topology.py: sites, links, pinned units,
    # queries), absolute or relative to the project; the plan stage loads and validates it.
    topology: str | None = None
    # "fixed": every key group present every period (the strict check); "dynamic": units (a
    # query platform's queries) arrive and leave between periods (DESIGN.md, "Units may come
    # and go"; docs/operations.md).
    units: str = "fixed"
    # What-if (jobs/whatif/stage.py): the strategies that shadow-plan each published period's state
    # after publish. None = every registered strategy whose facets the state provides, decided
    # at plan time; () = no shadows. Their params come from `strategy_params` (else defaults).
    shadow_strategies: tuple[str, ...] | None = None
    # Wall time all shadow plans of one period may take together; 0 turns shadows off.
    shadow_time_budget_s: float = 60.0
    # declared input streams, rate lower bounds and K: the load-model facet (schemas/streams.py)
    load_model: LoadModelConfig | None = None
    # The DAG's catch-up policy (reconf/timetable.py): when several periods are due at once, only
    # the newest this many run; 0 = only periods that end from now on.
    catchup_periods: int = 1
    # How long after its period end a run waits for the landing's _SUCCESS (None: one SPL).
    landing_timeout: timedelta | None = None

    @property
    def dynamic(self) -> bool:
        return self.units == "dynamic"

    @property
    def landing_wait(self) -> timedelta:
        """How long a run waits for its period to land, from the period end."""
        return self.landing_timeout if self.landing_timeout is not None else self.spl


#: the values of a job's `units` field
UNIT_SETS = ("fixed", "dynamic")


def parse_duration(value: object, where: str) -> timedelta:
    """'5m', '300s', '1h', '1d' or a number of seconds; must be positive."""
    if isinstance(value, bool):
        raise ConfigError(f"{where}: must be a duration like '5m' or '300s', got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = timedelta(**{_UNITS[m.group(2)]: int(m.group(1))}).total_seconds()
    else:
        raise ConfigError(f"{where}: must be a duration like '5m' or '300s', got {value!r}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(f"{where}: must be a positive duration, got {value!r}")
    return timedelta(seconds=seconds)


#: The largest migration budget a job may give (larger is the same as "every key group").
MAX_MIGRATIONS = 2**31 - 1


def check_max_migrations(value: float, where: str) -> int:
    """A migration budget: a whole number in [0, MAX_MIGRATIONS] (ConfigError otherwise)."""
    if value != int(value) or not 0 <= value <= MAX_MIGRATIONS:
        raise ConfigError(f"{where}: must be a whole number from 0 to {MAX_MIGRATIONS} "
                          f"(a budget above the job's key-group count moves any), got {value!r}")
    return int(value)


def _number(value: object, where: str, *, integer: bool = False) -> float:
    ok = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not ok:
        kind = "a whole number" if integer else "a number"
        raise ConfigError(f"{where}: must be {kind}, got {value!r}")
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number) or number < 0:
        raise ConfigError(f"{where}: must be >= 0, got {value!r}")
    return number


def _scaling(raw: object, where: str) -> ScalingConfig:
    """Validate `[jobs.<id>.scaling]` (raises ConfigError naming the field and the rule)."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: must be a table, got {raw!r}")
    unknown = sorted(set(raw) - _SCALING_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}; known: "
                          f"{', '.join(sorted(_SCALING_KEYS))}")
    kw: dict[str, Any] = {}
    for name in ("min_nodes", "max_nodes"):
        if name in raw:
            kw[name] = int(_number(raw[name], f"{where}.{name}", integer=True))
    if "cooldown_cycles" in raw:
        value = raw["cooldown_cycles"]
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            raise ConfigError(f"{where}.cooldown_cycles: must be >= 0 cycles, got {value!r}")
        kw["cooldown_cycles"] = int(_number(value, f"{where}.cooldown_cycles", integer=True))
    if "target_utilisation" in raw:
        value = raw["target_utilisation"]
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        if number is None or not (0 < number <= 1):
            raise ConfigError(f"{where}.target_utilisation: must be a fraction of capacity in "
                              f"(0, 1] (0.8 = 80 %), got {value!r}")
        kw["target_utilisation"] = float(number)
    if "max_ld" in raw:
        kw["max_ld"] = _number(raw["max_ld"], f"{where}.max_ld")
    config = ScalingConfig(**kw)
    if config.max_nodes is not None and config.max_nodes < max(1, config.min_nodes):
        raise ConfigError(f"{where}: min_nodes ({config.min_nodes}) must be <= max_nodes "
                          f"({config.max_nodes}), and max_nodes >= 1")
    return config


def _strategy_params(raw: object, where: str) -> dict[str, dict[str, Scalar]]:
    """Validate `[jobs.<id>.strategy_params.<strategy>]` tables against each strategy's params
    class: an unknown strategy or parameter, a wrong type or an out-of-range value is a
    ConfigError naming the field and the rule. The params classes are light (pydantic only,
    imported here on first use), so the DAG file may parse this config.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: must be a table of per-strategy tables, e.g. "
                          f"[{where.split(': ')[-1]}.albic] with max_pl = 20; got {raw!r}")
    out: dict[str, dict[str, Scalar]] = {}
    for strategy, params in raw.items():
        if not isinstance(params, Mapping):
            raise ConfigError(f"{where}.{strategy}: must be a table of parameters "
                              f"(e.g. {{ s_f = 1.5 }}), got {params!r}")
        for name, value in params.items():
            if not isinstance(value, int | float | str | bool):
                raise ConfigError(f"{where}.{strategy}.{name}: must be a number, string or "
                                  f"boolean, got {value!r}")
        _check_strategy_params(str(strategy), params, f"{where}.{strategy}")
        out[str(strategy)] = dict(params)
    return out


def _check_strategy_params(strategy: str, params: Mapping[str, Any], where: str) -> None:
    import importlib

    from placement.params import problems

    if strategy not in STRATEGIES:
        raise ConfigError(f"{where}: unknown strategy {strategy!r}; known: "
                          f"{', '.join(sorted(STRATEGIES))}")
    for name in params:
        if name in PIPELINE_PARAMS:
            raise ConfigError(f"{where}.{name}: set by the job's {PIPELINE_PARAMS[name]!r}, "
                              f"not as a strategy parameter")
    module, _, attr = STRATEGIES[strategy].params.partition(":")
    found = problems(getattr(importlib.import_module(module), attr), params)
    if found:
        raise ConfigError("; ".join(f"{where}.{field}: {rule}" for field, rule in found))


def _job(job_id: str, raw: Mapping[str, Any], origin: str) -> JobConfig:
    where = f"{origin}: jobs.{job_id}"
    if not _JOB_ID.match(job_id):
        raise ConfigError(
            f"{where}: job id must be lower-case letters, digits, '-' or '_' (at most 63)"
        )
    unknown = sorted(set(raw) - _STRATEGY_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(_STRATEGY_KEYS))}"
        )
    kwargs: dict[str, Any] = {"job_id": job_id}
    if "spl" in raw:
        kwargs["spl"] = parse_duration(raw["spl"], f"{where}.spl")
    if "strategy" in raw:
        if not isinstance(raw["strategy"], str) or not raw["strategy"]:
            raise ConfigError(f"{where}.strategy: must be a strategy name, got {raw['strategy']!r}")
        if raw["strategy"] not in STRATEGY_NAMES:
            raise ConfigError(f"{where}.strategy: unknown strategy {raw['strategy']!r}; known: "
                              f"{', '.join(sorted(STRATEGY_NAMES))}")
        kwargs["strategy"] = raw["strategy"]
    if "max_migrations" in raw:
        kwargs["max_migrations"] = check_max_migrations(
            _number(raw["max_migrations"], f"{where}.max_migrations", integer=True),
            f"{where}.max_migrations"
        )
    if "max_migration_cost" in raw:
        kwargs["max_migration_cost"] = _number(
            raw["max_migration_cost"], f"{where}.max_migration_cost"
        )
    if "solver_time_limit_s" in raw:
        limit = _number(raw["solver_time_limit_s"], f"{where}.solver_time_limit_s")
        if limit <= 0:
            raise ConfigError(f"{where}.solver_time_limit_s: must be > 0, got {limit!r}")
        kwargs["solver_time_limit_s"] = limit
    if "alpha" in raw:
        kwargs["alpha"] = _number(raw["alpha"], f"{where}.alpha")
    if "start_date" in raw:
        start = raw["start_date"]
        if not isinstance(start, datetime):
            raise ConfigError(f"{where}.start_date: must be a TOML date-time, got {start!r}")
        kwargs["start_date"] = start if start.tzinfo else start.replace(tzinfo=UTC)
    if "source" in raw:
        if not isinstance(raw["source"], Mapping):
            raise ConfigError(f"{where}.source: must be a table, got {raw['source']!r}")
        kwargs["source"] = dict(raw["source"])
    if "scaling" in raw:
        kwargs["scaling"] = _scaling(raw["scaling"], f"{where}.scaling")
    if "units" in raw:
        if raw["units"] not in UNIT_SETS:
            raise ConfigError(f"{where}.units: must be \"fixed\" (every key group present "
                              f"every period) or \"dynamic\" (units arrive and leave between "
                              f"periods), got {raw['units']!r}")
        kwargs["units"] = raw["units"]
    if "load_model" in raw:
        try:
            kwargs["load_model"] = parse_load_model(raw["load_model"])
        except ValueError as exc:
            raise ConfigError(f"{where}.load_model: {exc}") from exc
    if "strategy_params" in raw:
        kwargs["strategy_params"] = _strategy_params(raw["strategy_params"],
                                                     f"{where}.strategy_params")
    if "topology" in raw:
        kwargs["topology"] = _topology(raw["topology"], f"{where}.topology")
    if "shadow_strategies" in raw:
        kwargs["shadow_strategies"] = _shadow_strategies(raw["shadow_strategies"],
                                                         f"{where}.shadow_strategies")
    if "shadow_time_budget_s" in raw:
        budget = _number(raw["shadow_time_budget_s"], f"{where}.shadow_time_budget_s")
        spl = kwargs.get("spl", JobConfig.spl)
        if budget > spl.total_seconds() / 2:
            raise ConfigError(f"{where}.shadow_time_budget_s: {budget:g} s is more than half the "
                              f"period ({spl}); shadow plans run after publish and must leave "
                              "the next cycle room: lower it (0 turns shadows off)")
        kwargs["shadow_time_budget_s"] = budget
    kwargs.update(_schedule(raw, where, kwargs.get("spl", JobConfig.spl)))
    return JobConfig(**kwargs)


#: The most catch-up periods a job may ask for, and the longest landing wait, in SPLs.
MAX_CATCHUP_PERIODS, MAX_LANDING_WAIT_SPL = 1000, 10


def _schedule(raw: Mapping[str, Any], where: str, spl: timedelta) -> dict[str, Any]:
    """`catchup_periods` and `landing_timeout` (docs/operations.md, "Airflow DAGs")."""
    out: dict[str, Any] = {}
    if "catchup_periods" in raw:
        value = raw["catchup_periods"]
        if (isinstance(value, bool) or not isinstance(value, int)
                or not 0 <= value <= MAX_CATCHUP_PERIODS):
            raise ConfigError(
                f"{where}.catchup_periods: must be a whole number of periods from 0 to "
                f"{MAX_CATCHUP_PERIODS} (how many missed periods run when several are due at once; "
                f"0 = none, only periods that end from now on), got {value!r}")
        out["catchup_periods"] = value
    if "landing_timeout" in raw:
        wait = parse_duration(raw["landing_timeout"], f"{where}.landing_timeout")
        if wait > MAX_LANDING_WAIT_SPL * spl:
            raise ConfigError(
                f"{where}.landing_timeout: {raw['landing_timeout']!r} is more than "
                f"{MAX_LANDING_WAIT_SPL} periods ({MAX_LANDING_WAIT_SPL * spl}); runs go one at a "
                "time, so later periods would queue behind the wait: use at most that (default: "
                "one SPL)")
        out["landing_timeout"] = wait
    return out


def _topology(raw: object, where: str) -> str:
    """A topology file that exists (its contents are checked when the plan stage loads it)."""
    if not isinstance(raw, str) or not raw:
        raise ConfigError(f"{where}: must be the path of a topology file, got {raw!r}")
    path = Path(raw) if Path(raw).is_absolute() else PROJECT_ROOT / raw
    if not path.is_file():
        raise ConfigError(f"{where}: no topology file at {path}; give a .toml or .json file "
                          "(docs/algorithms.md, SPRAWL)")
    return str(path)


def _shadow_strategies(raw: object, where: str) -> tuple[str, ...] | None:
    """A list of strategy names ([] = no shadows), or "auto" (every strategy the state suits)."""
    if raw == "auto":
        return None
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise ConfigError(f"{where}: must be a list of strategy names (e.g. [\"albic\", "
                          f"\"greedy\"]), [] for none, or \"auto\"; got {raw!r}")
    unknown = sorted(set(raw) - STRATEGY_NAMES)
    if unknown:
        raise ConfigError(f"{where}: unknown strategy {', '.join(map(repr, unknown))}; known: "
                          f"{', '.join(sorted(STRATEGY_NAMES))}")
    return tuple(dict.fromkeys(raw))


@dataclass(frozen=True)
class JobsFile:
    """A config file read job by job: the valid jobs, and one error per invalid job (file order).

    One bad job never hides the others: the DAG file generates the valid jobs' DAGs and the stages
    of a valid job run, while the bad job's error names the file and the field.
    """

    path: Path
    jobs: Mapping[str, JobConfig]
    errors: Mapping[str, ConfigError]


def _id_key(job_id: str) -> str:
    """Ids equal under this key are duplicates: 'flights-2' and 'flights_2' read as one job."""
    return job_id.lower().replace("-", "_")


def read_jobs(path: Path | None = None) -> JobsFile:
    """Read the config file (`RECONF_CONFIG`, else config/jobs.toml), each job on its own.

    `[defaults]` applies to every `[jobs.<id>]` table, which may override any field. A file that
    is missing, not TOML, or has no jobs raises ConfigError; a bad job goes to `errors`, and so
    does a later job whose id duplicates an earlier one once '-' and '_' are treated alike (TOML
    itself rejects two equal keys: that makes the whole file invalid).
    """
    path = Path(path) if path else Path(os.environ.get("RECONF_CONFIG") or _DEFAULT_CONFIG)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found; set RECONF_CONFIG or create it")
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    unknown = sorted(set(doc) - {"defaults", "jobs"})
    if unknown:
        raise ConfigError(f"{path}: unknown top-level table(s) {', '.join(unknown)}")
    defaults = doc.get("defaults", {})
    jobs = doc.get("jobs", {})
    if not isinstance(jobs, dict) or not jobs:
        raise ConfigError(f"{path}: no [jobs.<id>] table; define at least one job")
    good: dict[str, JobConfig] = {}
    errors: dict[str, ConfigError] = {}
    first: dict[str, str] = {}
    for job_id, raw in jobs.items():
        if (earlier := first.setdefault(_id_key(job_id), job_id)) != job_id:
            errors[job_id] = ConfigError(
                f"{path}: jobs.{job_id}: duplicate job id: it names the same job as jobs.{earlier} "
                f"('-' and '_' count as the same); rename or remove one of them")
            continue
        try:
            if not isinstance(raw, dict):
                raise ConfigError(f"{path}: jobs.{job_id}: must be a table [jobs.{job_id}]")
            good[job_id] = _job(job_id, {**defaults, **raw, "source": {
                **defaults.get("source", {}), **raw.get("source", {})},
                **_merged_strategy_params(defaults, raw)}, str(path))
        except ConfigError as exc:
            errors[job_id] = exc
    return JobsFile(path, good, errors)


def load_jobs(path: Path | None = None) -> dict[str, JobConfig]:
    """Every job of the config file; ConfigError (the first bad job's) if any job is invalid."""
    loaded = read_jobs(path)
    if loaded.errors:
        raise next(iter(loaded.errors.values()))
    return dict(loaded.jobs)


def _merged_strategy_params(defaults: Mapping[str, Any], raw: Mapping[str, Any]) -> dict[str, Any]:
    """`strategy_params` of the defaults and the job, merged per strategy (the job wins)."""
    base, own = defaults.get("strategy_params"), raw.get("strategy_params")
    if own is None and base is None:
        return {}
    if not isinstance(base, Mapping) or not isinstance(own, Mapping):
        return {"strategy_params": own if own is not None else base}  # validated by _job
    merged = {k: v for k, v in base.items()}
    for strategy, params in own.items():
        prior = merged.get(strategy)
        merged[strategy] = ({**prior, **params} if isinstance(prior, Mapping)
                            and isinstance(params, Mapping) else params)
    return {"strategy_params": merged}


def resolve_job(job_id: str, path: Path | None = None) -> JobConfig:
    """The config of one job (other jobs' errors do not matter), or a ConfigError that says why
    it is invalid or lists the jobs that exist."""
    loaded = read_jobs(path)
    if job_id in loaded.errors:
        raise loaded.errors[job_id]
    jobs = loaded.jobs
    if job_id not in jobs:
        raise ConfigError(
            f"unknown job id {job_id!r}; configured jobs: {', '.join(sorted(jobs))} "
            f"(add [jobs.{job_id}] to the config file)"
        )
    return jobs[job_id]
