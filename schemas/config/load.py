"""Reading the config file (`RECONF_CONFIG`, else config/jobs.toml): job by job, so one bad job
never hides the others, and each error names the file, the job, the field and the rule."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from schemas.config.job import JobConfig
from schemas.config.paths import PROJECT_ROOT
from schemas.config.rules import Rule
from schemas.errors import ConfigError

__all__ = ["JobsFile", "load_jobs", "read_jobs", "resolve_job", "valid_jobs"]

_DEFAULT_CONFIG = PROJECT_ROOT / "config" / "jobs.toml"


@dataclass(frozen=True)
class JobsFile:
    """A config file read job by job: the valid jobs, and one error per invalid job (file order).

    One bad job never hides the others: the DAG file generates the valid jobs' DAGs and the stages
    of a valid job run, while the bad job's error names the file and the field.
    """

    path: Path
    jobs: Mapping[str, JobConfig]
    errors: Mapping[str, ConfigError]


@cache
def _adapter() -> TypeAdapter[JobConfig]:
    return TypeAdapter(JobConfig)


def _located(where: str, exc: ValidationError) -> ConfigError:
    """One ConfigError listing every broken rule as `<where>.<field path>: <rule>`."""
    lines: list[str] = []
    for err in exc.errors(include_url=False):
        loc = [str(part) for part in err["loc"]]
        found = err.get("ctx", {}).get("error")
        pairs = found.found if isinstance(found, Rule) else [((), err["msg"])]
        for at, rule in pairs:
            path = ".".join([*loc, *at])
            lines.append(f"{where}.{path}: {rule}" if path else f"{where}: {rule}")
    return ConfigError("; ".join(lines))


def _job(job_id: str, raw: Mapping[str, Any], origin: str) -> JobConfig:
    where = f"{origin}: jobs.{job_id}"
    try:
        return _adapter().validate_python({**raw, "job_id": job_id},
                                          context={"file": origin, "table": tuple(raw)})
    except ValidationError as exc:
        raise _located(where, exc) from None


def _id_key(job_id: str) -> str:
    """Ids equal under this key are duplicates: 'flights-2' and 'flights_2' read as one job."""
    return job_id.lower().replace("-", "_")


def valid_jobs() -> dict[str, JobConfig]:
    """The config file's valid jobs, for the DAG files that build one DAG per job; a file that
    cannot be read at all gives none (dags/reconfigure_config_check.py reports why, and each bad
    job)."""
    try:
        return dict(read_jobs().jobs)
    except ConfigError:
        return {}


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
    if not isinstance(defaults, dict):
        raise ConfigError(f"{path}: defaults: must be a table [defaults] of job fields, "
                          f"got {defaults!r}")
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
            good[job_id] = _job(job_id, {**defaults, **raw, **_merged(defaults, raw, "source"),
                                         **_merged_strategy_params(defaults, raw)}, str(path))
        except ConfigError as exc:
            errors[job_id] = exc
        except Exception as exc:
            errors[job_id] = ConfigError(
                f"{path}: jobs.{job_id}: a value could not be read ({type(exc).__name__}: "
                f"{str(exc)[:200]}); fix the job's values (docs/operations.md, \"Limits of "
                "the job config\")")
    return JobsFile(path, good, errors)


def load_jobs(path: Path | None = None) -> dict[str, JobConfig]:
    """Every job of the config file; ConfigError (the first bad job's) if any job is invalid."""
    loaded = read_jobs(path)
    if loaded.errors:
        raise next(iter(loaded.errors.values()))
    return dict(loaded.jobs)


def _merged(defaults: Mapping[str, Any], raw: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Table `name` of the defaults and the job, merged (the job's keys win); a value that is no
    table is passed on as given, for its field's rule to refuse."""
    base, own = defaults.get(name, {}), raw.get(name, {})
    if isinstance(base, Mapping) and isinstance(own, Mapping):
        return {name: {**base, **own}}
    return {name: own if name in raw else base}


def _merged_strategy_params(defaults: Mapping[str, Any], raw: Mapping[str, Any]) -> dict[str, Any]:
    """`strategy_params` of the defaults and the job, merged per strategy (the job wins)."""
    base, own = defaults.get("strategy_params"), raw.get("strategy_params")
    if own is None and base is None:
        return {}
    if not isinstance(base, Mapping) or not isinstance(own, Mapping):
        return {"strategy_params": own if own is not None else base}  # validated by JobConfig
    merged = dict(base.items())
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
